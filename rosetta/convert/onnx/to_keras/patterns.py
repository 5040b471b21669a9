"""The multi-node forms exporters write, each fused into one node before mapping, so that it becomes one
layer whose weights stay trainable: torch's GroupNorm (Reshape, InstanceNormalization, Reshape, Mul, Add),
LayerNorm spelled as ReduceMean/Sub/Pow/Sqrt/Div (torch below opset 17, or
written out by hand), GELU spelled with Erf (Keras has no erf or sqrt layer to map them one by one), MatMul +
Add of a constant vector (torch's Linear on 3-D inputs), and tf2onnx's Embedding index wrap
(where(i < 0, i + n, i)), dropped: Gather reads negative indices from the end already, as Keras' Embedding
does. The fused nodes are in rosetta's domain (registry.FUSED): GroupNormalization, LayerNormalization and Gelu
as ONNX defines them at opsets 21, 17 and 20, MatMul with a third input, the bias. FUSIONS names them, in the order they run; the
manifest records it."""

from __future__ import annotations

import math

import numpy as np

from rosetta.convert.onnx.to_keras.context import as_parameter
from rosetta.convert.onnx.to_keras.registry import FUSED
from rosetta.frameworks.onnx_graph import GraphView, node_attributes


def _reduce_mean_axes(view: GraphView, node):
    """The (sorted, non-negative) axes of a keepdims ReduceMean, or None."""
    attributes = node_attributes(node)
    rank = len(view.shapes.get(node.input[0]) or [])
    axes = attributes.get("axes")
    if axes is None and len(node.input) > 1 and node.input[1] in view.constants:
        axes = [int(v) for v in np.atleast_1d(view.constants[node.input[1]])]
    if not attributes.get("keepdims", 1) or not axes or not rank:
        return None
    return sorted(axis % rank for axis in axes)


def _match_layer_normalization(view: GraphView, sqrt):
    """(x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps) [* scale] [+ bias], with the means over the trailing
    axes: torch's LayerNorm below opset 17, and the usual hand-written form."""
    import onnx

    if sqrt.op_type != "Sqrt":
        return None
    epsilon, variance, add_epsilon = 0.0, sqrt.input[0], view.made_by(sqrt.input[0], "Add")
    if add_epsilon is not None:
        for first, second in (add_epsilon.input, add_epsilon.input[::-1]):
            if view.scalar(second) is not None and view.sole_reader(first, "Add") is add_epsilon:
                epsilon, variance = view.scalar(second), first
        if variance == sqrt.input[0]:
            return None
    reduce_variance = view.made_by(variance, "ReduceMean")
    if reduce_variance is None or view.sole_reader(variance, "Add" if add_epsilon else "Sqrt") is None \
            or view.sole_reader(sqrt.input[0], "Sqrt") is not sqrt:
        return None
    square = view.producer.get(reduce_variance.input[0])
    if square is None or view.sole_reader(reduce_variance.input[0], "ReduceMean") is not reduce_variance or not (
            square.op_type == "Mul" and square.input[0] == square.input[1]
            or square.op_type == "Pow" and view.scalar(square.input[1]) == 2.0):
        return None
    centered = square.input[0]
    subtract = view.made_by(centered, "Sub")
    reduce_mean = view.made_by(subtract.input[1], "ReduceMean") if subtract is not None else None
    divide = view.sole_reader(sqrt.output[0], "Div")
    if reduce_mean is None or reduce_mean.input[0] != subtract.input[0] or divide is None \
            or list(divide.input) != [centered, sqrt.output[0]] \
            or view.sole_reader(subtract.input[1], "Sub") is not subtract or centered in view.graph_outputs \
            or {id(n) for n in view.readers.get(centered, [])} != {id(square), id(divide)}:
        return None
    x = subtract.input[0]
    shape = view.shapes.get(x) or []
    axes = _reduce_mean_axes(view, reduce_mean)
    trailing = list(range(len(shape) - len(axes or []), len(shape)))
    if not axes or axes != _reduce_mean_axes(view, reduce_variance) or axes != trailing:
        return None
    matched = [reduce_mean, subtract, square, reduce_variance] + ([add_epsilon] if add_epsilon else []) + [sqrt, divide]
    output, inputs = divide.output[0], [x, "", ""]
    normalized_shape = shape[axes[0]:]
    for slot, op_type in ((1, "Mul"), (2, "Add")):  # the affine part, when its parameters are constants
        affine = view.sole_reader(output, op_type)
        value = view.constants.get(view.other_input(affine, output)) if affine is not None else None
        parameter = as_parameter(value, normalized_shape) if value is not None and None not in normalized_shape else None
        if parameter is None:
            continue
        name = f"{affine.output[0]}/{'scale' if slot == 1 else 'bias'}"
        view.constants[name] = parameter
        inputs[slot], output = name, affine.output[0]
        matched.append(affine)
    return matched, onnx.helper.make_node("LayerNormalization", inputs, [output], axis=axes[0], epsilon=epsilon,
                                          domain=FUSED)


