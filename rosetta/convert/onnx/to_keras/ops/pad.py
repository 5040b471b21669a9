"""Pad with zeros as ZeroPaddingND; other values, reflect mode and negative pads by keras.ops. Before opset 11 its pads and value are attributes; from 11 they are
inputs (value optional), and from 18 an optional `axes` input names the padded axes."""

from __future__ import annotations

import numpy as np

from rosetta.convert.onnx.to_keras.context import Mapped
from rosetta.convert.onnx.to_keras.layout import channels_last, in_onnx_order, materialize, operands, pairs
from rosetta.convert.onnx.to_keras.registry import add_converter
from rosetta.errors import RosettaError
from rosetta.frameworks.onnx_graph import text


def _pad_by_ops(context, node, mode: str, begins: list, ends: list, value: float) -> list:
    """Pad in ONNX's layout by keras.ops.pad (constant with any value, reflect), negative pads as a crop after;
    edge and wrap have no keras.ops mode."""
    if mode not in ("constant", "reflect"):
        raise RosettaError(f"keras mapper: Pad mode={mode!r} is not supported: keras.ops.pad knows constant and "
                           f"reflect")
    x = operands(context, node.input[:1])[0]
    ops = context.keras.ops
    widths = [(max(b, 0), max(e, 0)) for b, e in zip(begins, ends)]
    constant = {"constant_values": np.asarray(value, str(x.dtype))} if mode == "constant" else {}
    tensor = ops.pad(x, widths, mode=mode, **constant)
    crop = tuple(slice(-b if b < 0 else 0, e if e < 0 else None) for b, e in zip(begins, ends))
    return [in_onnx_order(tensor[crop] if any(b < 0 or e < 0 for b, e in zip(begins, ends)) else tensor)]


def zero_pad(context, node, mode: str, pads: list, value: float, axes: list | None) -> list:
    x = context.values[node.input[0]]
    rank = len(x.axes)
    axes = list(range(rank)) if axes is None else [axis % rank for axis in axes]
    begins, ends = [0] * rank, [0] * rank
    for index, axis in enumerate(axes):
        begins[axis], ends[axis] = pads[index], pads[len(axes) + index]
    padded = [axis for axis in range(rank) if begins[axis] or ends[axis]]
    if not padded:
        return [x]
    if mode != "constant" or value != 0 or any(p < 0 for p in begins + ends) or \
            any(x.axes[axis] in (None, 0) for axis in padded):
        return _pad_by_ops(context, node, mode, begins, ends, value)
    keras_rank = sum(k is not None for k in x.axes)
    if x.axes.index(keras_rank - 1) in padded:  # ZeroPaddingND pads Keras axes 1..-2: keep the last unpadded
        if 1 in padded or None in x.axes:  # ZeroPaddingND keeps one axis unpadded
            return _pad_by_ops(context, node, mode, begins, ends, value)
        x = materialize(context, x, channels_last(rank))
    by_keras_axis = {k: (begins[axis], ends[axis]) for axis, k in enumerate(x.axes) if k is not None}
    middle = [by_keras_axis[k] for k in range(1, keras_rank - 1)]
    layer = context.spatial_layer("ZeroPadding{}D", keras_rank - 2, "pad", pairs(*zip(*middle)))
    return [Mapped(layer(x.tensor), x.axes, None, x.nonnegative)]


@add_converter("Pad", 2)
def pad_attributes(context, node, attrs):
    return zero_pad(context, node, text(attrs.get("mode", "constant")), list(attrs["pads"]),
                    attrs.get("value", 0.0), None)


@add_converter("Pad", 11)
def pad_inputs(context, node, attrs):
    pads = [int(v) for v in context.constant(node.input[1], "Pad pads")]
    value = context.optional_constant(node, 2, "Pad constant_value")
    axes = context.optional_constant(node, 3, "Pad axes")
    return zero_pad(context, node, text(attrs.get("mode", "constant")), pads,
                    0.0 if value is None else float(value.reshape(())), None if axes is None else [int(v) for v in axes])
