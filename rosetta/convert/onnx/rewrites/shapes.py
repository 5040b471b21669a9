"""Shapes: Reshape targets computed from shapes made constant or symbolic, Shape's bounds, Flatten and
DepthToSpace/SpaceToDepth as reshapes, and shape vectors made traceable (a Reshape of one, a Where of two)."""

from __future__ import annotations

from functools import partial

import numpy as np

from rosetta.convert.onnx.rewrites.graph import add_initializer, remove_dead_nodes, replace_nodes
from rosetta.convert.onnx.rewrites.registry import rewrite
from rosetta.frameworks.onnx_graph import (constant_values, default_opset, node_attributes, shape_of, shape_tracer,
                                           static_shapes, text)


@rewrite
def constant_reshape_shapes(model):
    """MXNet and the Keras mapper: a Reshape whose target shape is computed at run time from the shape of its
    own input (how tf2onnx writes Keras' Flatten: Shape -> Gather -> Slice -> Concat -> Reshape) gets that
    shape as a constant, with 0 where it keeps an input axis of unknown size (ONNX Reshape copies the input's
    size for 0). Rewritten when every element is a known size or provably that same input axis, but one at
    most, which is then -1 (ONNX Reshape infers it from the others, so it is the size the graph computed): the
    batch read from another tensor, or a batch times heads (torch.onnx's `reshape(B, N, 3, heads, d)` with
    `B, N, C = x.shape`, which MXNet refused: "KeyError: '/Concat'")."""
    constants = constant_values(model)
    elements, dim = shape_tracer(model, follow_equal_sizes=True, unknown_elements=True)
    targets = {}  # all read before any is replaced: the tracer follows a Reshape's sizes through its target
    for node in model.graph.node:
        allowzero = node_attributes(node).get("allowzero", 0)
        if node.op_type != "Reshape" or node.input[1] in constants or allowzero:
            continue
        shape = elements(node.input[1])
        if shape is None:
            continue
        fixed = [element if isinstance(element, int) else
                 0 if element is not None and element == dim(node.input[0], axis) else None
                 for axis, element in enumerate(shape)]
        if fixed.count(None) + fixed.count(-1) <= 1:
            targets[node.output[0]] = [-1 if element is None else element for element in fixed]
    for node in model.graph.node:
        if node.op_type == "Reshape" and node.output[0] in targets:
            node.input[1] = add_initializer(model, f"{node.output[0]}_constant_shape", targets[node.output[0]])
    return remove_dead_nodes(model)


def _symbolic_shapes(model) -> dict[str, list] | None:
    """Each tensor's shape from ONNX Runtime's symbolic shape inference (sympy: it follows Mul, Div, Cast of
    sizes, which ONNX's own inference drops), None for an axis of unknown or symbolic size; None when that
    inference fails on the graph."""
    import contextlib
    import copy
    import tempfile

    from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference

    # where inference stops short, ONNX Runtime saves the graph to sym_shape_infer_temp.onnx (+ data files) in
    # the current folder: a folder of our own, removed after
    with tempfile.TemporaryDirectory(prefix="rosetta-shapes-") as scratch, contextlib.chdir(scratch):
        try:
            inferred = SymbolicShapeInference.infer_shapes(copy.deepcopy(model), auto_merge=False,
                                                           guess_output_rank=False)
        except Exception:
            return None
    if inferred is None:  # it declines graphs below opset 7 (returning None, with a message on stdout)
        return None
    values = list(inferred.graph.value_info) + list(inferred.graph.output) + list(inferred.graph.input)
    return {value.name: [d.dim_value if d.HasField("dim_value") else None for d in value.type.tensor_type.shape.dim]
            for value in values if value.type.tensor_type.HasField("shape")}


@rewrite
def static_shape_parts(model):
    """onnx2tf: Shape -> Gather/Slice with constant indices that pick only axes of static size become that
    constant (attention's head size: Shape -> Slice[-1:] -> Cast -> Sqrt), as onnxsim would fold them.
    onnx2tf otherwise broadcasts the size vector it builds at run time onto the wrong axis."""
    from onnx import numpy_helper

    shapes, constants = _symbolic_shapes(model), constant_values(model)
    if shapes is None:
        return model
    outputs = {value.name for value in model.graph.output}  # kept computed: onnx2tf's model outputs tensors only
    producers = {output: node for node in model.graph.node for output in node.output}
    kept = []
    for node in model.graph.node:
        source = producers.get(node.input[0]) if node.input else None
        value = None
        if (source is not None and source.op_type == "Shape" and not source.attribute
                and shapes.get(source.input[0]) is not None):
            dims = np.array([-1 if d is None else d for d in shapes[source.input[0]]], np.int64)
            if node.op_type == "Gather" and node.input[1] in constants:
                value = dims[constants[node.input[1]].astype(np.int64)]
            elif node.op_type == "Slice" and all(name in constants for name in node.input[1:] if name) \
                    and (len(node.input) < 4 or not node.input[3] or int(constants[node.input[3]].ravel()[0]) in (0, -1)):
                starts, ends = (int(constants[name].ravel()[0]) for name in node.input[1:3])
                steps = int(constants[node.input[4]].ravel()[0]) if len(node.input) > 4 and node.input[4] else 1
                value = dims[starts:ends:steps]
        if value is None or np.any(value < 0) or node.output[0] in outputs:
            kept.append(node)
            continue
        model.graph.initializer.append(numpy_helper.from_array(value, node.output[0]))
    del model.graph.node[:]
    model.graph.node.extend(kept)
    return remove_dead_nodes(model)


