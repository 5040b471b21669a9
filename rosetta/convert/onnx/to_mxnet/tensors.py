"""Ops that move, select or cast elements: Cast in MXNet's float32 world, Slice, Gather, Split, Where, Tile, TopK,
OneHot, Pad, CumSum, and Expand/ConstantOfShape of a shape computed at run time.

Integers: MXNet carries them as float32 (the importer loads every initializer as float32, the runner feeds
integer inputs as float32), so `cast` keeps the dtype where ONNX casts to an integer type or to float32: to an
integer it truncates toward zero (ONNX's float -> int), to bool it compares with 0. An int32 Cast among float32
operands was a type error (tf2onnx's Embedding index wrap: Less / Not / Cast / Mul on the token ids).

Slice: the importer's own converter fails on every opset-10+ Slice (it reads starts and ends as float32 and
writes "1.0", or "nan" for an end past the axis, into slice_axis), so `slice_` replaces it: the bounds, made
int32 by rewrites.bounded_slices, go to MXNet's `slice`, which clamps them as ONNX does.

Expand and ConstantOfShape with a shape computed at run time (Keras' and torch's zero LSTM states, from
Shape(x)): MXNet has no op that reads a shape from a tensor. `shapes_as_references` traces the shape to
constants and axes of graph tensors (Shape -> Cast / Gather / Slice / Concat ...) and writes the node as
RosettaExpand(x, tensors...): x times ones of that shape (numpy-style, both ways, as ONNX Expand; x * 1 is x
exactly), the ones built from the tensors with broadcast_like. ConstantOfShape is Expand of its value.
Gather by a scalar constant: the importer loads the scalar as shape (1,), so `scalar_gather_indices` writes
it as a Gather by [index] and a Squeeze; Gather of indices computed at run time takes a negative one from the
end (`take`'s wrap mode: ONNX calls any index out of range an error).
"""

from __future__ import annotations

import numpy as np

from rosetta.convert.onnx import rewrites as rw
from rosetta.convert.onnx.rewrites import rewrite
from rosetta.convert.onnx.to_mxnet.recurrent import OMITTED
from rosetta.convert.onnx.to_mxnet.registry import add_converter, mxnet_own, symbols
from rosetta.errors import RosettaError
from rosetta.frameworks.onnx_graph import constant_values, default_opset, node_attributes, shape_tracer, static_shapes


@add_converter("Cast", 1)
def cast(attrs, inputs, importer):
    """ONNX Cast in MXNet's float32 world (module docstring): to an integer type, truncation toward zero in
    the input's dtype; to bool, x != 0; to float32, the input itself; to another float type, that type."""
    from onnx import TensorProto

    sym = symbols()
    to = int(attrs["to"])
    if to == TensorProto.FLOAT:
        return sym.identity(inputs[0]), attrs, inputs
    if to == TensorProto.BOOL:
        return inputs[0] != 0, attrs, inputs
    if to in (TensorProto.INT8, TensorProto.INT16, TensorProto.INT32, TensorProto.INT64, TensorProto.UINT8,
              TensorProto.UINT16, TensorProto.UINT32, TensorProto.UINT64):
        return sym.trunc(inputs[0]), attrs, inputs
    return mxnet_own("Cast")(attrs, inputs, importer)


