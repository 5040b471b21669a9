"""Ops that move or select elements: Identity, Dropout, Cast, Slice, Concat, Split, Transpose, Squeeze,
Unsqueeze, Gather (an embedding lookup, one index along an axis, or keras.ops.take), GatherElements, Tile, Expand,
Trilu and Einsum. A Transpose, an Unsqueeze and the Squeeze of a virtual axis only rewrite the tensor's `axes`
(layout.py): no layer."""

from __future__ import annotations

import numpy as np

from rosetta.convert.onnx.to_keras.context import BatchDim, Mapped
from rosetta.convert.onnx.to_keras.layout import identity, in_onnx_order, materialize, onnx_order, operands, realize
from rosetta.convert.onnx.to_keras.registry import add_converter
from rosetta.convert.onnx.to_keras.symbolic import slice_parameters, whole_axis
from rosetta.errors import RosettaError
from rosetta.frameworks.onnx_graph import onnx_slice


@add_converter("Identity", 1)
def identity_op(context, node, attrs):
    return [context.values[node.input[0]]]


@add_converter("Dropout", 1)
def dropout(context, node, attrs):
    """Dropout at inference: a Keras Dropout layer (identity unless training). Its ratio is an attribute
    before opset 12 and an optional input from 12, which also adds training_mode."""
    rate = attrs.get("ratio", 0.5)
    if len(node.input) > 1 and node.input[1]:
        rate = float(context.constant(node.input[1], "Dropout ratio"))
    if len(node.input) > 2 and node.input[2] and bool(context.constant(node.input[2], "Dropout training_mode")):
        raise RosettaError("keras mapper: Dropout with training_mode true (dropout at inference too) has no "
                           "Keras layer that honours it; export in eval or preserve mode")
    x = context.values[node.input[0]]
    layer = context.keras.layers.Dropout(rate, name=context.name("dropout"))
    return [Mapped(layer(x.tensor), x.axes, x.feature_order)]


@add_converter("Cast", 6)
def cast(context, node, attrs):
    """Cast of a tensor: exact in keras.ops.cast (float to int truncates toward zero, as ONNX says)."""
    import onnx

    x = context.values[node.input[0]]
    dtype = onnx.helper.tensor_dtype_to_np_dtype(attrs["to"]).name
    if str(x.tensor.dtype) == dtype:
        return [x]
    return [Mapped(context.keras.ops.cast(x.tensor, dtype), x.axes, x.feature_order, x.nonnegative)]


@add_converter("CastLike", 15)
def cast_like(context, node, attrs):
    """Cast to the element type of the second input (a tensor's or a constant's)."""
    target = context.constants[node.input[1]].dtype if node.input[1] in context.constants \
        else context.values[node.input[1]].tensor.dtype
    x = context.values[node.input[0]]
    if str(x.tensor.dtype) == str(target):
        return [x]
    return [Mapped(context.keras.ops.cast(x.tensor, str(target)), x.axes, x.feature_order, x.nonnegative)]


def _slice(context, node, parameters: list) -> list:
    """Slice of a tensor by constant bounds, as Keras tensor indexing (the batch axis only whole)."""
    x = context.values[node.input[0]]
    rank = len(x.axes)
    dims = context.dims(node.input[0])
    index = [slice(None)] * len([k for k in x.axes if k is not None])
    for start, end, axis, step in zip(*slice_parameters(parameters)):
        start, end, axis, step = int(start), int(end), int(axis) % rank, int(step)
        if isinstance(dims[axis], BatchDim):
            if not whole_axis(start, end, step):
                raise RosettaError("keras mapper: Slice of the batch axis is not supported")
            continue
        picked = onnx_slice(start, end, step, dims[axis])
        if x.axes[axis] is None:
            if len(range(1)[picked]) != 1:
                raise RosettaError("keras mapper: Slice to an empty tensor is not supported")
            continue
        if x.feature_order is not None:
            raise RosettaError("keras mapper: Slice of a channels-last flattened tensor is not supported")
        index[x.axes[axis]] = picked
    if all(i == slice(None) for i in index):
        return [x]
    return [Mapped(x.tensor[tuple(index)], x.axes, None, x.nonnegative)]


