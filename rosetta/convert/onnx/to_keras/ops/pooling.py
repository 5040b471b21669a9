"""MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool and ReduceMean (as a global average) as Keras'
pooling layers, channels-last."""

from __future__ import annotations

import numpy as np

from rosetta.convert.onnx.to_keras.context import Mapped
from rosetta.convert.onnx.to_keras.layout import channels_last, materialize, same_pads, zero_padding
from rosetta.convert.onnx.to_keras.registry import add_converter
from rosetta.errors import RosettaError
from rosetta.frameworks.onnx_graph import text


def _pool_attributes(node, attrs) -> tuple[list, list, list]:
    kernel = list(attrs["kernel_shape"])
    spatial = len(kernel)
    if attrs.get("ceil_mode", 0) or any(d != 1 for d in attrs.get("dilations", [1] * spatial)) \
            or text(attrs.get("auto_pad", "NOTSET")) != "NOTSET" or (len(node.output) > 1 and node.output[1]):
        raise RosettaError(f"keras mapper: {node.op_type} with ceil_mode, dilations, auto_pad or indices is not "
                           f"supported")
    return kernel, list(attrs.get("strides", [1] * spatial)), list(attrs.get("pads", [0] * 2 * spatial))


@add_converter("MaxPool", 1)
def max_pool(context, node, attrs):
    kernel, strides, pads = _pool_attributes(node, attrs)
    x = materialize(context, context.values[node.input[0]], channels_last(len(kernel) + 2))
    if any(pads):
        if not x.nonnegative:
            # ONNX pads MaxPool with -inf; ZeroPadding pads with 0, equal only for inputs known to be >= 0.
            raise RosettaError("keras mapper: padded MaxPool on an input not known to be non-negative")
        x = zero_padding(context, x, pads)
    layer = context.spatial_layer("MaxPooling{}D", len(kernel), "maxpool", kernel, strides=strides, padding="valid")
    return [Mapped(layer(x.tensor), x.axes, None, x.nonnegative)]


@add_converter("AveragePool", 1)
def average_pool(context, node, attrs):
    kernel, strides, pads = _pool_attributes(node, attrs)
    x = materialize(context, context.values[node.input[0]], channels_last(len(kernel) + 2))
    padding = "valid"
    if any(pads) and attrs.get("count_include_pad", 0):
        x = zero_padding(context, x, pads)  # the padded zeros count in the average, as in ONNX
    elif any(pads):
        # count_include_pad=0 averages over the real elements only, as Keras' 'same' does, where the pads agree
        if pads != same_pads(context.static_shape(node.input[0])[2:], kernel, strides):
            raise RosettaError("keras mapper: AveragePool with count_include_pad=0 is supported only with the "
                               "pads of Keras' padding='same'")
        padding = "same"
    layer = context.spatial_layer("AveragePooling{}D", len(kernel), "avgpool", kernel, strides=strides,
                                  padding=padding)
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
    x = context.values[node.input[0]]
    reduced = sorted(axis % len(x.axes) for axis in (axes or range(len(x.axes))))
    return global_pool(context, node, x, reduced, bool(attrs.get("keepdims", 1)), "Average")


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
