"""Elementwise ops, activations and masks importers lack or compute otherwise: Clip's bounds, shifts, unsigned
and integer division and fmod, CastLike, Gelu, Trilu; and Einsum as a MatMul."""

from __future__ import annotations

from functools import partial

import numpy as np

from rosetta.convert.onnx.rewrites.graph import FLOAT_TYPES, add_initializer, remove_dead_nodes, replace_nodes
from rosetta.convert.onnx.rewrites.registry import rewrite
from rosetta.frameworks.onnx_graph import (constant_values, default_opset, element_types, node_attributes,
                                           shape_of, static_shapes, text)


@rewrite
def trilu_as_where(model):
    """MXNet (no Trilu), onnx2torch (none), onnx2tf (wrong for a k below the last row): Trilu of a tensor whose
    last two axes have static sizes, with a constant k, as Where(mask, x, 0): the constant mask of the kept
    triangle (j - i >= k for upper, <= k for lower), so every kept element is x's own and the rest are 0."""
    from onnx import helper, numpy_helper

    shapes, constants, types = static_shapes(model), constant_values(model), element_types(model)

    def replace(node):
        shape = shapes.get(node.input[0]) if node.op_type == "Trilu" else None
        k_name = node.input[1] if len(node.input) > 1 else ""
        if shape is None or len(shape) < 2 or None in shape[-2:] or (k_name and k_name not in constants) \
                or node.input[0] not in types:
            return None
        k = int(np.ravel(constants[k_name])[0]) if k_name else 0
        rows, columns = np.meshgrid(np.arange(shape[-2]), np.arange(shape[-1]), indexing="ij")
        upper = node_attributes(node).get("upper", 1)
        mask = (columns - rows >= k) if upper else (columns - rows <= k)
        name = node.output[0]
        zero = np.zeros((), helper.tensor_dtype_to_np_dtype(types[node.input[0]]))
        model.graph.initializer.extend([numpy_helper.from_array(mask, f"{name}_mask"),
                                        numpy_helper.from_array(zero, f"{name}_zero")])
        return [helper.make_node("Where", [f"{name}_mask", node.input[0], f"{name}_zero"], [name])]

    replace_nodes(model, replace)
    return remove_dead_nodes(model)


@rewrite
def clip_bounds_as_max_min(model):
    """onnx2tf and onnx2torch ("Dynamic value of min/max is not implemented": timm's EdgeNeXt): Clip (opset 11+)
    whose bounds are computed at run time, one of them omitted (onnx2torch refused an omitted min before a constant
    max: timm's SwinV2-CR), or constants with min > max, as
    Min(Max(x, min), max), which is ONNX's definition (max wherever min > max). onnx2tf reads
    such bounds by guesses (a bound of unknown shape taken as none: test_clip's FAIL by 1.55) and clips to min
    where min > max. Clips with constant bounds in order (ReLU6) are left to onnx2tf, which recognises them."""
    from onnx import helper

    constants = constant_values(model)

    def replace(node):
        bounds = list(node.input[1:3])
        if node.op_type != "Clip" or len(node.input) < 2:
            return None
        given = [name for name in bounds if name]
        if not given:  # both omitted: no bound
            return [helper.make_node("Identity", [node.input[0]], [node.output[0]], name=node.name)]
        if all(name in constants for name in given) and len(given) == 2 and np.all(
                constants[bounds[0]] <= constants[bounds[1]]):
            return None
        nodes, current = [], node.input[0]
        for index, (name, op_type) in enumerate(zip(bounds, ("Max", "Min"))):
            if not name:
                continue
            last = index == len(bounds) - 1 or not bounds[index + 1]
            output = node.output[0] if last else f"{node.output[0]}_{op_type.lower()}"
            nodes.append(helper.make_node(op_type, [current, name], [output], name=f"{node.name or output}_{op_type}"))
            current = output
        return nodes

    replace_nodes(model, replace)
    return model