def _match_gelu(view: GraphView, erf):
    """x * 0.5 * (1 + erf(x / sqrt(2))), multiplied in any of the orders exporters write (torch: Div, Erf,
    Add, Mul by x, Mul by 0.5)."""
    import onnx

    if erf.op_type != "Erf" or view.sole_reader(erf.input[0], "Erf") is not erf:
        return None
    scaled, x = view.producer.get(erf.input[0]), None
    if scaled is not None and scaled.op_type == "Div" and \
            math.isclose(view.scalar(scaled.input[1]) or 0, math.sqrt(2), rel_tol=1e-6):
        x = scaled.input[0]
    elif scaled is not None and scaled.op_type == "Mul":
        for first, second in (scaled.input, scaled.input[::-1]):
            if math.isclose(view.scalar(second) or 0, math.sqrt(0.5), rel_tol=1e-6):
                x = first
    plus_one = view.sole_reader(erf.output[0], "Add")
    if x is None or plus_one is None or view.scalar(view.other_input(plus_one, erf.output[0])) != 1.0:
        return None
    product = view.sole_reader(plus_one.output[0], "Mul")
    factor = view.other_input(product, plus_one.output[0])
    matched = [scaled, erf, plus_one, product]
    if factor is None:
        return None
    if factor == x or view.scalar(factor) == 0.5:  # (1 + erf) * x then * 0.5, or (1 + erf) * 0.5 then * x
        last = view.sole_reader(product.output[0], "Mul")
        other = view.other_input(last, product.output[0])
        if other is None or (view.scalar(other) != 0.5 if factor == x else other != x):
            return None
        matched.append(last)
    else:  # (x * 0.5) * (1 + erf)
        half = view.made_by(factor, "Mul")
        if half is None or view.sole_reader(factor, "Mul") is not product or \
                view.scalar(view.other_input(half, x) or "") != 0.5:
            return None
        matched.insert(0, half)
    return matched, onnx.helper.make_node("Gelu", [x], [matched[-1].output[0]], domain=FUSED)


def _match_matmul_bias(view: GraphView, matmul):
    """MatMul by a constant matrix then Add of a constant vector (torch's Linear on inputs of rank > 2):
    one Dense with a trainable bias, given to MatMul as a third input."""
    import onnx

    if matmul.op_type != "MatMul" or matmul.input[1] not in view.constants or view.constants[matmul.input[1]].ndim != 2:
        return None
    add = view.sole_reader(matmul.output[0], "Add")
    bias = view.constants.get(view.other_input(add, matmul.output[0])) if add is not None else None
    units = view.constants[matmul.input[1]].shape[1]
    if bias is None or bias.size != units or bias.shape[-1] != units:
        return None
    name = f"{add.output[0]}/bias"
    view.constants[name] = bias.reshape(units).astype(np.float32)
    return [matmul, add], onnx.helper.make_node("MatMul", [matmul.input[0], matmul.input[1], name], [add.output[0]],
                                                domain=FUSED)