@rewrite
def symbolic_reshape_shapes(model):
    """onnx2tf: a Reshape whose output shape symbolic inference knows up to at most one axis gets that shape
    as a constant, -1 on the unknown axis (ONNX infers it from the element count, so every input the original
    accepts gives the same result). onnx2tf otherwise computes the shape at run time and its TF tensor loses
    static sizes, which its LSTM (input_size), LayerNormalization (parameter shape) and attention reshapes
    cannot take. Reshapes to an empty axis (0) are left as they are."""
    shapes = _symbolic_shapes(model)
    if shapes is None:
        return model
    for node in model.graph.node:
        output = shapes.get(node.output[0]) if node.op_type == "Reshape" else None
        if output is None or sum(d is None for d in output) > 1 or 0 in output:
            continue
        name = f"{node.output[0]}_static_shape"
        add_initializer(model, name, [-1 if d is None else d for d in output])
        node.input[1] = name
    return remove_dead_nodes(model)


@rewrite
def depth_to_space_as_reshapes(model):
    """DepthToSpace (DCR and CRD) and SpaceToDepth of an (N, C, H, W) tensor of static C, H, W as the
    Reshape -> Transpose -> Reshape their spec defines them by (the batch copied, Reshape's 0): MXNet's importer
    and onnx2torch get CRD or the opset-13 forms wrong or lack them, onnx2tf misorders SpaceToDepth's channels."""
    from onnx import helper

    shapes = static_shapes(model)

    def replace(node):
        shape = shapes.get(node.input[0]) if node.op_type in ("DepthToSpace", "SpaceToDepth") else None
        if shape is None or len(shape) != 4 or None in shape[1:]:
            return None
        _, c, h, w = shape
        b, name = node_attributes(node)["blocksize"], node.output[0]
        mode = text(node_attributes(node).get("mode", "DCR"))
        if node.op_type == "SpaceToDepth":  # its channels ordered (row, column, channel), or in CRD mode (opset 24)
            if h % b or w % b:  # (channel, row, column)
                return None
            perm = [0, 3, 5, 1, 2, 4] if mode == "DCR" else [0, 1, 3, 5, 2, 4]
            first, last = [0, c, h // b, b, w // b, b], [0, c * b * b, h // b, w // b]
        elif c % (b * b):
            return None
        elif mode == "DCR":
            first, perm, last = [0, b, b, c // (b * b), h, w], [0, 3, 4, 1, 5, 2], [0, c // (b * b), h * b, w * b]
        else:
            first, perm, last = [0, c // (b * b), b, b, h, w], [0, 1, 4, 2, 5, 3], [0, c // (b * b), h * b, w * b]
        add_initializer(model, f"{name}_blocks", first)
        add_initializer(model, f"{name}_shape", last)
        return [helper.make_node("Reshape", [node.input[0], f"{name}_blocks"], [f"{name}_split"]),
                helper.make_node("Transpose", [f"{name}_split"], [f"{name}_moved"], perm=perm),
                helper.make_node("Reshape", [f"{name}_moved", f"{name}_shape"], [name])]

    replace_nodes(model, replace)
    return remove_dead_nodes(model)


@rewrite
def shape_bounds_as_slice(model):
    """MXNet and onnx2tf: Shape with `start` or `end` (opset 15), which both ignore (all the sizes: a silently
    longer shape), as Shape then a Slice of those bounds."""
    from onnx import helper

    shapes = static_shapes(model)
    nodes = []
    for node in model.graph.node:
        attributes = node_attributes(node)
        if node.op_type != "Shape" or not ({"start", "end"} & set(attributes)):
            nodes.append(node)
            continue
        name = node.output[0]
        start, end = attributes.get("start", 0), attributes.get("end", 2 ** 62)
        if shapes.get(node.input[0]) is not None:  # bounds within the rank, as Shape-15 clamps them (onnx2tf
            rank = len(shapes[node.input[0]])  # read a negative end as none)
            start, end = (min(max(bound + rank if bound < 0 else bound, 0), rank) for bound in (start, end))
        add_initializer(model, f"{name}_start", [start])
        add_initializer(model, f"{name}_end", [end])
        nodes += [helper.make_node("Shape", [node.input[0]], [f"{name}_all"]),
                  helper.make_node("Slice", [f"{name}_all", f"{name}_start", f"{name}_end"], [name])]
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    return model


@rewrite
def flatten_as_reshape(model):
    """MXNet (its Flatten flattens at axis 1 only): Flatten at another axis of a tensor of known rank as a
    Reshape to the two products, the one holding the sizes unknown when converting as -1."""
    from onnx import helper

    shapes = static_shapes(model)

    def replace(node):
        shape = shapes.get(node.input[0]) if node.op_type == "Flatten" else None
        axis = node_attributes(node).get("axis", 1) if shape is not None else 1
        axis = axis + len(shape) if shape is not None and axis < 0 else axis
        if shape is None or axis == 1:
            return None
        before, after = shape[:axis], shape[axis:]
        if None in before and None in after:
            return None
        target = [-1 if None in before else int(np.prod(before)), -1 if None in after else int(np.prod(after))]
        add_initializer(model, f"{node.output[0]}_shape", target)
        return [helper.make_node("Reshape", [node.input[0], f"{node.output[0]}_shape"], list(node.output))]

    replace_nodes(model, replace)
    return model


@rewrite
def vector_reshapes_as_identity(model):
    """MXNet and the Keras mapper: a Reshape of a 1-D tensor to one axis (a constant [-1] or [n]) is the
    identity: torch.onnx writes one into the shape of every `expand(batch, -1, -1)` (ViT's and BEiT's class
    token), where the shape tracers that read Identity stop at Reshape."""
    from onnx import helper

    shapes, constants = static_shapes(model), constant_values(model)

    def replace(node):
        if node.op_type != "Reshape":
            return None
        target, source = constants.get(node.input[1]), shapes.get(node.input[0])
        if target is None or target.size != 1 or source is None or len(source) != 1 or \
                int(target.ravel()[0]) not in (-1, source[0]):
            return None
        return [helper.make_node("Identity", node.input[:1], list(node.output), name=node.name)]

    replace_nodes(model, replace)
    return remove_dead_nodes(model)


@rewrite
def vector_wheres_as_gathers(model):
    """MXNet and the Keras mapper: Where of two 1-D tensors by a constant condition picks each element from one
    of them at conversion time, so it is a Gather of their Concat by constant indices: torch.onnx's shape of
    `expand(batch, -1, -1)`, Where(shape == -1, 1, shape) with the condition made constant (dynamic_batch), which
    the shape tracers follow through Concat and Gather, and not through Where. A one-element operand broadcasts."""
    from onnx import helper, numpy_helper

    shapes, constants = static_shapes(model), constant_values(model)

    def length(name):
        shape = constants[name].shape if name in constants else shapes.get(name)
        return shape[0] if shape is not None and len(shape) == 1 and shape[0] else None

    def replace(node):
        condition = constants.get(node.input[0]) if node.op_type == "Where" else None
        if condition is None or condition.ndim != 1:
            return None
        n, first, second = len(condition), length(node.input[1]), length(node.input[2])
        if first not in (1, n) or second not in (1, n):
            return None
        indices = np.array([(k if first == n else 0) if chosen else first + (k if second == n else 0)
                            for k, chosen in enumerate(condition.astype(bool))], np.int64)
        output = node.output[0]
        model.graph.initializer.append(numpy_helper.from_array(indices, f"{output}_picked"))
        return [helper.make_node("Concat", list(node.input[1:]), [f"{output}_both"], axis=0),
                helper.make_node("Gather", [f"{output}_both", f"{output}_picked"], [output], axis=0)]

    replace_nodes(model, replace)
    return remove_dead_nodes(model)


@rewrite
def axis_ranges(model):
    """MXNet and the Keras mapper: Range(0, n, 1) where n is the run-time size of one axis of a graph tensor
    (torch's arange(x.size(0)) on a free batch: CLIP's pooled token at [arange(batch), eos], BART's shifted
    decoder ids written by ScatterND at [arange(batch), position]) becomes RosettaAxisRange(x), attribute axis:
    neither has an op that computes a Range from a tensor, and both can count along one of its axes
    (keras.ops.cumsum of ones, MXNet's arange_like). A size traced to a ConstantOfShape is followed to the
    tensor its shape was read from (BART's zeros of input_ids' shape, a value the Keras mapper holds unmade)."""
    from onnx import helper

    elements, _ = shape_tracer(model)
    constants = constant_values(model)
    producers = {output: node for node in model.graph.node for output in node.output}

    def origin(tensor: str, axis: int, depth: int = 0):
        node = producers.get(tensor)
        if node is None or node.op_type != "ConstantOfShape" or depth > 8:
            return tensor, axis
        shape = elements(node.input[0])
        if not shape or axis >= len(shape) or isinstance(shape[axis], int):
            return tensor, axis
        return origin(*shape[axis], depth + 1)

    def replace(node):
        if node.op_type != "Range" or any(name not in constants for name in (node.input[0], node.input[2])):
            return None
        start, delta = (np.ravel(constants[name]) for name in (node.input[0], node.input[2]))
        limit = elements(node.input[1])
        if start.size != 1 or delta.size != 1 or float(start[0]) != 0 or float(delta[0]) != 1 or not limit \
                or len(limit) != 1 or isinstance(limit[0], int):
            return None
        tensor, axis = origin(*limit[0])
        element = helper.np_dtype_to_tensor_dtype(constants[node.input[0]].dtype)
        declared.append(helper.make_tensor_value_info(node.output[0], element, [f"{tensor}_{axis}"]))
        return [helper.make_node("RosettaAxisRange", [tensor], list(node.output), name=node.name, axis=int(axis),
                                 to=element)]

    declared = []  # the outputs' types and ranks: shape inference, which knows no Rosetta op, goes on past them
    replace_nodes(model, replace)
    kept = {value.name for value in declared}
    others = [value for value in model.graph.value_info if value.name not in kept]
    del model.graph.value_info[:]
    model.graph.value_info.extend(others + declared)
    return remove_dead_nodes(model)


@rewrite
def allowzero_without_zeros(model):
    """onnx2torch ("allowzero=1 is not implemented"): a Reshape with allowzero=1, which the dynamo exporter writes
    on every Reshape, whose target holds no 0 (a constant without one, or sizes read from the graph's tensors,
    0 only for an empty tensor) means what it means without it: the attribute goes."""
    elements, _ = shape_tracer(model)
    for node in model.graph.node:
        allowzero = [a for a in node.attribute if a.name == "allowzero" and a.i]
        if node.op_type != "Reshape" or not allowzero:
            continue
        target = elements(node.input[1])
        if target is not None and all(not isinstance(e, int) or e != 0 for e in target):
            node.attribute.remove(allowzero[0])
    return model


@rewrite
def tile_as_expand(model):
    """MXNet and the Keras mapper (Tile by repeats read at run time, such as the batch size): a Tile whose every
    axis is either of size 1 in x or repeated once is Expand(x, repeats), which both take with a run-time shape
    (a size-1 axis broadcast to its repeat, another kept as it is): CPM-Ant's position ids, repeated per batch.
    Another, of a static x with at most one axis of run-time size after it, is Unsqueeze, Expand and Reshape."""
    from onnx import helper

    shapes, constants = static_shapes(model), constant_values(model)
    elements, _ = shape_tracer(model)

    ints = partial(add_initializer, model)  # an int64 initializer by name, for a node's inputs

    def replace(node):
        shape = shape_of(node.input[0], shapes, constants) if node.op_type == "Tile" else None
        repeats = elements(node.input[1]) if shape is not None and node.input[1] not in constants else None
        if repeats is None or len(repeats) != len(shape):
            return None
        if all(size == 1 or repeat == 1 for size, repeat in zip(shape, repeats)):
            return [helper.make_node("Expand", list(node.input), list(node.output), name=node.name)]
        merged = [size * repeat if isinstance(size, int) and isinstance(repeat, int) else -1
                  for size, repeat in zip(shape, repeats)]
        if not all(isinstance(size, int) for size in shape) or merged.count(-1) > 1 or \
                default_opset(model) < 13:
            return None
        # each axis (d) repeated r times is (r, d) merged: x unsqueezed before each axis, expanded to
        # (r0, d0, r1, d1, ...) and reshaped (BLOOM's ALiBi slopes, repeated per batch)
        name, rank = node.output[0], len(shape)
        nodes = [helper.make_node("Unsqueeze", [node.input[0], ints(f"{name}_between", list(range(0, 2 * rank, 2)))],
                                  [f"{name}_spread"])]
        pieces = []
        for axis, size in enumerate(shape):
            nodes.append(helper.make_node("Slice", [node.input[1], ints(f"{name}_from{axis}", [axis]),
                                                    ints(f"{name}_to{axis}", [axis + 1])], [f"{name}_times{axis}"]))
            pieces += [f"{name}_times{axis}", ints(f"{name}_size{axis}", [size])]
        nodes += [helper.make_node("Concat", pieces, [f"{name}_pairs"], axis=0),
                  helper.make_node("Expand", [f"{name}_spread", f"{name}_pairs"], [f"{name}_expanded"]),
                  helper.make_node("Reshape", [f"{name}_expanded", ints(f"{name}_merged", merged)], [name])]
        return nodes

    replace_nodes(model, replace)
    return remove_dead_nodes(model)