@add_converter("RosettaExpand", 1)
def expand_to_references(attrs, inputs, importer):
    """RosettaExpand(x, tensors...) (shapes_as_references): x * ones of the traced shape, whose axis k is
    sizes[k], or where that is -1 the size of axis axes[k] of tensors[references[k]]."""
    sym = symbols()
    x, tensors = inputs[0], inputs[1:]
    sizes, references, axes = (list(attrs[key]) for key in ("sizes", "references", "axes"))
    # a single element of x's dtype (the float64 reference run casts parameters and data, never constants)
    ones = sym.ones_like(sym.slice_axis(sym.reshape(x, shape=(-1,)), axis=0, begin=0, end=1))
    ones = sym.reshape(ones, shape=(1,) * len(sizes))
    static = [(k, size) for k, size in enumerate(sizes) if size != 1 and size >= 0]
    if static:
        ones = sym.broadcast_axis(ones, axis=tuple(k for k, _ in static), size=tuple(size for _, size in static))
    for k, (size, reference, axis) in enumerate(zip(sizes, references, axes)):
        if size < 0:
            ones = sym.broadcast_like(ones, tensors[reference], lhs_axes=(k,), rhs_axes=(axis,))
    return sym.broadcast_mul(x, ones), attrs, inputs


@add_converter("Slice", 1)
def slice_(attrs, inputs, importer):
    """ONNX Slice (opset 10+, constant parameters within int32, as rw.bounded_slices leaves them) ->
    sym.slice, in place of MXNet's own converter, which no opset-10+ Slice passes (module docstring)."""
    sym = symbols()
    if importer.opset_version < 10:  # parameters as int attributes, which MXNet's own converter reads
        return mxnet_own("Slice")(attrs, inputs, importer)
    if len(inputs) != 5 or any(parameter.name not in importer._params for parameter in inputs[1:]):
        raise RosettaError("Slice with starts, ends, axes or steps computed at run time cannot be converted to mxnet")
    starts, ends, axes, steps = ([int(v) for v in importer._params[p.name].asnumpy().ravel()] for p in inputs[1:])
    if min(axes) < 0:
        raise RosettaError("Slice on a negative axis of a tensor of unknown rank cannot be converted to mxnet")
    begin, end, step = ([None] * (max(axes) + 1) for _ in range(3))
    for axis, start, stop, stride in zip(axes, starts, ends, steps):
        begin[axis], end[axis], step[axis] = start, stop, stride
    return sym.slice(inputs[0], begin=tuple(begin), end=tuple(end), step=tuple(step)), attrs, inputs


@rewrite
def shapes_as_references(model):
    """Expand and ConstantOfShape whose shape is traced (onnx_graph.shape_tracer) to constants and axes of graph
    tensors become RosettaExpand(x, tensors...) with attributes sizes (-1 for a traced axis), references and
    axes; ConstantOfShape's x is its value. MXNet-only: the importer's `expand_to_references` reads it."""
    from onnx import helper, numpy_helper

    elements, _ = shape_tracer(model)
    nodes = []
    for node in model.graph.node:
        shape = elements(node.input[0] if node.op_type == "ConstantOfShape" else node.input[-1]) \
            if node.op_type in ("Expand", "ConstantOfShape") else None
        if not shape or any(isinstance(e, int) and e < 1 for e in shape):  # rank 0, or 0 (MXNet: unknown)
            nodes.append(node)
            continue
        tensors = list(dict.fromkeys(e[0] for e in shape if not isinstance(e, int)))
        if node.op_type == "ConstantOfShape":
            value = next((numpy_helper.to_array(a.t) for a in node.attribute if a.name == "value"), np.zeros(1, np.float32))
            x = f"{node.output[0]}_value"
            model.graph.initializer.append(numpy_helper.from_array(value.reshape(1), x))
        else:
            x = node.input[0]
        nodes.append(helper.make_node(
            "RosettaExpand", [x, *tensors], list(node.output), name=node.name,
            sizes=[e if isinstance(e, int) else -1 for e in shape],
            references=[-1 if isinstance(e, int) else tensors.index(e[0]) for e in shape],
            axes=[-1 if isinstance(e, int) else e[1] for e in shape]))
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    return rw.remove_dead_nodes(model)