@rewrite
def shifts_out_of_range_as_where(model):
    """onnx2tf (TensorFlow's shifts, like C's, mask or wrap a shift amount): BitShift with ONNX's result where the
    amount is negative or at least the width, 0, or for a right shift of a negative signed value -1, and the
    shift itself by an amount brought in range elsewhere: Where(out of range, fill, BitShift(x, amount or 0))."""
    from onnx import helper

    types = element_types(model)

    def replace(node):
        if node.op_type != "BitShift" or node.input[0] not in types or node.input[1] not in types:
            return None
        x, amount, name = node.input[0], node.input[1], node.output[0]
        x_dtype = helper.tensor_dtype_to_np_dtype(types[x])
        amount_dtype = helper.tensor_dtype_to_np_dtype(types[amount])
        for suffix, value, dtype in (("zero", 0, amount_dtype), ("width", 8 * x_dtype.itemsize, amount_dtype),
                                     ("x_zero", 0, x_dtype), ("x_minus_one", -1 if x_dtype.kind == "i" else 0, x_dtype)):
            add_initializer(model, f"{name}_{suffix}", value, dtype)
        right_signed = text(node_attributes(node).get("direction", "")) == "RIGHT" and x_dtype.kind == "i"
        fill = [helper.make_node("Less", [x, f"{name}_x_zero"], [f"{name}_negative"]),
                helper.make_node("Where", [f"{name}_negative", f"{name}_x_minus_one", f"{name}_x_zero"],
                                 [f"{name}_fill"])] if right_signed else \
            [helper.make_node("Identity", [f"{name}_x_zero"], [f"{name}_fill"])]
        shift = helper.make_node("BitShift", [x, f"{name}_amount"], [f"{name}_shifted"], name=node.name)
        shift.attribute.extend(node.attribute)
        return [helper.make_node("Less", [amount, f"{name}_zero"], [f"{name}_below"]),
                helper.make_node("Less", [amount, f"{name}_width"], [f"{name}_within"]),
                helper.make_node("Not", [f"{name}_within"], [f"{name}_above"]),
                helper.make_node("Or", [f"{name}_below", f"{name}_above"], [f"{name}_out"]),
                helper.make_node("Where", [f"{name}_out", f"{name}_zero", amount], [f"{name}_amount"]),
                shift, *fill,
                helper.make_node("Where", [f"{name}_out", f"{name}_fill", f"{name}_shifted"], [name])]

    replace_nodes(model, replace)
    return model


@rewrite
def unsigned_divisions_as_int64(model):
    """onnx2tf (which divides unsigned integers as floats and returns the quotient as floats: test_div_uint8
    FAILed by 0.93): Div of uint8, uint16 or uint32 computed in int64, which holds every such value, and cast
    back; the quotient of non-negative integers truncates either way."""
    from onnx import TensorProto, helper

    types = element_types(model)

    def replace(node):
        kind = types.get(node.input[0]) if node.op_type == "Div" else None
        if kind not in (TensorProto.UINT8, TensorProto.UINT16, TensorProto.UINT32):
            return None
        name = node.output[0]
        return [helper.make_node("Cast", [node.input[0]], [f"{name}_a64"], to=TensorProto.INT64),
                helper.make_node("Cast", [node.input[1]], [f"{name}_b64"], to=TensorProto.INT64),
                helper.make_node("Div", [f"{name}_a64", f"{name}_b64"], [f"{name}_q64"], name=node.name),
                helper.make_node("Cast", [f"{name}_q64"], [name], to=kind)]

    replace_nodes(model, replace)
    return model


