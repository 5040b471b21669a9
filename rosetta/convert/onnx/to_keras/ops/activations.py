"""Elementwise activations as Keras' built-in layers (ReLU, Activation, Rescaling) where one computes the op,
keras.ops otherwise (Clip's other bounds, GELU's tanh approximation), and Softmax."""

from __future__ import annotations

import numpy as np

from rosetta.convert.onnx.to_keras.context import Mapped
from rosetta.convert.onnx.to_keras.layout import add, keras_constant, realize
from rosetta.convert.onnx.to_keras.ops.math import broadcast, unary
from rosetta.convert.onnx.to_keras.registry import FUSED, add_converter
from rosetta.errors import RosettaError
from rosetta.frameworks.onnx_graph import text


def activation(context, node, function: str) -> list:
    """keras.layers.Activation(function) of the node's one input."""
    x = context.values[node.input[0]]
    layer = context.keras.layers.Activation(function, name=context.name(function))
    return [Mapped(layer(x.tensor), x.axes, x.feature_order)]


@add_converter("Relu", 1)
def relu(context, node, attrs):
    x = context.values[node.input[0]]
    return [Mapped(context.keras.layers.ReLU(name=context.name("relu"))(x.tensor), x.axes, x.feature_order, True)]


def _clip(context, node, low, high) -> list:
    x = context.values[node.input[0]]
    if low is None and high is None:
        return [x]
    if low == 0 and (high is None or high >= 0):  # ReLU, ReLU6
        tensor = context.keras.layers.ReLU(max_value=high, name=context.name("relu"))(x.tensor)
        return [Mapped(tensor, x.axes, x.feature_order, True)]
    if (low, high) == (-1, 1):
        tensor = context.keras.layers.Activation("hard_tanh", name=context.name("hard_tanh"))(x.tensor)
        return [Mapped(tensor, x.axes, x.feature_order)]

    def clip(ops, tensor):  # min(max(x, low), high): `high` where low > high, as ONNX says
        dtype = str(tensor.dtype)
        tensor = tensor if low is None else ops.maximum(tensor, np.asarray(low, dtype))
        return tensor if high is None else ops.minimum(tensor, np.asarray(high, dtype))
    return unary(context, node, clip)


@add_converter("Clip", 1)
def clip_attributes(context, node, attrs):
    """Clip before opset 11: its bounds are attributes."""
    return _clip(context, node, attrs.get("min"), attrs.get("max"))


@add_converter("Clip", 11)
def clip_inputs(context, node, attrs):
    """Clip from opset 11: its bounds are optional inputs (computed at run time: clipped by them broadcast)."""
    names = (list(node.input) + ["", ""])[1:3]
    if any(name and name not in context.constants for name in names):
        def clip(ops, x, low=None, high=None):
            x = x if low is None else ops.maximum(x, low)
            return x if high is None else ops.minimum(x, high)
        return broadcast(context, node, clip)
    bounds = [context.constants[name] if name else None for name in names]
    return _clip(context, node, *(None if bound is None else float(bound) for bound in bounds))


def _named_activation(context, node, attrs):
    """Sigmoid and Tanh: Keras' activations of the same names."""
    return activation(context, node, node.op_type.lower())


add_converter("Sigmoid", 1)(_named_activation)
add_converter("Tanh", 1)(_named_activation)


@add_converter("HardSigmoid", 1)
def hard_sigmoid(context, node, attrs):
    # ONNX: max(0, min(1, alpha * x + beta)), computed in that order by a Rescaling and a ReLU capped at 1
    x = context.values[node.input[0]]
    scaled = context.keras.layers.Rescaling(attrs.get("alpha", 0.2), attrs.get("beta", 0.5),
                                            name=context.name("rescale"))(x.tensor)
    tensor = context.keras.layers.ReLU(max_value=1.0, name=context.name("relu"))(scaled)
    return [Mapped(tensor, x.axes, x.feature_order, True)]


@add_converter("HardSwish", 14)
def hard_swish(context, node, attrs):
    return activation(context, node, "hard_silu")  # x * relu6(x + 3) / 6, ONNX's x * HardSigmoid(1/6, 0.5)(x)


@add_converter("Gelu", 20)
@add_converter("Gelu", 1, domain=FUSED)
def gelu(context, node, attrs):
    """The exact GELU as Keras' 'gelu' activation; approximate='tanh' as keras.ops.gelu's approximation, which
    is ONNX's formula."""
    if text(attrs.get("approximate", "none")) == "tanh":
        return unary(context, node, lambda ops, x: ops.gelu(x, approximate=True))
    return activation(context, node, "gelu")


def _softmax_axis(context, x: Mapped, axis: int) -> tuple[Mapped, int]:
    """The Keras axis holding ONNX `axis` (a virtual size-1 axis given one of its own)."""
    axis %= len(x.axes)
    if x.axes[axis] is None:
        x = realize(context, x, [axis])
    if x.feature_order is not None:
        raise RosettaError("keras mapper: Softmax of a channels-last flattened tensor is not supported")
    return x, x.axes[axis]


@add_converter("Softmax", 13)
def softmax(context, node, attrs):
    """Softmax along one axis (-1 unless given)."""
    x, axis = _softmax_axis(context, context.values[node.input[0]], attrs.get("axis", -1))
    return [Mapped(context.keras.layers.Softmax(axis=axis, name=context.name("softmax"))(x.tensor), x.axes)]


@add_converter("Softmax", 1)
def softmax_flattened(context, node, attrs):
    """Softmax before opset 13: over all the axes from `axis` (default 1) on, as if they were flattened into
    one. Over one real axis it is Softmax along it; over several, exp(x - logsumexp(x)) over those axes."""
    x = context.values[node.input[0]]
    rank = len(x.axes)
    axes = list(range(attrs.get("axis", 1) % rank, rank))
    real = [axis for axis in axes if x.axes[axis] is not None]
    if len(real) <= 1:
        return softmax(context, node, {"axis": (real or axes)[-1]})
    if x.feature_order is not None:
        raise RosettaError("keras mapper: Softmax of a channels-last flattened tensor is not supported")
    ops = context.keras.ops
    normalizer = ops.logsumexp(x.tensor, axis=tuple(x.axes[axis] for axis in real), keepdims=True)
    return [Mapped(ops.exp(ops.subtract(x.tensor, normalizer)), x.axes)]


@add_converter("PRelu", 7)
def prelu(context, node, attrs):
    """A trainable PReLU layer whose alpha is the constant slope laid out as the input, shared along the axes it
    broadcasts over; a slope computed at run time (or varying over the batch) by keras.ops,
    max(x, 0) + min(x, 0) * slope."""
    x = context.values[node.input[0]]
    slope = context.constants.get(node.input[1])
    shape = list(x.tensor.shape[1:])
    if slope is not None and x.feature_order is None and None not in shape:
        try:
            alpha = np.asarray(keras_constant(context, x, node.input[0], slope, "PRelu"), np.float32)
        except RosettaError:
            alpha = None
        if alpha is not None:
            alpha = alpha.reshape((1,) * len(shape)) if alpha.ndim == 0 else alpha
            shared = [axis + 1 for axis, size in enumerate(alpha.shape) if size == 1 and shape[axis] != 1]
            layer = context.keras.layers.PReLU(shared_axes=shared or None, name=context.name("prelu"))
            tensor = layer(x.tensor)
            layer.set_weights([alpha])
            return [Mapped(tensor, x.axes)]
    return broadcast(context, node, lambda ops, x, slope: add(ops, ops.relu(x), ops.multiply(ops.minimum(x, 0), slope)))
