"""TensorFlow ops that tf2onnx 1.17 has no handler for, added through its own registry (tf2onnx.handler.tf_op),
as onnx2torch's converters are added through add_converter.

- Erfc: Keras 3's exact GELU on TensorFlow (`keras.activations.gelu`, approximate=False, the default of
  `Activation("gelu")`, `Dense(activation="gelu")`, ConvNeXt, transformer feed-forwards) is
  `0.5 * x * erfc(-x / sqrt(2))`; tf2onnx converted Erf but not Erfc, so every such model stopped at
  "TensorFlow ops it cannot convert: Erfc". ONNX has Erf (opset 9): erfc(x) = 1 - erf(x). In float32 the
  difference is below GELU's own rounding: where erfc(x) is tiny (x > 4), 1 - erf(x) rounds to 0, and the
  GELU output it feeds, 0.5 * x * erfc(-x/sqrt 2) at x < -5.6, is below 1e-7 either way."""

from __future__ import annotations

_REGISTERED = False


def register_handlers() -> None:
    """Add rosetta's handlers to tf2onnx's registry (once per process)."""
    global _REGISTERED
    if _REGISTERED:
        return
    import numpy as np
    from tf2onnx import utils
    from tf2onnx.handler import tf_op

    @tf_op("Erfc")
    class Erfc:  # noqa: F841 - registered by the decorator
        @classmethod
        def version_9(cls, ctx, node, **kwargs):
            value = node.input[0]
            dtype = utils.map_onnx_to_numpy_type(ctx.get_dtype(value))
            erf = ctx.make_node("Erf", [value], op_name_scope=node.name)
            one = ctx.make_const(utils.make_name(f"{node.name}_one"), np.array(1, dtype=dtype))
            node.type = "Sub"
            ctx.replace_inputs(node, [one.output[0], erf.output[0]])

    _REGISTERED = True
