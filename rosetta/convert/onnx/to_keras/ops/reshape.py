"""Shape, ConstantOfShape, Reshape and Flatten: shapes followed at conversion time (symbolic.py), and
Reshape layers where a shape reaches a tensor.

Flattening a channels-last tensor gives features in (h, w, c) order where the ONNX graph has (c, h, w): when
only Dense layers read the flat tensor, their kernel rows are permuted instead of the data (`feature_order`),
otherwise the tensor is permuted back before flattening."""

from __future__ import annotations

import numpy as np

from rosetta.convert.onnx.to_keras.context import MAX_INDEX, BatchDim, Mapped, product
from rosetta.convert.onnx.to_keras.layout import identity, logical_order, materialize
from rosetta.convert.onnx.to_keras.registry import add_converter
from rosetta.errors import RosettaError
from rosetta.frameworks.onnx_graph import onnx_slice


@add_converter("Shape", 1)
def shape(context, node, attrs):
    """The shape of a tensor, its batch size a BatchDim: followed at conversion time, no layer."""
    dims = np.empty(len(context.values[node.input[0]].axes), dtype=object)
    dims[:] = context.dims(node.input[0])
    start, end = attrs.get("start", 0), attrs.get("end")
    context.store_symbolic(node.output[0], dims[onnx_slice(start, MAX_INDEX if end is None else end, 1, len(dims))])
    return []


@add_converter("Size", 1)
def size(context, node, attrs):
    """The element count of a tensor, followed at conversion time as Shape is (a constant once no batch size of
    unknown size is in it)."""
    count = np.empty((), dtype=object)
    count[()] = np.prod(np.array(context.dims(node.input[0]), dtype=object)) if context.dims(node.input[0]) else 1
    context.store_symbolic(node.output[0], count)
    return []


@add_converter("ConstantOfShape", 9)
def constant_of_shape(context, node, attrs):
    raise RosettaError("keras mapper: ConstantOfShape of a shape not known at conversion time is not supported")


def flatten_batch_first(context, node, x: Mapped) -> list:
    """(N, ...) -> (N, features), in ONNX's (logical) element order."""
    shape = context.static_shape(node.input[0])
    if None in x.axes[1:] and x.axes[0] is not None:  # size-1 virtual axes do not change the flat order
        shape = [d for d, k in zip(shape, x.axes) if k is not None]
        x = Mapped(x.tensor, tuple(k for k in x.axes if k is not None), x.feature_order, x.nonnegative)
    rank = len(x.axes)
    if rank == 1:  # (N,) -> (N, 1): a virtual axis of size 1
        return [Mapped(x.tensor, (x.axes[0], None), x.feature_order, x.nonnegative)]
    flatten = lambda tensor: context.keras.layers.Flatten(name=context.name("flatten"))(tensor)  # noqa: E731
    if x.axes == identity(rank) or rank == 2 and x.axes == (0, 1):
        return [Mapped(flatten(x.tensor) if rank > 2 else x.tensor, (0, 1), x.feature_order, x.nonnegative)]
    if None in x.axes or None in shape[1:]:
        raise RosettaError("keras mapper: flatten of a tensor with virtual axes or unknown sizes")
    # ONNX flattens in logical order; Keras in its own. Record how they differ for the Dense that reads it.
    logical_index = np.arange(int(np.prod(shape[1:]))).reshape(shape[1:])
    keras_order = [logical for _, logical in sorted((k, l) for l, k in enumerate(x.axes) if l != 0)]
    order = logical_index.transpose([l - 1 for l in keras_order]).ravel()
    readers = context.consumers.get(node.output[0], [])
    in_order = np.array_equal(order, np.arange(order.size))
    if in_order or (readers and all(r in ("Gemm", "MatMul") for r in readers)):
        return [Mapped(flatten(x.tensor), (0, 1), None if in_order else order, x.nonnegative)]
    x = materialize(context, x, identity(rank))
    return [Mapped(flatten(x.tensor), (0, 1), None, x.nonnegative)]