@rewrite
def integer_fmod_as_magnitudes(model):
    """onnx2tf (which computes every Mod as Python's remainder, with the divisor's sign, and ignores fmod): an
    integer Mod with fmod=1 (C's, with the dividend's sign) as Sign(a) x Mod(|a|, |b|), its fmod=0 remainder of
    the magnitudes, equal to fmod's there. Floats with fmod=1 are refused (onnx2tf_refusals)."""
    from onnx import helper

    types = element_types(model)

    def replace(node):
        if node.op_type != "Mod" or not node_attributes(node).get("fmod", 0) or types.get(node.input[0]) in FLOAT_TYPES \
                or node.input[0] not in types:
            return None
        a, b, name = node.input[0], node.input[1], node.output[0]
        return [helper.make_node("Abs", [a], [f"{name}_abs_a"]), helper.make_node("Abs", [b], [f"{name}_abs_b"]),
                helper.make_node("Mod", [f"{name}_abs_a", f"{name}_abs_b"], [f"{name}_magnitude"], fmod=0),
                helper.make_node("Sign", [a], [f"{name}_sign"]),
                helper.make_node("Mul", [f"{name}_sign", f"{name}_magnitude"], [name])]

    replace_nodes(model, replace)
    return model


@rewrite
def cast_like_as_cast(model):
    """MXNet and onnx2torch (no CastLike): CastLike as the Cast to its second input's element type, where shape
    inference knows it."""
    from onnx import helper

    types = element_types(model)

    def replace(node):
        if node.op_type != "CastLike" or node.input[1] not in types:
            return None
        saturate = node_attributes(node).get("saturate")
        extra = {"saturate": saturate} if saturate is not None and default_opset(model) >= 19 else {}
        return [helper.make_node("Cast", [node.input[0]], list(node.output), to=types[node.input[1]], **extra)]

    replace_nodes(model, replace)
    return model


@rewrite
def gelu_as_primitives(model):
    """MXNet and onnx2torch (no Gelu): Gelu (opset 20) as the function ONNX defines it by: exact,
    x * 0.5 * (1 + erf(x / sqrt(2))), or approximate='tanh', x * 0.5 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715
    x^3)))."""
    from onnx import helper

    types = element_types(model)

    def replace(node):
        dtype = FLOAT_TYPES.get(types.get(node.input[0] if node.input else ""))
        if node.op_type != "Gelu" or dtype is None:
            return None
        name, x = node.output[0], node.input[0]
        constants = {"half": 0.5, "one": 1.0, "scale": 1 / np.sqrt(2), "cube": 0.044715, "tanh_scale": np.sqrt(2 / np.pi)}
        for k, v in constants.items():
            add_initializer(model, f"{name}_{k}", v, dtype)
        nodes = [helper.make_node("Mul", [x, f"{name}_half"], [f"{name}_halved"])]
        if text(node_attributes(node).get("approximate", "none")) == "tanh":
            nodes += [helper.make_node("Mul", [x, x], [f"{name}_square"]),
                      helper.make_node("Mul", [f"{name}_square", x], [f"{name}_cubed"]),
                      helper.make_node("Mul", [f"{name}_cubed", f"{name}_cube"], [f"{name}_cubic"]),
                      helper.make_node("Add", [x, f"{name}_cubic"], [f"{name}_inner"]),
                      helper.make_node("Mul", [f"{name}_inner", f"{name}_tanh_scale"], [f"{name}_scaled"]),
                      helper.make_node("Tanh", [f"{name}_scaled"], [f"{name}_curve"])]
        else:
            nodes += [helper.make_node("Mul", [x, f"{name}_scale"], [f"{name}_scaled"]),
                      helper.make_node("Erf", [f"{name}_scaled"], [f"{name}_curve"])]
        nodes += [helper.make_node("Add", [f"{name}_curve", f"{name}_one"], [f"{name}_gate"]),
                  helper.make_node("Mul", [f"{name}_halved", f"{name}_gate"], [name])]
        return nodes

    replace_nodes(model, replace)
    return remove_dead_nodes(model)


