"""Layouts: where each ONNX axis lives in Keras, and the moves and paddings between layouts.

Keras on CPU convolves channels-last, and Keras tensors always keep the batch on axis 0. Each ONNX tensor is
tracked as a Keras tensor plus `axes`: for each ONNX (logical) axis, the Keras axis that holds it, or None for a
size-1 axis that has no Keras axis. So an NCHW tensor lives as NHWC with axes (0, 3, 1, 2), an NCW one as NWC
with (0, 2, 1), a Transpose only rewrites `axes` (no layer), and a Permute layer is inserted only where an op
needs a particular order (`materialize`). ONNX pads [begin..., end...] become Keras' 'same' where that is what
they mean, else an explicit ZeroPadding."""

from __future__ import annotations

import math

import numpy as np

from rosetta.convert.onnx.to_keras.context import Mapped, MappingContext
from rosetta.errors import RosettaError


def identity(rank: int) -> tuple:
    return tuple(range(rank))


def channels_last(rank: int) -> tuple:
    """The axes of an ONNX (N, C, spatial...) tensor held as Keras (N, spatial..., C)."""
    return (0, rank - 1) + tuple(range(1, rank - 1))


def pairs(begins, ends):
    """(begin, end) per spatial axis as Keras' ZeroPadding/Cropping layers take it (a bare pair in 1-D)."""
    found = tuple((int(b), int(e)) for b, e in zip(begins, ends))
    return found[0] if len(found) == 1 else found


