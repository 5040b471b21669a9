"""Conv (1-, 2-, 3-D; grouped, depthwise) and ConvTranspose as Keras' trainable convolution layers.

Weights: Conv kernels OI(spatial) -> (spatial)IO, with explicit ZeroPadding when ONNX pads are not what
"same" means; depthwise kernels (C*m, 1, spatial) -> (spatial, C, m); ConvTranspose kernels (I, O, spatial)
-> (spatial, O, I), its pads cropped after a "valid" transposed convolution."""

from __future__ import annotations

from rosetta.convert.onnx.to_keras.context import Mapped
from rosetta.convert.onnx.to_keras.layout import add, channels_last, explicit_padding, materialize, operands, pairs
from rosetta.convert.onnx.to_keras.registry import add_converter
from rosetta.errors import RosettaError
from rosetta.frameworks.onnx_graph import text


def _conv_by_ops(context, node, attrs) -> list:
    """Conv whose weights are computed at run time (no layer holds them): keras.ops.conv of the channels-last
    input, explicitly padded, by the kernel transposed to (spatial, I, O), then the bias; one group only."""
    x = context.values[node.input[0]]
    rank = len(x.axes)
    spatial = rank - 2
    if attrs.get("group", 1) != 1 or text(attrs.get("auto_pad", "NOTSET")) != "NOTSET":
        raise RosettaError("keras mapper: Conv with weights computed at run time is supported with group=1 and "
                           "explicit pads only")
    ops = context.keras.ops
    x = materialize(context, x, channels_last(rank))
    pads = list(attrs.get("pads", [0] * 2 * spatial))
    tensor = ops.pad(x.tensor, [(0, 0)] + list(zip(pads[:spatial], pads[spatial:])) + [(0, 0)]) if any(pads) else x.tensor
    weight, bias = (operands(context, node.input[1:3]) + [None])[:2]
    kernel = ops.transpose(weight, list(range(2, rank)) + [1, 0])
    tensor = ops.conv(tensor, kernel, strides=list(attrs.get("strides", [1] * spatial)), padding="valid",
                      dilation_rate=list(attrs.get("dilations", [1] * spatial)))
    return [Mapped(tensor if bias is None else add(ops, tensor, bias), channels_last(rank))]


@add_converter("Conv", 1)
def conv(context, node, attrs):
    """A trainable Conv (depthwise, grouped) layer of the constant weights; _conv_by_ops otherwise."""
    if node.input[1] not in context.constants or \
            any(name not in context.constants for name in node.input[2:3] if name):
        return _conv_by_ops(context, node, attrs)
    weight = context.constant(node.input[1], "Conv weight")
    bias = context.optional_constant(node, 2, "Conv bias")
    spatial = weight.ndim - 2
    if text(attrs.get("auto_pad", "NOTSET")) != "NOTSET":
        raise RosettaError("keras mapper: Conv auto_pad is not supported (export with explicit pads)")
    strides, dilations = list(attrs.get("strides", [1] * spatial)), list(attrs.get("dilations", [1] * spatial))
    # Keras takes strides or dilations > 1, not both (selective-kernel and dilated-ResNet downsampling have both):
    # the same padded input convolved at stride 1, then every stride-th output kept, is the strided convolution
    # (its output i is the window that starts at i x stride)
    subsample = strides if max(strides) > 1 and max(dilations) > 1 else None
    strides = [1] * spatial if subsample else strides
    x = materialize(context, context.values[node.input[0]], channels_last(spatial + 2))
    group = attrs.get("group", 1)
    kernel = list(weight.shape[2:])
    x, padding = explicit_padding(context, x, list(attrs.get("pads", [0] * 2 * spatial)), kernel, strides, dilations)
    spatial_axes = list(range(2, 2 + spatial))
    common = dict(strides=strides, padding=padding, dilation_rate=dilations, use_bias=bias is not None)
    if group > 1 and weight.shape[1] == 1 and spatial < 3:  # one group per input channel: depthwise
        multiplier = weight.shape[0] // group
        layer = context.spatial_layer("DepthwiseConv{}D", spatial, "depthwise", kernel, depth_multiplier=multiplier,
                                      **common)
        # ONNX output channel c * m + j reads input channel c, as Keras' depthwise kernel [..., c, j] does
        kernel_weights = weight.reshape((group, multiplier) + tuple(kernel)).transpose(spatial_axes + [0, 1])
    else:
        layer = context.spatial_layer("Conv{}D", spatial, "conv", weight.shape[0], kernel, groups=group, **common)
        kernel_weights = weight.transpose(spatial_axes + [1, 0])  # O I spatial -> spatial I O
    tensor = layer(x.tensor)
    layer.set_weights([kernel_weights] + ([bias] if bias is not None else []))
    if subsample:
        tensor = tensor[(slice(None), *(slice(None, None, step) for step in subsample), slice(None))]
    return [Mapped(tensor, channels_last(spatial + 2))]


@add_converter("ConvTranspose", 1)
def conv_transpose(context, node, attrs):
    weight = context.constant(node.input[1], "ConvTranspose weight")
    bias = context.optional_constant(node, 2, "ConvTranspose bias")
    spatial = weight.ndim - 2
    if attrs.get("group", 1) != 1 or "output_shape" in attrs or text(attrs.get("auto_pad", "NOTSET")) != "NOTSET":
        raise RosettaError("keras mapper: ConvTranspose is supported with group=1 and explicit pads only "
                           "(no output_shape, no auto_pad)")
    strides, dilations = list(attrs.get("strides", [1] * spatial)), list(attrs.get("dilations", [1] * spatial))
    output_padding = list(attrs.get("output_padding", [0] * spatial))
    if (max(strides) > 1 and max(dilations) > 1) or any(p >= s for p, s in zip(output_padding, strides) if p):
        raise RosettaError("keras mapper: ConvTranspose with both strides and dilations > 1, or output_padding "
                           ">= strides, is not supported by Keras")
    x = materialize(context, context.values[node.input[0]], channels_last(spatial + 2))
    # 'valid' is the full transposed convolution, output_padding adding rows at the end as in ONNX;
    # ONNX's pads then remove rows at both ends
    layer = context.spatial_layer("Conv{}DTranspose", spatial, "conv_transpose", weight.shape[1],
                                  list(weight.shape[2:]), strides=strides, padding="valid",
                                  output_padding=output_padding, dilation_rate=dilations, use_bias=bias is not None)
    tensor = layer(x.tensor)
    layer.set_weights([weight.transpose(list(range(2, 2 + spatial)) + [1, 0])]  # I O spatial -> spatial O I
                      + ([bias] if bias is not None else []))
    pads = list(attrs.get("pads", [0] * 2 * spatial))
    if any(pads):
        tensor = context.spatial_layer("Cropping{}D", spatial, "crop", pairs(pads[:spatial], pads[spatial:]))(tensor)
    return [Mapped(tensor, channels_last(spatial + 2))]