@add_converter("Slice", 1)
def slice_attributes(context, node, attrs):
    """Slice before opset 10: starts, ends and axes are attributes."""
    return _slice(context, node, [attrs["starts"], attrs["ends"], attrs.get("axes")])


@add_converter("Slice", 10)
def slice_inputs(context, node, attrs):
    """Slice from opset 10: starts, ends, axes and steps are inputs, constants here."""
    bounds = [context.constant(name, "Slice bounds") for name in node.input[1:3]]
    return _slice(context, node, bounds + [context.optional_constant(node, index, f"Slice {what}")
                                           for index, what in ((3, "axes"), (4, "steps"))])


@add_converter("Concat", 4)
def concat(context, node, attrs):
    """Concatenate layer of tensors along a real, non-batch axis; keras.ops.concatenate in ONNX's layout for the
    rest (constants among the parts, the batch axis of a static batch)."""
    axis = attrs["axis"]
    if all(name in context.values for name in node.input):
        parts = [context.values[name] for name in node.input]
        first = parts[0]
        axis %= len(first.axes)
        if not isinstance(context.dims(node.input[0])[axis], BatchDim) and first.axes[axis] not in (None, 0) and \
                all(p.feature_order is None for p in parts):
            if len(parts) == 1:
                return [first]
            tensors = [first.tensor] + [materialize(context, p, first.axes).tensor for p in parts[1:]]
            tensor = context.keras.layers.Concatenate(axis=first.axes[axis], name=context.name("concat"))(tensors)
            return [Mapped(tensor, first.axes, None, all(p.nonnegative for p in parts))]
    values = operands(context, node.input)
    rank = len(next(v for v in values if not isinstance(v, np.ndarray)).shape)
    return [in_onnx_order(context.keras.ops.concatenate(values, axis=axis % rank))]