def same_pads(sizes: list, kernel: list, strides: list) -> list:
    """The pads [begin..., end...] that TensorFlow's (and so Keras') padding='same' uses."""
    totals = [max((math.ceil(n / s) - 1) * s + k - n, 0) for n, k, s in zip(sizes, kernel, strides)]
    return [t // 2 for t in totals] + [t - t // 2 for t in totals]


def materialize(context: MappingContext, mapped: Mapped, wanted: tuple) -> Mapped:
    """The same ONNX tensor with its Keras axes in the order `wanted` (same virtual axes)."""
    if mapped.axes == wanted:
        return mapped
    if any(a is not None and w is None for a, w in zip(mapped.axes, wanted)) or len(mapped.axes) != len(wanted):
        raise RosettaError(f"keras mapper: cannot move between layouts {mapped.axes} and {wanted}")
    if any(a is None and w is not None for a, w in zip(mapped.axes, wanted)):
        mapped = realize(context, mapped, [i for i, (a, w) in enumerate(zip(mapped.axes, wanted))
                                           if a is None and w is not None])
        if mapped.axes == wanted:
            return mapped
    if mapped.feature_order is not None:
        raise RosettaError("keras mapper: a channels-last flattened tensor is used by an op other than Dense")
    real = [(w, a) for w, a in zip(wanted, mapped.axes) if w is not None]
    source_of = dict(real)  # new keras position -> old keras position
    if source_of.get(0) != 0:  # Permute keeps Keras axis 0; a transpose that moves it is an op
        tensor = context.keras.ops.transpose(mapped.tensor, tuple(source_of[p] for p in range(len(real))))
    else:
        permutation = tuple(source_of[p] for p in range(1, len(real)))
        tensor = context.keras.layers.Permute(permutation, name=context.name("permute"))(mapped.tensor)
    return Mapped(tensor, wanted, None, mapped.nonnegative, mapped.batch_multiple)


def realize(context: MappingContext, mapped: Mapped, logical_axes: list) -> Mapped:
    """Virtual size-1 axes given Keras axes of their own, appended last (a 1-D conv exported as 2-D)."""
    if mapped.feature_order is not None:
        raise RosettaError("keras mapper: a channels-last flattened tensor is used by an op other than Dense")
    shape = list(mapped.tensor.shape)
    if None in shape[1:]:
        tensor = context.keras.ops.reshape(mapped.tensor, [-1] + shape[1:] + [1] * len(logical_axes))
    else:
        tensor = context.keras.layers.Reshape(shape[1:] + [1] * len(logical_axes),
                                              name=context.name("reshape"))(mapped.tensor)
    added = {axis: len(shape) + i for i, axis in enumerate(logical_axes)}
    return Mapped(tensor, tuple(added.get(i, k) for i, k in enumerate(mapped.axes)), None, mapped.nonnegative,
                  mapped.batch_multiple)


def logical_order(context: MappingContext, mapped: Mapped) -> Mapped:
    """The tensor with its real Keras axes in ONNX order (virtual axes stay virtual: same element order)."""
    order = iter(range(len(mapped.axes)))
    return materialize(context, mapped, tuple(None if k is None else next(order) for k in mapped.axes))


def onnx_order(context: MappingContext, mapped: Mapped) -> Mapped:
    """The tensor with every ONNX axis a Keras axis of its own, in ONNX order: the layout in which keras.ops
    compute what ONNX's numpy-style ops do (broadcasting, axes, reductions)."""
    return materialize(context, mapped, identity(len(mapped.axes)))


def operands(context: MappingContext, names) -> list:
    """The inputs called `names` for a keras.ops computation in ONNX's layout: a constant as its array (Keras
    keeps it in the model's config), a tensor in ONNX order (onnx_order), an omitted input as None."""
    return [None if not name else context.constants[name] if name in context.constants
            else onnx_order(context, context.values[name]).tensor for name in names]


def add(ops, a, b):
    """a + b by keras.ops, as a - (-b), the same sum bit for bit: keras.ops.add on TensorFlow takes a `b` with one
    axis of size > 1 for a bias of the last axis whenever that size is the last axis' (tf.nn.bias_add, Keras
    3.15), so (3, 4, 4) + (1, 4, 1) silently adds along the wrong axis."""
    return ops.subtract(a, ops.negative(b))


def in_onnx_order(tensor) -> Mapped:
    """A keras.ops result computed in ONNX's layout."""
    return Mapped(tensor, identity(len(tensor.shape)))


def zero_padding(context: MappingContext, x: Mapped, pads: list) -> Mapped:
    """ZeroPaddingND of a channels-last tensor by ONNX spatial pads [begin..., end...]."""
    spatial = len(pads) // 2
    layer = context.spatial_layer("ZeroPadding{}D", spatial, "pad", pairs(pads[:spatial], pads[spatial:]))
    return Mapped(layer(x.tensor), x.axes, None, x.nonnegative)


def explicit_padding(context: MappingContext, x: Mapped, pads: list, kernel: list, strides: list,
                     dilations=None) -> tuple[Mapped, str]:
    """ONNX pads [begin..., end...] -> 'same' where that is what they mean, else ZeroPadding + 'valid'."""
    if not any(pads):
        return x, "valid"
    spatial = len(kernel)
    effective = [(k - 1) * d + 1 for k, d in zip(kernel, dilations or [1] * spatial)]
    same = all(s == 1 for s in strides) and all(
        e % 2 == 1 and begin == end == e // 2 for e, begin, end in zip(effective, pads[:spatial], pads[spatial:]))
    if same:
        return x, "same"
    return zero_padding(context, x, pads), "valid"


def keras_constant(context: MappingContext, x: Mapped, x_name: str, value: np.ndarray, op: str):
    """A constant operand of an elementwise op with `x`, laid out to broadcast against x's Keras tensor
    (batch axis dropped); a float when it is one number."""
    value = np.asarray(value, dtype=np.float32)
    if value.size == 1:
        return float(value.reshape(()))
    rank = len(x.axes)
    if value.ndim > rank:
        raise RosettaError(f"keras mapper: {op} with a constant of higher rank than its tensor operand")
    value = value.reshape((1,) * (rank - value.ndim) + value.shape)
    sizes = context.shapes.get(x_name) or [None] * rank
    for axis, (size, tensor_size) in enumerate(zip(value.shape, sizes)):
        if size != 1 and (axis == 0 or x.axes[axis] in (None, 0) or size != tensor_size):
            raise RosettaError(f"keras mapper: {op}'s constant operand must broadcast to the shape of its "
                               f"tensor operand without enlarging it or varying over the batch")
    real = [axis for axis, k in enumerate(x.axes) if k is not None]
    value = value.reshape([value.shape[axis] for axis in real]).transpose(np.argsort([x.axes[a] for a in real]))
    if x.feature_order is not None:
        value = value[:, x.feature_order]  # follow the Keras feature order of a channels-last flatten
    return value[0]