@rewrite
def scalar_gather_indices(model):
    """A Gather by a constant scalar index becomes a Gather by [index] and a Squeeze of that axis: MXNet's
    importer loads a scalar initializer as shape (1,), so `take` kept the gathered axis (torch's h_n[-1])."""
    from onnx import helper, numpy_helper

    constants, opset = constant_values(model), default_opset(model)
    nodes = []
    for node in model.graph.node:
        nodes.append(node)
        if node.op_type != "Gather" or node.input[1] not in constants or constants[node.input[1]].ndim != 0:
            continue
        axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
        output, gathered = node.output[0], f"{node.output[0]}_gathered"
        model.graph.initializer.append(numpy_helper.from_array(constants[node.input[1]].reshape(1), f"{output}_index"))
        node.input[1], node.output[0] = f"{output}_index", gathered
        if opset >= 13:
            model.graph.initializer.append(numpy_helper.from_array(np.array([axis], np.int64), f"{output}_axes"))
            nodes.append(helper.make_node("Squeeze", [gathered, f"{output}_axes"], [output]))
        else:
            nodes.append(helper.make_node("Squeeze", [gathered], [output], axes=[axis]))
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    return model


@add_converter("Gather", 1)
def gather(attrs, inputs, importer):
    """ONNX Gather -> `take` in wrap mode, which reads a negative index from the end as ONNX does (an index out of
    range is an error in ONNX, so wrapping changes nothing else); the importer's uses clip mode (-1 as 0)."""
    return symbols().take(inputs[0], inputs[1], axis=int(attrs.get("axis", 0)), mode="wrap"), attrs, inputs


@add_converter("Where", 9)
def where(attrs, inputs, importer):
    """ONNX Where (the importer has none): MXNet's `where` takes operands of one shape, so each is broadcast to
    the shape of all three first (adding zeros of the others' shapes: x + 0 is x)."""
    sym = symbols()
    condition, x, y = inputs
    zeros = sym.broadcast_add(sym.broadcast_add(sym.zeros_like(condition), sym.zeros_like(x)), sym.zeros_like(y))
    broadcast = [sym.broadcast_add(value, zeros) for value in (condition, x, y)]
    return sym.where(*broadcast), attrs, inputs


@add_converter("CumSum", 11)
def cumsum(attrs, inputs, importer):
    """ONNX CumSum (the importer has none) along a constant axis -> `cumsum`; `exclusive` (each sum without its
    own element) as the sum less the element, `reverse` as the sum of the reversed axis, reversed back."""
    sym = symbols()
    if inputs[1].name not in importer._params:
        raise RosettaError("CumSum along an axis computed at run time cannot be converted to mxnet")
    axis = int(importer._params[inputs[1].name].asnumpy().ravel()[0])
    reverse, x = bool(int(attrs.get("reverse", 0))), inputs[0]
    if reverse:
        x = sym.reverse(x, axis=axis)
    summed = sym.cumsum(x, axis=axis)
    if int(attrs.get("exclusive", 0)):
        summed = summed - x
    return (sym.reverse(summed, axis=axis) if reverse else summed), {}, inputs[:1]


@add_converter("Tile", 1)
def tile(attrs, inputs, importer):
    """ONNX Tile (the importer has none) by constant repeats -> `tile`."""
    if inputs[1].name not in importer._params:
        raise RosettaError("Tile with repeats computed at run time cannot be converted to mxnet")
    repeats = tuple(int(r) for r in importer._params[inputs[1].name].asnumpy().ravel())
    return symbols().tile(inputs[0], reps=repeats), attrs, inputs[:1]


@add_converter("TopK", 10)
def top_k(attrs, inputs, importer):
    """ONNX TopK with a constant k -> `topk` (values and indices, the indices float32 as MXNet carries
    integers); the importer's own passes k as an array ("[6.]", which `topk` refuses) and `largest` through."""
    if inputs[1].name not in importer._params:
        raise RosettaError("TopK with k computed at run time cannot be converted to mxnet")
    k = int(importer._params[inputs[1].name].asnumpy().ravel()[0])
    symbol = symbols().topk(inputs[0], k=k, axis=int(attrs.get("axis", -1)), ret_typ="both",
                            is_ascend=not int(attrs.get("largest", 1)), dtype="float32")
    return symbol, {}, inputs[:1]