def _split(context, node, sizes: list | None, axis: int, parts: int | None = None) -> list:
    """The parts of a Split as slices of the Keras tensor along the axis holding ONNX `axis` (sizes None: the
    axis in len(outputs) parts, or `parts` of ceil(size / parts), the last one smaller)."""
    x = context.values[node.input[0]]
    axis %= len(x.axes)
    size = context.dims(node.input[0])[axis]
    if isinstance(size, BatchDim) or x.feature_order is not None:
        raise RosettaError("keras mapper: Split along the batch axis, or of a channels-last flattened tensor, is "
                           "not supported")
    if sizes is None:
        count = parts or len(node.output)
        chunk = -(-size // count)
        sizes = [chunk] * (count - 1) + [size - chunk * (count - 1)]
    if x.axes[axis] is None:
        x = realize(context, x, [axis])
    begin, results = 0, []
    for part in sizes:
        index = [slice(None)] * len([k for k in x.axes if k is not None])
        index[x.axes[axis]] = slice(begin, begin + int(part))
        results.append(Mapped(x.tensor[tuple(index)], x.axes, None, x.nonnegative))
        begin += int(part)
    return results


@add_converter("Split", 2)
def split_attribute(context, node, attrs):
    """Split before opset 13: the parts' sizes are an attribute (equal parts when absent)."""
    return _split(context, node, attrs.get("split"), attrs.get("axis", 0))


@add_converter("Split", 13)
def split_input(context, node, attrs):
    """Split from opset 13: the sizes an optional input; from 18, num_outputs parts otherwise."""
    sizes = context.optional_constant(node, 1, "Split sizes")
    return _split(context, node, None if sizes is None else [int(v) for v in np.ravel(sizes)], attrs.get("axis", 0),
                  attrs.get("num_outputs"))


@add_converter("Tile", 6)
def tile(context, node, attrs):
    repeats = [int(v) for v in np.ravel(context.constant(node.input[1], "Tile repeats"))]
    return [in_onnx_order(context.keras.ops.tile(operands(context, node.input[:1])[0], repeats))]


@add_converter("Expand", 8, reads_symbolic=True)
def expand(context, node, attrs):
    """Expand to a shape known at conversion time: x times ones of that shape (x * 1 is x, and the result
    broadcasts both ways as Expand does); for booleans, x and True. A shape holding the run-time batch (Hugging
    Face's mask[:, None, None, :].expand(batch, 1, T, T)) keeps the batch where x's own axis holds it: 1 there."""
    shape = context.shape_value(node.input[1], "Expand shape")
    if any(isinstance(size, BatchDim) for size in shape):
        dims = context.dims(node.input[0])
        offset = len(shape) - len(dims)
        if any(isinstance(size, BatchDim) and (k < offset or dims[k - offset] != size) for k, size in enumerate(shape)):
            raise RosettaError("keras mapper: Expand to the run-time batch size is supported on an axis that already "
                               "holds it only")
        shape = [1 if isinstance(size, BatchDim) else size for size in shape]
    shape = [int(size) for size in shape]
    x = operands(context, node.input[:1])[0]
    ops, dtype = context.keras.ops, str(x.dtype)
    if dtype == "bool":
        return [in_onnx_order(ops.logical_and(x, np.ones(shape, bool)))]
    return [in_onnx_order(ops.multiply(x, np.ones(shape, dtype)))]


@add_converter("RosettaAxisRange", 1)
def axis_range(context, node, attrs):
    """0, 1, ..., n - 1 for the size n of one axis of x (rewrites.axis_ranges: a Range over the run-time
    batch): ones along that axis (ones_like reads no value, so NaN or Inf in x does not spread), summed in turn."""
    from onnx import helper

    x = onnx_order(context, context.values[node.input[0]])
    ops, axis = context.keras.ops, attrs["axis"] % len(x.axes)
    ones = ops.ones_like(x.tensor, dtype="float32")
    others = tuple(k for k in range(len(x.axes)) if k != axis)
    ones = ops.max(ones, axis=others) if others else ones
    dtype = helper.tensor_dtype_to_np_dtype(attrs["to"]).name
    return [in_onnx_order(ops.cast(ops.subtract(ops.cumsum(ones, axis=0), 1.0), dtype))]


@add_converter("Trilu", 14)
def trilu(context, node, attrs):
    """The upper (triu) or lower (tril) triangle of the last two axes, from the k-th diagonal (a constant)."""
    k = context.optional_constant(node, 1, "Trilu k")
    x = operands(context, node.input[:1])[0]
    triangle = context.keras.ops.triu if attrs.get("upper", 1) else context.keras.ops.tril
    return [in_onnx_order(triangle(x, 0 if k is None else int(np.ravel(k)[0])))]


@add_converter("Einsum", 12)
def einsum(context, node, attrs):
    """keras.ops.einsum, the equation without spaces and in lower-case letters: ONNX allows both ("B G H I D,
    B G H J D -> ...", as torchvision's MaxViT writes it), and Keras reads a space as a subscript and fails to
    infer the shape of upper-case ones."""
    equation = attrs["equation"].decode() if isinstance(attrs["equation"], bytes) else attrs["equation"]
    equation = "".join(equation.split())
    letters = list(dict.fromkeys(c for c in equation if c.isalpha()))
    if len(letters) > 26:
        raise RosettaError("keras mapper: Einsum of more than 26 subscripts is not supported")
    equation = equation.translate(str.maketrans(dict(zip(letters, "abcdefghijklmnopqrstuvwxyz"))))
    return [in_onnx_order(context.keras.ops.einsum(equation, *operands(context, node.input)))]


@add_converter("Transpose", 1)
def transpose(context, node, attrs):
    x = context.values[node.input[0]]
    perm = attrs.get("perm", list(reversed(range(len(x.axes)))))
    return [Mapped(x.tensor, tuple(x.axes[p] for p in perm), x.feature_order, x.nonnegative)]


def _squeeze(context, node, axes: list) -> list:
    x = context.values[node.input[0]]
    axes = sorted(ax % len(x.axes) for ax in axes)
    if any(x.axes[ax] is not None for ax in axes):
        # dropping size-1 Keras axes keeps the element order: the others keep their relative order
        dropped = sorted(x.axes[ax] for ax in axes if x.axes[ax] is not None)
        shape = list(x.tensor.shape)
        if 0 in dropped or None in shape[1:]:
            tensor = context.keras.ops.squeeze(x.tensor, axis=tuple(dropped))
        else:
            kept = [d for k, d in enumerate(shape) if k not in dropped][1:]
            tensor = context.keras.layers.Reshape(kept, name=context.name("squeeze"))(x.tensor)
        renumber = lambda k: None if k is None else k - sum(d < k for d in dropped)  # noqa: E731
        return [Mapped(tensor, tuple(renumber(k) for i, k in enumerate(x.axes) if i not in axes))]
    return [Mapped(x.tensor, tuple(k for i, k in enumerate(x.axes) if i not in axes), x.feature_order, x.nonnegative)]


def _unsqueeze(context, node, added: list) -> list:
    x = context.values[node.input[0]]
    axes = list(x.axes)
    rank = len(axes) + len(added)
    for ax in sorted(ax % rank for ax in added):
        axes.insert(ax, None)
    return [Mapped(x.tensor, tuple(axes), x.feature_order, x.nonnegative)]


def _axes_input(context, node, what: str) -> list:
    return [int(v) for v in np.atleast_1d(context.constant(node.input[1], f"{what} axes"))]


@add_converter("Squeeze", 1)
def squeeze_attribute(context, node, attrs):
    """Squeeze before opset 13: its axes are an attribute (every size-1 axis when absent)."""
    if "axes" not in attrs:
        return _squeeze(context, node, [i for i, d in enumerate(context.static_shape(node.input[0])) if d == 1])
    return _squeeze(context, node, list(attrs["axes"]))


@add_converter("Squeeze", 13)
def squeeze_input(context, node, attrs):
    """Squeeze from opset 13: its axes are an optional input (every size-1 axis when omitted)."""
    if len(node.input) < 2 or not node.input[1]:
        return squeeze_attribute(context, node, {})
    return _squeeze(context, node, _axes_input(context, node, "Squeeze"))


@add_converter("Unsqueeze", 1)
def unsqueeze_attribute(context, node, attrs):
    return _unsqueeze(context, node, list(attrs["axes"]))


@add_converter("Unsqueeze", 13)
def unsqueeze_input(context, node, attrs):
    return _unsqueeze(context, node, _axes_input(context, node, "Unsqueeze"))


def _take_any(context, node, axis: int) -> list:
    """Gather by keras.ops.take in ONNX's layout (negative indices read from the end, as ONNX's)."""
    data, indices = operands(context, node.input[:2])
    rank = len(data.shape)
    return [in_onnx_order(context.keras.ops.take(data, indices, axis=axis % rank))]


@add_converter("Gather", 1)
def gather(context, node, attrs):
    """An embedding (a constant 2-D table read along axis 0: a trainable Embedding layer), one constant index
    along an axis (a crop or keras.ops.take), or keras.ops.take of anything else."""
    axis = attrs.get("axis", 0)
    if node.input[0] in context.constants:  # a lookup table: an embedding
        table = context.constants[node.input[0]]
        indices = context.values[node.input[1]]
        if axis != 0 or table.ndim != 2 or indices.axes != identity(len(indices.axes)) or \
                not str(table.dtype).startswith("float"):
            return _take_any(context, node, axis)
        layer = context.keras.layers.Embedding(table.shape[0], table.shape[1], name=context.name("embedding"))
        tensor = layer(indices.tensor)
        layer.set_weights([table])
        return [Mapped(tensor, identity(len(indices.axes) + 1))]
    # picking one index along an axis (e.g. the last time step): Cropping1D on Keras axis 1 of a 3-D tensor
    index = context.constants.get(node.input[1])
    x = context.values[node.input[0]]
    if index is None or index.ndim != 0 or isinstance(context.dims(node.input[0])[axis % len(x.axes)], BatchDim):
        return _take_any(context, node, axis)
    if len([k for k in x.axes if k is not None]) != 3 or x.axes[axis] is None or x.tensor.shape[0] is not None:
        return [_take(context, node, x, axis, int(index))]
    keras_axis = x.axes[axis]
    if keras_axis not in (1, 2):
        raise RosettaError("keras mapper: Gather along the batch axis is not supported")
    if keras_axis == 2:
        wanted = tuple({1: 2, 2: 1}.get(k, k) for k in x.axes)
        x = materialize(context, x, wanted)
    size = context.static_shape(node.input[0])[axis]
    i = int(index) % size
    cropped = context.keras.layers.Cropping1D((i, size - 1 - i), name=context.name("pick"))(x.tensor)
    features = context.static_shape(node.input[0])[[l for l, k in enumerate(x.axes) if k == 2][0]]
    tensor = context.keras.layers.Reshape((features,), name=context.name("reshape"))(cropped)
    remaining = [k for l, k in enumerate(x.axes) if l != axis]
    return [Mapped(tensor, tuple(None if k is None else (k if k < 1 else k - 1) for k in remaining))]


@add_converter("GatherElements", 11)
def gather_elements(context, node, attrs):
    """x's elements at `indices` along `axis` (keras.ops.take_along_axis; a negative index counts from the end),
    as Hugging Face decoders and RoBERTa-style position ids pick them. The indices may be shorter than x on the
    other axes (the output has their shape): x is cut to them there first."""
    x, indices = operands(context, node.input[:2])
    ops, rank = context.keras.ops, len(x.shape)
    axis = attrs.get("axis", 0) % rank
    size = x.shape[axis]
    if size is None:
        raise RosettaError("keras mapper: GatherElements along the batch axis is not supported")
    size = int(size)
    cut = tuple(slice(None) if a == axis or i is None or x.shape[a] is None or int(i) >= int(x.shape[a])
                else slice(0, int(i)) for a, i in enumerate(indices.shape))
    if any(part != slice(None) for part in cut):
        x = x[cut]
    if isinstance(indices, np.ndarray):
        indices = np.where(indices < 0, indices + size, indices)
    else:
        indices = ops.where(ops.less(indices, 0), ops.add(indices, size), indices)
    return [in_onnx_order(ops.take_along_axis(x, indices, axis=axis))]


@add_converter("GatherND", 12)
def gather_nd(context, node, attrs):
    """data's slices at `indices` (their last axis indexes data's first k axes; batch_dims 0), as keras.ops.take
    of data with those k axes flattened into one, by each index's flat position: the dynamo exporter's advanced
    indexing (x[rows, columns]). The strides need data's sizes after its first axis."""
    if attrs.get("batch_dims", 0):
        raise RosettaError("keras mapper: GatherND with batch_dims is not supported")
    data, indices = operands(context, node.input[:2])
    ops = context.keras.ops
    k = indices.shape[-1]
    sizes = list(data.shape)
    if k is None or any(size is None for size in sizes[1:]):
        raise RosettaError("keras mapper: GatherND of data of run-time size after its first axis is not supported")
    k = int(k)
    flat = ops.reshape(data, [-1] + [int(size) for size in sizes[k:]])
    indices = ops.cast(indices, "int64")
    position = None
    for axis in range(k):
        index = indices[..., axis]
        if axis:  # a negative index counts from the end of its axis, as ONNX's
            index = ops.where(ops.less(index, 0), ops.add(index, int(sizes[axis])), index)
        stride = int(np.prod([int(size) for size in sizes[axis + 1:k]], dtype=np.int64))
        term = ops.multiply(index, stride) if stride != 1 else index
        position = term if position is None else ops.add(position, term)
    return [in_onnx_order(ops.take(flat, position, axis=0))]


@add_converter("OneHot", 11)
def one_hot(context, node, attrs):
    """OneHot by a constant depth and [off, on] values along `axis`: keras.ops.one_hot, a negative index counted
    from the end of the depth and one outside [-depth, depth) all off, as ONNX says (Gemma's vision tower)."""
    indices = operands(context, node.input[:1])[0]
    depth = int(np.ravel(context.constant(node.input[1], "OneHot depth"))[0])
    values = np.asarray(context.constant(node.input[2], "OneHot values"))
    off, on = (float(v) for v in values.ravel())
    ops = context.keras.ops
    indices = ops.cast(indices, "int64")
    inside = ops.logical_and(ops.greater_equal(indices, -depth), ops.less(indices, depth))
    indices = ops.where(ops.less(indices, 0), ops.add(indices, depth), indices)
    hot = ops.multiply(ops.one_hot(ops.where(inside, indices, 0), depth, dtype="float32"),
                       ops.expand_dims(ops.cast(inside, "float32"), -1))
    result = ops.cast(ops.add(ops.multiply(hot, on - off), off), values.dtype.name)
    axis = attrs.get("axis", -1) % (len(indices.shape) + 1)
    return [in_onnx_order(ops.moveaxis(result, -1, axis))]


@add_converter("ScatterElements", 11)
def scatter_elements(context, node, attrs):
    """data with `updates` written at `indices` along `axis` (a mixture-of-experts router's mask of the chosen
    experts): with the axis moved last, a one-hot of each index marks where its update goes, and where none does
    data is kept. Indices of data's shape on the other axes only (ONNX leaves two writes to one place undefined;
    here they would add)."""
    if attrs.get("reduction", "none") not in ("none", b"none"):
        raise RosettaError(f"keras mapper: ScatterElements with reduction {attrs['reduction']!r} is not supported")
    data, indices, updates = operands(context, node.input[:3])
    ops, rank = context.keras.ops, len(data.shape)
    axis = attrs.get("axis", 0) % rank
    size = data.shape[axis]
    if size is None or any(a != axis and i is not None and d is not None and int(i) != int(d)
                           for a, (i, d) in enumerate(zip(indices.shape, data.shape))):
        raise RosettaError("keras mapper: ScatterElements along the batch axis, or with indices smaller than the "
                           "data on another axis, is not supported")
    size = int(size)
    indices = ops.moveaxis(ops.cast(indices, "int64"), axis, -1)
    indices = ops.where(ops.less(indices, 0), ops.add(indices, size), indices)
    dtype = str(data.dtype) if "float" in str(data.dtype) else "float32"
    hot = ops.one_hot(indices, size, dtype=dtype)  # [..., k, n]
    written = ops.sum(ops.multiply(hot, ops.expand_dims(ops.cast(ops.moveaxis(updates, axis, -1), dtype), -1)), -2)
    hit = ops.greater(ops.max(hot, axis=-2), 0)
    kept = ops.moveaxis(data, axis, -1)
    result = ops.where(hit, ops.cast(written, str(data.dtype)), kept)
    return [in_onnx_order(ops.moveaxis(result, -1, axis))]


@add_converter("ScatterND", 11)
def scatter_nd(context, node, attrs):
    """data with `updates` written at `indices` (keras.ops.scatter_update: the last axis of indices indexes
    data's first axes, as ONNX's): BART's decoder ids shifted right, written at [arange(batch), 1..T-1]."""
    if attrs.get("reduction", "none") not in ("none", b"none"):
        raise RosettaError(f"keras mapper: ScatterND with reduction {attrs['reduction']!r} is not supported")
    data, indices, updates = operands(context, node.input[:3])
    ops = context.keras.ops
    return [in_onnx_order(ops.scatter_update(data, ops.cast(indices, "int64"), updates))]


def _take(context, node, x: Mapped, axis: int, index: int) -> Mapped:
    """One index along a (non-batch) axis, as keras.ops.take (attention's q, k, v from one tensor)."""
    dims = context.dims(node.input[0])
    if isinstance(dims[axis], BatchDim) or x.feature_order is not None:
        raise RosettaError("keras mapper: Gather along the batch axis, or of a channels-last flattened "
                           "tensor, is not supported")
    if not -dims[axis] <= index < dims[axis]:
        raise RosettaError("keras mapper: Gather index out of range")
    keras_axis = x.axes[axis]
    remaining = [k for i, k in enumerate(x.axes) if i != axis]
    if keras_axis is None:
        return Mapped(x.tensor, tuple(remaining), None, x.nonnegative)
    tensor = context.keras.ops.take(x.tensor, index % dims[axis], axis=keras_axis)
    return Mapped(tensor, tuple(None if k is None else k - (k > keras_axis) for k in remaining), None, x.nonnegative)
