"""BatchNormalization, LayerNormalization, InstanceNormalization and GroupNormalization as Keras' trainable
normalization layers; the statistics a LayerNormalization outputs, normalizations whose parameters are computed at
run time, and LRN (across channels, no weights), by keras.ops."""

from __future__ import annotations

import numpy as np

from rosetta.convert.onnx.to_keras.context import Mapped, as_parameter
from rosetta.convert.onnx.to_keras.layout import add, channels_last, in_onnx_order, materialize, onnx_order, operands
from rosetta.convert.onnx.to_keras.ops.math import broadcast
from rosetta.convert.onnx.to_keras.registry import FUSED, add_converter
from rosetta.errors import RosettaError


@add_converter("BatchNormalization", 7)
def batch_normalization(context, node, attrs):
    """Inference-mode BatchNormalization over axis 1 (spatial=1, the only form from opset 9; training_mode=0,
    the default from opset 14)."""
    x = context.values[node.input[0]]
    if not attrs.get("spatial", 1) or attrs.get("training_mode", 0):
        raise RosettaError("keras mapper: BatchNormalization with spatial=0 or training_mode=1 is not supported")
    if any(name not in context.constants for name in node.input[1:5]):  # statistics given at run time
        def compute(ops, x, scale, bias, mean, variance):
            shape = (-1,) + (1,) * (len(x.shape) - 2)
            laid = [v.reshape(shape) if isinstance(v, np.ndarray) else ops.reshape(v, shape)
                    for v in (scale, bias, mean, variance)]
            epsilon = np.asarray(attrs.get("epsilon", 1e-5), str(x.dtype))
            normalized = ops.divide(ops.subtract(x, laid[2]), ops.sqrt(add(ops, laid[3], epsilon)))
            return add(ops, ops.multiply(normalized, laid[0]), laid[1])
        return broadcast(context, node, compute)
    if x.axes[1] is None or x.feature_order is not None:
        raise RosettaError("keras mapper: BatchNormalization over a virtual or permuted feature axis")
    scale, bias, mean, var = (context.constant(n, "BatchNormalization parameter") for n in node.input[1:5])
    # ONNX momentum (running = running * momentum + batch * (1 - momentum)) is Keras' convention too;
    # torch's momentum 0.1 is exported as 0.9.
    layer = context.keras.layers.BatchNormalization(axis=x.axes[1], epsilon=attrs.get("epsilon", 1e-5),
                                                    momentum=attrs.get("momentum", 0.9),
                                                    name=context.name("batchnorm"))
    tensor = layer(x.tensor)
    layer.set_weights([scale, bias, mean, var])
    return [Mapped(tensor, x.axes)]


def _statistics(context, x, axes: tuple, epsilon: float):
    """(mean, 1 / sqrt(variance + epsilon)) of an ONNX-order tensor over `axes`, kept (keras.ops)."""
    ops = context.keras.ops
    mean = ops.mean(x, axis=axes, keepdims=True)
    variance = ops.mean(ops.square(ops.subtract(x, mean)), axis=axes, keepdims=True)
    return mean, ops.reciprocal(ops.sqrt(add(ops, variance, np.asarray(epsilon, str(x.dtype)))))


def _normalized(context, node, axes: tuple, epsilon: float, parameters_shape=None) -> list:
    """(x - mean) * inverse standard deviation * scale + bias in ONNX's layout, by keras.ops: the normalizations
    whose parameters are computed at run time, or whose statistics are outputs too. Returns [Y, mean, inv]."""
    ops = context.keras.ops
    x, scale, bias = (operands(context, node.input[:3]) + [None, None])[:3]
    mean, inverse = _statistics(context, x, axes, epsilon)
    y = ops.multiply(ops.subtract(x, mean), inverse)
    def laid_out(parameter):  # a constant is reshaped here, so that it stays an array in the model's config
        if parameters_shape is None:
            return parameter
        return parameter.reshape(parameters_shape) if isinstance(parameter, np.ndarray) else \
            ops.reshape(parameter, parameters_shape)

    if scale is not None:
        y = ops.multiply(y, laid_out(scale))
    if bias is not None:
        y = add(ops, y, laid_out(bias))
    return [in_onnx_order(y), in_onnx_order(mean), in_onnx_order(inverse)]