@add_converter("RosettaAxisRange", 1)
def axis_range(attrs, inputs, importer):
    """0, 1, ..., n - 1 for the size n of one axis of x (rewrites.axis_ranges: a Range over the run-time batch)
    -> `arange_like` along that axis, float32 as MXNet carries integers."""
    return symbols().contrib.arange_like(inputs[0], axis=int(attrs["axis"])), {}, inputs[:1]


def _arg_extreme(name: str):
    """ONNX ArgMax/ArgMin -> `argmax`/`argmin`, float32 as MXNet carries integers: the importer's own cast the
    index to int64, which an Add with the other integers (float32) then refused (CLIP's pooled token index)."""
    def convert(attrs, inputs, importer):
        find = getattr(symbols(), name)
        return find(inputs[0], axis=int(attrs.get("axis", 0)), keepdims=bool(int(attrs.get("keepdims", 1)))), {}, \
            inputs[:1]
    return convert


add_converter("ArgMax", 1)(_arg_extreme("argmax"))
add_converter("ArgMin", 1)(_arg_extreme("argmin"))


@add_converter("OneHot", 9)
def one_hot(attrs, inputs, importer):
    """ONNX OneHot along the last axis with a constant depth and [off, on] values (the importer has none) ->
    `one_hot`, a negative index counted from the end of the depth as ONNX's (MXNet's leaves it all off, as both
    do an index outside [-depth, depth))."""
    sym = symbols()
    if any(name.name not in importer._params for name in inputs[1:3]):
        raise RosettaError("OneHot with a depth or values computed at run time cannot be converted to mxnet")
    if int(attrs.get("axis", -1)) != -1:
        raise RosettaError("OneHot along another axis than the last cannot be converted to mxnet")
    depth = int(importer._params[inputs[1].name].asnumpy().ravel()[0])
    off, on = (float(v) for v in importer._params[inputs[2].name].asnumpy().ravel())
    indices = inputs[0]
    wrapped = sym.where(indices < 0, indices + depth, indices)
    return sym.one_hot(wrapped, depth=depth, on_value=on, off_value=off, dtype="float32"), {}, inputs[:1]


@add_converter("Split", 1)
def split(attrs, inputs, importer):
    """ONNX Split by the sizes `split_sizes_as_attribute` writes: one slice_axis per output (MXNet's `split`
    takes equal parts only)."""
    sym = symbols()
    if "split" not in attrs:
        raise RosettaError("Split into parts whose sizes are computed at run time cannot be converted to mxnet")
    axis, begin, parts = int(attrs.get("axis", 0)), 0, []
    for size in attrs["split"]:
        parts.append(sym.slice_axis(inputs[0], axis=axis, begin=begin, end=begin + int(size)))
        begin += int(size)
    return sym.Group(parts), attrs, inputs[:1]