def _match_flattened_gemm(view: GraphView, gemm):
    """Reshape(x, [-1, K]) -> Gemm by constants -> Reshape back to x's leading axes (Hugging Face's Conv1D and
    every `x.view(-1, x.size(-1))` before a Linear): the batch axis merged into the rows, which Keras cannot
    write, for a product on the last axis, which it can: one Dense with a trainable bias (MatMul, FUSED)."""
    import onnx

    if gemm.op_type != "Gemm" or node_attributes(gemm).get("transA", 0):
        return None
    flatten = view.made_by(gemm.input[0], "Reshape")
    weight = view.constants.get(gemm.input[1])
    bias = view.constants.get(gemm.input[2]) if len(gemm.input) > 2 and gemm.input[2] else None
    if flatten is None or weight is None or weight.ndim != 2 or (len(gemm.input) > 2 and gemm.input[2] and bias is None):
        return None
    x, target = flatten.input[0], view.constants.get(flatten.input[1])
    shape = view.shapes.get(x)
    attrs = node_attributes(gemm)
    kernel = (weight.T if attrs.get("transB", 0) else weight) * attrs.get("alpha", 1.0)
    if target is None or shape is None or len(shape) < 3 or None in shape[1:] or \
            [int(v) for v in target.reshape(-1)] != [-1, shape[-1]] or kernel.shape[0] != shape[-1] or \
            view.sole_reader(gemm.input[0], "Gemm") is not gemm:
        return None
    back = view.sole_reader(gemm.output[0], "Reshape")
    restored = view.constants.get(back.input[1]) if back is not None else None
    units = kernel.shape[1]
    if restored is None or not _is_static_shape_of(restored, [shape[0], *shape[1:-1], units]):
        return None
    name_kernel, name_bias = f"{back.output[0]}/kernel", f"{back.output[0]}/bias"
    view.constants[name_kernel] = kernel.astype(np.float32)
    bias_vector = np.zeros(units, np.float32) if bias is None else \
        np.broadcast_to(bias * attrs.get("beta", 1.0), (units,)).astype(np.float32)
    view.constants[name_bias] = bias_vector
    return [flatten, gemm, back], onnx.helper.make_node("MatMul", [x, name_kernel, name_bias], [back.output[0]],
                                                        domain=FUSED)


def _below_zero(view: GraphView, name: str):
    """(indices, [nodes]) when `name` is Less(indices, 0), the indices possibly Cast first (exact for the sign)."""
    less = view.made_by(name, "Less")
    if less is None or view.scalar(less.input[1]) != 0:
        return None
    cast = view.made_by(less.input[0], "Cast")
    return (cast.input[0], [cast, less]) if cast is not None else (less.input[0], [less])


def _match_index_wrap(view: GraphView, gather):
    """Gather(table, where(i < 0, i + n, i)) with n the gathered axis' size, written as Where or as tf2onnx's
    Cast(i < 0) * (i + n) + Cast(not(i < 0)) * i: ONNX's Gather already reads a negative index from the end
    (and so does Keras' Embedding), so the pattern is dropped and Gather reads i."""
    import onnx

    if gather.op_type != "Gather" or gather.input[0] not in view.constants:
        return None
    axis = node_attributes(gather).get("axis", 0)
    size = view.constants[gather.input[0]].shape[axis]

    def plus_size(name: str, indices: str):
        add = view.made_by(name, "Add")
        return add if add is not None and view.other_input(add, indices) is not None and \
            view.scalar(view.other_input(add, indices)) == size else None

    wrapped, found = gather.input[1], None
    where = view.made_by(wrapped, "Where")
    if where is not None:
        below = _below_zero(view, where.input[0])
        if below is not None and where.input[2] == below[0] and plus_size(where.input[1], below[0]) is not None:
            found = below[1] + [view.producer[where.input[1]], where]
    total = view.made_by(wrapped, "Add")
    for first, second in ([total.input, total.input[::-1]] if total is not None else []):
        negative, positive = view.made_by(first, "Mul"), view.made_by(second, "Mul")
        if found is not None or negative is None or positive is None:
            continue
        for cast_name, added in (negative.input, negative.input[::-1]):
            cast = view.made_by(cast_name, "Cast")
            below = _below_zero(view, cast.input[0]) if cast is not None else None
            add = plus_size(added, below[0]) if below is not None else None
            kept = view.other_input(positive, below[0]) if below is not None else None
            keep_cast = view.made_by(kept, "Cast") if kept is not None else None
            negation = view.made_by(keep_cast.input[0], "Not") if keep_cast is not None else None
            if add is not None and negation is not None and negation.input[0] == cast.input[0]:
                found = below[1] + [cast, add, negative, negation, keep_cast, positive, total]
                break
    if found is None:
        return None
    matched = list({id(n): n for n in found}.values())
    inside = {id(n) for n in matched} | {id(gather)}
    for node in matched:  # only the pattern reads what it computes
        for output in node.output:
            if output in view.graph_outputs or any(id(r) not in inside for r in view.readers.get(output, [])):
                return None
    replacement = onnx.helper.make_node("Gather", [gather.input[0], _below_zero_indices(view, matched)],
                                        list(gather.output), axis=axis)
    return matched + [gather], replacement