@rewrite
def einsum_as_matmul(model):
    """MXNet (no Einsum): a two-operand Einsum that is a batched matrix product (attention's "bhid,bhjd->bhij"
    and "bhij,bhjd->bhid", CvT's and MaxViT's) as Transposes, a MatMul and Unsqueeze/Squeeze: the letters of
    both operands and the output are the batch, at most one is summed over, and at most one comes from each
    operand alone, or several whose sizes shape inference knows but for one (SAM's relative positions,
    "bhwc,hkc->bhwk": b and w merged by a Reshape and split again after). Others (an ellipsis, a repeated
    letter, a letter summed within one operand, free letters of unknown sizes) are left as they are."""
    from onnx import helper

    opset = default_opset(model)

    def axes_node(op, tensor, output, axes):
        if opset < 13:
            return helper.make_node(op, [tensor], [output], axes=axes)
        add_initializer(model, f"{output}_axes", axes)
        return helper.make_node(op, [tensor, f"{output}_axes"], [output])

    def arranged(tensor, letters, wanted, name, nodes):
        perm = [letters.index(c) for c in wanted]
        if perm == list(range(len(letters))):
            return tensor
        nodes.append(helper.make_node("Transpose", [tensor], [name], perm=perm))
        return name

    shapes, constants = None, None

    def sizes_of(tensor, letters) -> dict | None:
        nonlocal shapes, constants
        if shapes is None:
            shapes, constants = static_shapes(model, data_prop=True), constant_values(model)
        shape = shape_of(tensor, shapes, constants)
        return dict(zip(letters, shape)) if shape is not None and len(shape) == len(letters) else None

    def merged(tensor, letters, size, free, k, name, nodes):
        """`tensor` (batch + free + the summed letter, or batch + summed + free) with its free letters as one
        axis: a Reshape keeping the batch axes (0) and the summed one's size; None where two sizes are unknown."""
        known = [size.get(c) for c in free]
        if len(free) < 2:
            return tensor
        summed = [c for c in letters[k:] if c not in free]
        if summed and size.get(summed[0]) is None or known.count(None) > 1:
            return None
        flat = -1 if None in known else int(np.prod(known))
        target = [0] * k + ([flat] + [size[c] for c in summed] if letters[k] in free else
                            [size[c] for c in summed] + [flat])
        add_initializer(model, f"{name}_shape", target)
        nodes.append(helper.make_node("Reshape", [tensor, f"{name}_shape"], [name]))
        return name

    def replace(node):
        if node.op_type != "Einsum" or len(node.input) != 2:
            return None
        equation = "".join(text(node_attributes(node)["equation"]).split())
        if "." in equation or "->" not in equation:
            return None
        given, out = equation.split("->")
        a, b = given.split(",")
        if any(len(set(s)) != len(s) for s in (a, b, out)) or not set(out) <= set(a) | set(b):
            return None
        batch = [c for c in out if c in a and c in b]
        summed = [c for c in a if c in b and c not in out]
        left, right = [c for c in a if c not in b], [c for c in b if c not in a]
        if len(summed) > 1 or not set(left + right) <= set(out):
            return None
        size = {}
        if len(left) > 1 or len(right) > 1:  # several free letters of one operand, merged by their sizes
            size_a, size_b = sizes_of(node.input[0], a) or {}, sizes_of(node.input[1], b) or {}
            size = {c: (size_a.get(c) if isinstance(size_a.get(c), int) else size_b.get(c)) for c in set(a) | set(b)}
            size = {c: v if isinstance(v, int) else None for c, v in size.items()}
            if any(size[c] is None for c in left) and any(size[c] is None for c in right):
                return None  # the product's two unknown sizes could not both be split off again
        name, nodes = node.output[0], []
        k = len(batch)
        x = arranged(node.input[0], a, batch + left + summed, f"{name}_left", nodes)
        y = arranged(node.input[1], b, batch + summed + right, f"{name}_right", nodes)
        x = merged(x, batch + left + summed, size, left, k, f"{name}_left_flat", nodes)
        y = merged(y, batch + summed + right, size, right, k, f"{name}_right_flat", nodes)
        if x is None or y is None:
            return None
        free_left, free_right = left, right
        left, right = left[:1], right[:1]  # each operand's free letters, one axis now
        if not left or not summed:
            nodes.append(axes_node("Unsqueeze", x, f"{name}_left_3d", [k] if not left else [k + 1]))
            x = f"{name}_left_3d"
            if not left and not summed:
                nodes.append(axes_node("Unsqueeze", x, f"{name}_left_3d_again", [k + 1]))
                x = f"{name}_left_3d_again"
        if not summed or not right:
            y_axes = ([k] if not summed else []) + ([k + 1] if not right else [])
            nodes.append(axes_node("Unsqueeze", y, f"{name}_right_3d", y_axes))
            y = f"{name}_right_3d"
        product = f"{name}_product"
        nodes.append(helper.make_node("MatMul", [x, y], [product]))
        dropped = ([k] if not left else []) + ([k + 1] if not right else [])
        if dropped:
            nodes.append(axes_node("Squeeze", product, f"{name}_squeezed", dropped))
            product = f"{name}_squeezed"
        letters = batch + free_left + free_right
        if len(free_left) > 1 or len(free_right) > 1:  # the merged axes split again
            target = [0] * k + [-1 if size[c] is None else size[c] for c in free_left + free_right]
            add_initializer(model, f"{name}_split", target)
            nodes.append(helper.make_node("Reshape", [product, f"{name}_split"], [f"{name}_unflat"]))
            product = f"{name}_unflat"
        perm = [letters.index(c) for c in out]
        nodes.append(helper.make_node("Transpose", [product], [name], perm=perm) if perm != list(range(len(out)))
                     else helper.make_node("Identity", [product], [name]))
        return nodes

    replace_nodes(model, replace)
    return remove_dead_nodes(model)