@rewrite
def split_sizes_as_attribute(model):
    """MXNet: every Split gets its parts' sizes as the `split` attribute (opset-2 style) and loses its `split`
    input and `num_outputs` attribute: from the constant input, or the axis' static size divided in
    len(outputs) parts (num_outputs from opset 18: ceil parts, the last one smaller). `split` reads it."""
    from onnx import helper

    shapes, constants = static_shapes(model), constant_values(model)
    for node in model.graph.node:
        if node.op_type != "Split":
            continue
        attributes = node_attributes(node)
        axis, parts = attributes.get("axis", 0), len(node.output)
        sizes = attributes.get("split")
        given = len(node.input) > 1 and bool(node.input[1])
        if given:
            sizes = [int(v) for v in constants[node.input[1]]] if node.input[1] in constants else None
        shape = shapes.get(node.input[0])
        if sizes is None and not given and shape is not None and shape[axis] is not None:
            size = -(-shape[axis] // parts)
            sizes = [size] * (parts - 1) + [shape[axis] - size * (parts - 1)]
        if sizes is None:
            continue  # left to the importer, which refuses it
        del node.input[1:]
        for attribute in [a for a in node.attribute if a.name in ("split", "num_outputs")]:
            node.attribute.remove(attribute)
        node.attribute.append(helper.make_attribute("split", sizes))
    return rw.remove_dead_nodes(model)


@add_converter("Pad", 1)
def pad(attrs, inputs, importer):
    """ONNX Pad, its pads and value attributes (before opset 11) or constant inputs (the value omitted: 0), ->
    `pad`, which pads only the spatial axes of 4-D and 5-D tensors and knows constant, edge and reflect: a
    smaller tensor (a 1-D signal's causal padding, HaloNet's 2-D rows) is padded as 4-D with unit axes put
    first and taken away again; a pad of other axes (a channels-last feature map's H and W, as timm's DaViT
    and Swin pad their windows) is done with the padded axes transposed to the end and back; any other pad is
    refused by name here (it would otherwise be refused when run, or be an unknown mode)."""
    sym = symbols()

    def constant(index):
        name = inputs[index].name if len(inputs) > index and inputs[index].name != OMITTED else ""
        if name and name not in importer._params:
            raise RosettaError("Pad with pads or a value computed at run time cannot be converted to mxnet")
        return importer._params[name].asnumpy().ravel() if name else None

    pads = [int(p) for p in (constant(1) if len(inputs) > 1 else attrs.get("pads", ()))]
    value = constant(2)
    value = float(value[0]) if value is not None else float(attrs.get("value", 0.0))
    mode = attrs.get("mode", "constant")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    rank = len(pads) // 2
    axes_given = len(inputs) > 3 and inputs[3].name != OMITTED
    padded = [axis for axis in range(rank) if pads[axis] or pads[rank + axis]]
    unit = max(0, 4 - rank)  # unit axes put first: MXNet pads 4-D and 5-D tensors
    if axes_given or not 1 <= rank <= 5 or len(padded) > rank + unit - 2 or mode not in ("constant", "edge", "reflect"):
        raise RosettaError(f"Pad mode={mode!r} of a {rank}-D tensor with pads {pads}{' on given axes' if axes_given else ''} "
                           "cannot be converted to mxnet: MXNet's pad pads the spatial axes of 4-D and 5-D tensors "
                           "(a smaller one as 4-D, other axes moved there), at most 2 (5-D: 3) of them, in constant, "
                           "edge or reflect mode")
    x = inputs[0]
    order = list(range(rank))
    if any(axis + unit < 2 for axis in padded):  # the padded axes moved last, in their order
        order = [axis for axis in range(rank) if axis not in padded] + padded
        x, pads = sym.transpose(x, axes=tuple(order)), [pads[a] for a in order] + [pads[rank + a] for a in order]
    result = _spatial_pad(sym, x, pads, mode, value)
    if order != list(range(rank)):
        result = sym.transpose(result, axes=tuple(order.index(axis) for axis in range(rank)))
    return result, attrs, inputs[:1]


def _spatial_pad(sym, x, pads: list, mode: str, value: float):
    """MXNet's pad of x's axes after the first two, a tensor of rank below 4 padded as 4-D with unit axes put
    first and taken away again."""
    rank = len(pads) // 2
    unit = max(0, 4 - rank)
    for _ in range(unit):
        x = sym.expand_dims(x, axis=0)
    pads = [0] * unit + pads[:rank] + [0] * unit + pads[rank:]
    width = tuple(p for axis in range(rank + unit) for p in (pads[axis], pads[rank + unit + axis]))
    result = sym.pad(x, mode=mode, pad_width=width, constant_value=value)
    for _ in range(unit):
        result = sym.squeeze(result, axis=0)
    return result