def _below_zero_indices(view: GraphView, matched: list) -> str:
    less = next(node for node in matched if node.op_type == "Less")
    cast = view.made_by(less.input[0], "Cast")
    return cast.input[0] if cast is not None else less.input[0]


def _match_group_normalization(view: GraphView, norm):
    """torch's GroupNorm: Reshape(x, [0, G, -1]), InstanceNormalization with unit scale and zero bias (the group
    statistics), Reshape back to Shape(x) (or x's static shape, a constant), then Mul and Add of per-channel constants (C, 1, ...): one
    GroupNormalization (ONNX's opset-21 form, per-channel scale and bias) whose weights stay trainable."""
    import onnx

    if norm.op_type != "InstanceNormalization":
        return None
    scale, bias = (view.constants.get(name) for name in norm.input[1:3])
    grouping = view.made_by(norm.input[0], "Reshape")
    shape = view.constants.get(grouping.input[1]) if grouping is not None else None
    if scale is None or bias is None or np.any(scale != 1) or np.any(bias != 0) or shape is None or \
            shape.size != 3 or int(shape[1]) != scale.size or view.sole_reader(norm.input[0], "InstanceNormalization") is None:
        return None
    x, groups = grouping.input[0], int(shape[1])
    back = view.sole_reader(norm.output[0], "Reshape")
    if back is None:
        return None
    source = view.made_by(back.input[1], "Shape")
    if source is not None:
        if source.input[0] != x or source.attribute or view.sole_reader(back.input[1], "Reshape") is not back:
            return None
        matched = [grouping, norm, source, back]
    elif _is_static_shape_of(view.constants.get(back.input[1]), view.shapes.get(x)):
        matched = [grouping, norm, back]  # Shape(x) made a constant (convert.onnx.dynamic_batch)
    else:
        return None
    output, weights = back.output[0], []
    channels = (view.shapes.get(x) or [None, None])[1]
    for op_type in ("Mul", "Add"):
        step = view.sole_reader(output, op_type)
        value = view.constants.get(view.other_input(step, output)) if step is not None else None
        if value is None or channels is None or value.size != channels or value.shape[0] != channels:
            break
        weights.append(value.reshape(channels).astype(np.float32))
        matched.append(step)
        output = step.output[0]
    if len(weights) != 2:
        return None
    names = [f"{output}/scale", f"{output}/bias"]
    view.constants.update(zip(names, weights))
    epsilon = node_attributes(norm).get("epsilon", 1e-5)
    return matched, onnx.helper.make_node("GroupNormalization", [x] + names, [output], num_groups=groups,
                                          epsilon=epsilon, domain=FUSED)


def _is_static_shape_of(target, shape) -> bool:
    """Whether a constant Reshape target is `shape` (x's static shape), its batch axis -1, 0 or its size."""
    if target is None or not shape or target.ndim != 1 or target.size != len(shape) or None in shape[1:]:
        return False
    return int(target[0]) in (-1, 0, shape[0] or -1) and [int(v) for v in target[1:]] == list(shape[1:])


FUSIONS = {"group_normalization": _match_group_normalization, "layer_normalization": _match_layer_normalization, "gelu": _match_gelu, "matmul_bias": _match_matmul_bias,
           "flattened_gemm": _match_flattened_gemm,
           "embedding_index_wrap": _match_index_wrap}


def fuse_patterns(nodes: list, constants: dict, shapes: dict, graph_outputs: set,
                  fused_from: dict | None = None) -> list:
    """Replace each pattern of FUSIONS by one node, placed where its last node was (its inputs are made before
    its first node; only its last node's output is read outside it). `fused_from`, where given, receives
    {id(fused node): the nodes it replaced, in graph order}."""
    for match in FUSIONS.values():
        view = GraphView(nodes, constants, shapes, graph_outputs)
        position = {id(node): index for index, node in enumerate(nodes)}
        dropped, replacements = set(), {}
        for node in nodes:
            found = None if id(node) in dropped else match(view, node)
            if found is None or any(id(m) in dropped for m in found[0]):
                continue
            matched, replacement = found
            dropped.update(id(m) for m in matched)
            replacements[id(max(matched, key=lambda m: position[id(m)]))] = replacement
            if fused_from is not None:
                fused_from[id(replacement)] = [m for replaced in sorted(matched, key=lambda m: position[id(m)])
                                               for m in fused_from.get(id(replaced), [replaced])]
        nodes = [replacements.get(id(node), node) for node in nodes
                 if id(node) in replacements or id(node) not in dropped]
    return nodes