@rewrite
def matmul_batch_broadcast_as_tile(model):
    """MXNet: its MatMul (linalg_gemm2) takes operands of one rank with the same batch axes; ONNX's broadcasts them
    (multi-query attention: 8 query heads against one shared key head, (N, 8, T, d) @ (N, 1, d, T)). The operand
    of lower rank gets leading axes of size 1, and a batch axis of size 1 against a static size k is tiled k times,
    which is what broadcasting computes. A 2-D constant weight is left as it is (`dot` takes any rank against
    it); a size-1 axis against one of run-time size (the batch) is left too."""
    from onnx import helper

    shapes, constants, opset = static_shapes(model), constant_values(model), default_opset(model)

    ints = partial(add_initializer, model)  # an int64 initializer by name, for a node's inputs

    def replace(node):
        if node.op_type != "MatMul":
            return None
        a, b = (shape_of(name, shapes, constants) for name in node.input[:2])
        if a is None or b is None or min(len(a), len(b)) < 2 or (len(b) == 2 and node.input[1] in constants):
            return None
        rank = max(len(a), len(b))
        full = [[1] * (rank - len(shape)) + list(shape) for shape in (a, b)]
        repeats = [[1] * rank, [1] * rank]
        for axis, (left, right) in enumerate(zip(full[0][:-2], full[1][:-2])):
            if left == right:
                continue
            for side, (size, other) in enumerate(((left, right), (right, left))):
                if size == 1 and isinstance(other, int):
                    repeats[side][axis] = other
            if repeats[0][axis] == repeats[1][axis] == 1:  # a run-time size against 1, or two unknown sizes
                return None
        if len(a) == len(b) and all(r == 1 for r in repeats[0] + repeats[1]):
            return None
        nodes, operands, name = [], [], node.output[0]
        for side, (operand, shape) in enumerate(zip(node.input[:2], (a, b))):
            if len(shape) < rank:
                axes = list(range(rank - len(shape)))
                nodes.append(helper.make_node("Unsqueeze", [operand, ints(f"{name}_axes{side}", axes)],
                                              [f"{name}_ranked{side}"]) if opset >= 13 else
                             helper.make_node("Unsqueeze", [operand], [f"{name}_ranked{side}"], axes=axes))
                operand = f"{name}_ranked{side}"
            if any(r != 1 for r in repeats[side]):
                nodes.append(helper.make_node("Tile", [operand, ints(f"{name}_repeats{side}", repeats[side])],
                                              [f"{name}_tiled{side}"]))
                operand = f"{name}_tiled{side}"
            operands.append(operand)
        return nodes + [helper.make_node("MatMul", operands, list(node.output), name=node.name)]

    replace_nodes(model, replace)
    return model
