"""BatchNormalization and LayerNormalization as Keras' trainable normalization layers."""

from __future__ import annotations

import numpy as np

from rosetta.convert.onnx.to_keras.context import Mapped, as_parameter
from rosetta.convert.onnx.to_keras.registry import FUSED, add_converter
from rosetta.errors import RosettaError


@add_converter("BatchNormalization", 7)
def batch_normalization(context, node, attrs):
    """Inference-mode BatchNormalization over axis 1 (spatial=1, the only form from opset 9; training_mode=0,
    the default from opset 14)."""
    x = context.values[node.input[0]]
    if not attrs.get("spatial", 1) or attrs.get("training_mode", 0):
        raise RosettaError("keras mapper: BatchNormalization with spatial=0 or training_mode=1 is not supported")
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


@add_converter("LayerNormalization", 17)
@add_converter("LayerNormalization", 1, domain=FUSED)
def layer_normalization(context, node, attrs):
    if any(context.consumers.get(name) for name in node.output[1:] if name):
        raise RosettaError("keras mapper: LayerNormalization's Mean and InvStdDev outputs are not supported")
    x = context.values[node.input[0]]
    rank = len(x.axes)
    normalized = list(range(attrs.get("axis", -1) % rank, rank))
    if 0 in normalized or any(x.axes[axis] is None for axis in normalized) or x.feature_order is not None:
        raise RosettaError("keras mapper: LayerNormalization over the batch or a virtual axis, or of a "
                           "channels-last flattened tensor, is not supported")
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
    return [Mapped(tensor, x.axes)]
