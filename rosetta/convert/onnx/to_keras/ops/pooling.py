"""MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool and ReduceMean (as a global average) as Keras'
pooling layers, channels-last."""

from __future__ import annotations

import numpy as np

from rosetta.convert.onnx.to_keras.context import Mapped
from rosetta.convert.onnx.to_keras.layout import channels_last, materialize, same_pads, zero_padding
from rosetta.convert.onnx.to_keras.ops.math import reduction
from rosetta.convert.onnx.to_keras.registry import add_converter
from rosetta.errors import RosettaError
from rosetta.frameworks.onnx_graph import text


def _pool_attributes(node, attrs) -> tuple[list, list, list]:
    kernel = list(attrs["kernel_shape"])
    spatial = len(kernel)
    if any(d != 1 for d in attrs.get("dilations", [1] * spatial)) or text(attrs.get("auto_pad", "NOTSET")) != "NOTSET" \
            or (len(node.output) > 1 and node.output[1]):
        raise RosettaError(f"keras mapper: {node.op_type} with dilations, auto_pad or indices is not supported "
                           f"(Keras' pooling layers have no dilation)")
    return kernel, list(attrs.get("strides", [1] * spatial)), list(attrs.get("pads", [0] * 2 * spatial))


def _ceil_extra(context, node, attrs, kernel, strides, pads) -> list:
    """The pads to add at the end of each spatial axis so that a 'valid' pooling gives ceil_mode's output size:
    ONNX's ceil of the window count, less a last window that would start in the end padding."""
    if not attrs.get("ceil_mode", 0):
        return [0] * len(kernel)
    sizes = context.static_shape(node.input[0])[2:]
    if None in sizes:
        raise RosettaError(f"keras mapper: {node.op_type} with ceil_mode of an input of unknown spatial size")
    spatial, extra = len(kernel), []
    for axis, (size, k, stride) in enumerate(zip(sizes, kernel, strides)):
        begin, end = pads[axis], pads[spatial + axis]
        count = -(-(size + begin + end - k) // stride) + 1
        if (count - 1) * stride >= size + begin:
            count -= 1
        extra.append(max(0, (count - 1) * stride + k - (size + begin + end)))
    return extra


def _padded(context, x: Mapped, begins: list, ends: list, value: float) -> Mapped:
    """A channels-last tensor padded on its spatial axes with `value` (keras.ops.pad)."""
    widths = [(0, 0)] + [(int(b), int(e)) for b, e in zip(begins, ends)] + [(0, 0)]
    return Mapped(context.keras.ops.pad(x.tensor, widths, constant_values=value), x.axes, None, x.nonnegative)


@add_converter("MaxPool", 1)
def max_pool(context, node, attrs):
    """MaxPoolingND, 'valid'; ONNX's pads (and ceil_mode's extra end) padded with zeros where the input is known
    to be non-negative (a ZeroPadding layer), with -inf otherwise, which never wins the max, as ONNX's pads."""
    kernel, strides, pads = _pool_attributes(node, attrs)
    spatial = len(kernel)
    extra = _ceil_extra(context, node, attrs, kernel, strides, pads)
    x = materialize(context, context.values[node.input[0]], channels_last(spatial + 2))
    ends = [pads[spatial + axis] + extra[axis] for axis in range(spatial)]
    if any(pads[:spatial] + ends):
        if x.nonnegative:
            x = zero_padding(context, x, pads[:spatial] + ends)
        else:
            x = _padded(context, x, pads[:spatial], ends, -np.inf)
    layer = context.spatial_layer("MaxPooling{}D", spatial, "maxpool", kernel, strides=strides, padding="valid")
    return [Mapped(layer(x.tensor), x.axes, None, x.nonnegative)]


def _window_counts(sizes: list, kernel: list, strides: list, counted: list) -> np.ndarray:
    """The number of counted positions under each window of a 'valid' pooling of a padded input of `sizes`
    (counted[axis]: the (begin, end) range of positions that count), as a channels-last (..., 1) array."""
    counts = None
    for size, k, stride, (first, last) in zip(sizes, kernel, strides, counted):
        starts = np.arange(0, size - k + 1, stride)
        per_axis = np.array([max(0, min(s + k, last) - max(s, first)) for s in starts], np.float64)
        counts = per_axis if counts is None else np.multiply.outer(counts, per_axis)
    return counts[..., None]


@add_converter("AveragePool", 1)
def average_pool(context, node, attrs):
    """AveragePoolingND: 'valid' without pads, zero padded where the pads count (count_include_pad=1), 'same'
    where the pads are Keras' own; otherwise (pads that do not count, ceil_mode) the average of the zero-padded
    input times kernel size over the count of positions that do (a constant per window)."""
    kernel, strides, pads = _pool_attributes(node, attrs)
    spatial = len(kernel)
    extra = _ceil_extra(context, node, attrs, kernel, strides, pads)
    x = materialize(context, context.values[node.input[0]], channels_last(spatial + 2))
    include = attrs.get("count_include_pad", 0)
    sizes = context.static_shape(node.input[0])[2:]
    padding = "valid"
    same = None not in sizes and pads == same_pads(sizes, kernel, strides)
    if any(extra) or any(pads) and not include and not same:
        if None in sizes:
            raise RosettaError("keras mapper: AveragePool whose pads do not count, of an input of unknown size")
        ends = [pads[spatial + axis] + extra[axis] for axis in range(spatial)]
        x = _padded(context, x, pads[:spatial], ends, 0.0)
        padded_sizes = [n + b + e for n, b, e in zip(sizes, pads[:spatial], ends)]
        counted = [(0, b + n + pads[spatial + axis]) if include else (b, b + n)
                   for axis, (n, b) in enumerate(zip(sizes, pads[:spatial]))]
        counts = _window_counts(padded_sizes, kernel, strides, counted)
        layer = context.spatial_layer("AveragePooling{}D", spatial, "avgpool", kernel, strides=strides, padding="valid")
        scale = (float(np.prod(kernel)) / counts).astype(np.float32)
        return [Mapped(context.keras.ops.multiply(layer(x.tensor), scale), x.axes, None, x.nonnegative)]
    if any(pads) and include:
        x = zero_padding(context, x, pads)  # the padded zeros count in the average, as in ONNX
    elif any(pads):
        padding = "same"  # count_include_pad=0 over the real elements only, as Keras' 'same' does with these pads
    layer = context.spatial_layer("AveragePooling{}D", spatial, "avgpool", kernel, strides=strides, padding=padding)
    return [Mapped(layer(x.tensor), x.axes, None, x.nonnegative)]


def global_pool(context, node, x: Mapped, reduced: list, keepdims: bool, kind: str) -> list:
    """Average/max over every axis but the batch and one kept axis: GlobalAveragePoolingND or
    GlobalMaxPoolingND with the kept axis last (channels for NCHW, features for (N, T, D))."""
    rank = len(x.axes)
    kept = [axis for axis in range(1, rank) if axis not in reduced]
    if 0 in reduced or len(kept) != 1 or None in x.axes or not 3 <= rank <= 5:
        raise RosettaError(f"keras mapper: {node.op_type} is supported over all axes but the batch and one "
                           f"other of a 3- to 5-D tensor only")
    if x.axes[kept[0]] != rank - 1 or x.axes[0] != 0:  # the pooling layers keep Keras axis 0
        others = iter(range(1, rank - 1))
        x = materialize(context, x, tuple(0 if axis == 0 else rank - 1 if axis == kept[0] else next(others)
                                          for axis in range(rank)))
    layer = context.spatial_layer(f"Global{kind}Pooling{{}}D", rank - 2, f"global_{kind.lower()}", keepdims=keepdims)
    return [Mapped(layer(x.tensor), x.axes if keepdims else (0, 1), None, x.nonnegative)]


@add_converter("GlobalAveragePool", 1)
def global_average_pool(context, node, attrs):
    x = context.values[node.input[0]]
    return global_pool(context, node, x, list(range(2, len(x.axes))), True, "Average")


@add_converter("GlobalMaxPool", 1)
def global_max_pool(context, node, attrs):
    x = context.values[node.input[0]]
    return global_pool(context, node, x, list(range(2, len(x.axes))), True, "Max")


def _reduce_mean(context, node, attrs, axes) -> list:
    """A global average pooling layer where ReduceMean is one (all axes but the batch and one), else math's."""
    x = context.values[node.input[0]]
    reduced = sorted(axis % len(x.axes) for axis in (axes or range(len(x.axes))))
    try:
        return global_pool(context, node, x, reduced, bool(attrs.get("keepdims", 1)), "Average")
    except RosettaError:
        return reduction(context, node, attrs, axes)


@add_converter("ReduceMean", 1)
def reduce_mean_attribute(context, node, attrs):
    """ReduceMean before opset 18: its axes are an attribute (all axes when absent)."""
    return _reduce_mean(context, node, attrs, attrs.get("axes"))


@add_converter("ReduceMean", 18)
def reduce_mean_input(context, node, attrs):
    """ReduceMean from opset 18: its axes are an optional input; none, with noop_with_empty_axes, is identity."""
    axes = context.optional_constant(node, 1, "ReduceMean axes")
    if axes is None or axes.size == 0:
        if attrs.get("noop_with_empty_axes", 0):
            return [context.values[node.input[0]]]
        return _reduce_mean(context, node, attrs, None)
    return _reduce_mean(context, node, attrs, [int(v) for v in np.atleast_1d(axes)])