@add_converter("LayerNormalization", 17)
@add_converter("LayerNormalization", 1, domain=FUSED)
def layer_normalization(context, node, attrs):
    """A trainable LayerNormalization layer over the axes from `axis` on; its Mean and InvStdDev outputs, and
    a normalization over the batch axis or by parameters computed at run time, by keras.ops."""
    x = context.values[node.input[0]]
    rank = len(x.axes)
    normalized = list(range(attrs.get("axis", -1) % rank, rank))
    epsilon = attrs.get("epsilon", 1e-5)
    statistics = any(context.consumers.get(name) for name in node.output[1:] if name)
    if 0 in normalized or any(x.axes[axis] is None for axis in normalized) or x.feature_order is not None or \
            any(name not in context.constants for name in node.input[1:3] if name):
        results = _normalized(context, node, tuple(normalized), epsilon)
        return results if statistics else results[:1]
    shape = [context.static_shape(node.input[0])[axis] for axis in normalized]
    keras_order = np.argsort([x.axes[axis] for axis in normalized])  # Keras keeps gamma in its axis order

    def parameter(index: int, what: str):
        value = context.optional_constant(node, index, what)
        if value is None:
            return None
        broadcast = as_parameter(value, shape) if None not in shape else None
        if broadcast is None:
            raise RosettaError(f"keras mapper: {what} must have the normalized shape {shape}")
        return broadcast.transpose(keras_order)

    scale = parameter(1, "LayerNormalization scale")
    bias = parameter(2, "LayerNormalization bias")
    layer = context.keras.layers.LayerNormalization(axis=[x.axes[axis] for axis in normalized],
                                                    epsilon=attrs.get("epsilon", 1e-5), center=bias is not None,
                                                    scale=scale is not None, name=context.name("layernorm"))
    tensor = layer(x.tensor)
    layer.set_weights([w for w in (scale, bias) if w is not None])
    if not statistics:
        return [Mapped(tensor, x.axes)]
    mean, inverse = _statistics(context, onnx_order(context, x).tensor, tuple(normalized), epsilon)
    return [Mapped(tensor, x.axes), in_onnx_order(mean), in_onnx_order(inverse)]


def _group_layer(context, node, groups: int, scale, bias, epsilon: float) -> list:
    """Keras' GroupNormalization layer over the channels (axis 1, held last), trainable scale and bias per
    channel: InstanceNormalization is its one group per channel."""
    x = context.values[node.input[0]]
    rank = len(x.axes)
    x = materialize(context, x, channels_last(rank))
    layer = context.keras.layers.GroupNormalization(groups=groups, axis=-1, epsilon=epsilon,
                                                    name=context.name("groupnorm"))
    tensor = layer(x.tensor)
    layer.set_weights([np.asarray(scale, np.float32), np.asarray(bias, np.float32)])
    return [Mapped(tensor, x.axes)]


@add_converter("InstanceNormalization", 6)
def instance_normalization(context, node, attrs):
    """Per sample and channel over the spatial axes: GroupNormalization with a group per channel where the
    scale and bias are constants (trainable weights), keras.ops otherwise."""
    x = context.values[node.input[0]]
    epsilon = attrs.get("epsilon", 1e-5)
    channels = context.static_shape(node.input[0])[1]
    if all(name in context.constants for name in node.input[1:3]) and channels is not None and None not in x.axes:
        return _group_layer(context, node, channels, *(context.constants[n] for n in node.input[1:3]), epsilon)
    rank = len(x.axes)
    return _normalized(context, node, tuple(range(2, rank)), epsilon, (-1,) + (1,) * (rank - 2))[:1]


def _group_normalization(context, node, attrs, per_group: bool) -> list:
    groups, epsilon = attrs["num_groups"], attrs.get("epsilon", 1e-5)
    x = context.values[node.input[0]]
    channels = context.static_shape(node.input[0])[1]
    if not all(name in context.constants for name in node.input[1:3]) or channels is None or None in x.axes:
        raise RosettaError("keras mapper: GroupNormalization is supported with constant scale and bias (its "
                           "trainable weights) of a tensor of known channels")
    scale, bias = (np.ravel(context.constants[n]) for n in node.input[1:3])
    if per_group:  # opset 18: one scale and bias per group, for each of its channels
        scale, bias = np.repeat(scale, channels // groups), np.repeat(bias, channels // groups)
    return _group_layer(context, node, groups, scale, bias, epsilon)


@add_converter("GroupNormalization", 18)
def group_normalization_per_group(context, node, attrs):
    return _group_normalization(context, node, attrs, per_group=True)


@add_converter("GroupNormalization", 21)
@add_converter("GroupNormalization", 1, domain=FUSED)
def group_normalization(context, node, attrs):
    return _group_normalization(context, node, attrs, per_group=False)


@add_converter("LRN", 1)
def local_response_normalization(context, node, attrs):
    """x / (bias + alpha / size * the sum of squares over `size` neighbouring channels) ** beta, channel c's window
    running from c - floor((size - 1) / 2) to c + ceil((size - 1) / 2), clipped to the channels (ONNX's LRN, the
    same function at opset 13): the squares padded with zeros on the channel axis and the window summed from
    `size` shifted copies (keras.ops.take), in ONNX's layout."""
    x = onnx_order(context, context.values[node.input[0]])
    channels = context.static_shape(node.input[0])[1]
    if channels is None:
        raise RosettaError("keras mapper: LRN needs its number of channels known at conversion time")
    ops, size, rank = context.keras.ops, attrs["size"], len(x.axes)
    before = (size - 1) // 2
    squares = ops.pad(ops.square(x.tensor), [(0, 0), (before, size - 1 - before)] + [(0, 0)] * (rank - 2))
    window = ops.take(squares, np.arange(channels), axis=1)
    for shift in range(1, size):
        window = add(ops, window, ops.take(squares, np.arange(shift, shift + channels), axis=1))
    dtype = str(x.tensor.dtype)
    scale = add(ops, ops.multiply(window, np.asarray(attrs.get("alpha", 1e-4) / size, dtype)),
                np.asarray(attrs.get("bias", 1.0), dtype))
    return [in_onnx_order(ops.divide(x.tensor, ops.power(scale, np.asarray(attrs.get("beta", 0.75), dtype))))]