@add_converter("Flatten", 1)
def flatten_op(context, node, attrs):
    """Flatten at axis 1 as a Flatten layer (in ONNX's element order); at another axis, keras.ops.reshape to the
    two products (the one holding a batch of unknown size as -1)."""
    x = context.values[node.input[0]]
    axis = attrs.get("axis", 1)
    axis = axis + len(x.axes) if axis < 0 else axis
    if axis == 1:
        return flatten_batch_first(context, node, x)
    dims = context.dims(node.input[0])
    before, after = product(dims[:axis]), product(dims[axis:])
    shape = [-1 if before[0] is not None else before[1], -1 if after[0] is not None else after[1]]
    if shape.count(-1) > 1:
        raise RosettaError("keras mapper: Flatten of a tensor holding the batch twice")
    x = logical_order(context, x)
    # the axis of unknown size holds the batch times the known sizes flattened with it
    multiple = before[0] * before[1] if before[0] else after[0] * after[1] if after[0] else None
    return [Mapped(context.keras.ops.reshape(x.tensor, shape), identity(2), batch_multiple=multiple)]


def _keeps_the_batch_and_flattens(target: list, source: list) -> bool:
    """Whether Reshape(x, target) of x (N, ...) is (N, the product of the rest): [0, -1], [0, P] or [-1, P]
    with P that product. [-1, K] with K another size merges the batch into the rows (Hugging Face's
    `x.view(-1, x.size(-1))`): not a flatten."""
    if len(target) != 2 or any(isinstance(d, BatchDim) or d is None for d in source[1:]):
        return False
    if isinstance(target[0], BatchDim) or isinstance(target[1], BatchDim):
        return False
    rest = int(np.prod([int(d) for d in source[1:]]))
    first, second = int(target[0]), int(target[1])
    return (first == 0 and second in (-1, rest)) or (first == -1 and second in (-1, rest))


@add_converter("Reshape", 5, reads_symbolic=True)
def reshape(context, node, attrs):
    """A Reshape that keeps the batch on an axis of its own is a Reshape layer (the batch axis first in
    Keras); one that merges the batch with another axis (attention's heads) is keras.ops.reshape with -1
    for the merged axis, exact because ONNX requires the sizes to multiply to the same count."""
    target = context.shape_value(node.input[1], "Reshape shape")
    x = context.values[node.input[0]]
    source = context.dims(node.input[0])
    if node.input[1] in context.constants and source[0] == BatchDim(1) and x.axes[0] == 0 and \
            _keeps_the_batch_and_flattens(target, source):
        return flatten_batch_first(context, node, x)
    if not attrs.get("allowzero", 0):
        target = [source[i] if not isinstance(d, BatchDim) and d == 0 else d for i, d in enumerate(target)]
    total_multiple, total = product(source)
    if any(not isinstance(d, BatchDim) and d == -1 for d in target):
        known_multiple, known = product([d for d in target if isinstance(d, BatchDim) or d != -1])
        if total_multiple is None or known_multiple is not None:
            missing = (total * (total_multiple or 1)) // (known * (known_multiple or 1))
        else:
            missing = BatchDim(total_multiple * total) // known  # the batch x the static sizes, over the known
        target = [missing if not isinstance(d, BatchDim) and d == -1 else d for d in target]
    target_multiple, _ = product(target)
    batch = [i for i, d in enumerate(source) if isinstance(d, BatchDim)]
    merged = [i for i, d in enumerate(target) if isinstance(d, BatchDim)]
    if total_multiple is None and target_multiple is None:  # no batch of unknown size: a static reshape
        x = logical_order(context, x)
        return [Mapped(context.keras.ops.reshape(x.tensor, [int(d) for d in target]), identity(len(target)))]
    if total_multiple is None or target_multiple is None:
        raise RosettaError("keras mapper: Reshape of a tensor without a batch axis, or into one without it")
    b, c = batch[0], merged[0]
    if total_multiple == target_multiple and product(source[:b])[1] == product(target[:c])[1] \
            and x.axes[b] is not None:
        # the axes before the batch and those after it are reshaped separately: a Reshape layer
        order = iter(range(1, len(source)))
        x = materialize(context, x, tuple(0 if i == b else None if k is None else next(order)
                                          for i, k in enumerate(x.axes)))
        kept = [int(d) for i, d in enumerate(target) if i != c]
        tensor = context.keras.layers.Reshape(kept, name=context.name("reshape"))(x.tensor)
        order = iter(range(1, len(target)))
        return [Mapped(tensor, tuple(0 if i == c else next(order) for i in range(len(target))),
                       batch_multiple=target_multiple)]
    x = logical_order(context, x)
    tensor = context.keras.ops.reshape(x.tensor, [-1 if isinstance(d, BatchDim) else int(d) for d in target])
    return [Mapped(tensor, identity(len(target)), batch_multiple=target_multiple)]
