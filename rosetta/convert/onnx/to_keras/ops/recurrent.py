"""GRU and LSTM as Keras' trainable recurrent layers, zero initial states only (Keras' layers start from
zeros): GRU kernels (z, r, h in both ONNX and Keras) transposed, input and recurrent biases stacked as Keras'
reset_after=True expects; LSTM gates reordered from ONNX's (i, o, f, c) to Keras' (i, f, c, o), its two biases
summed into Keras' one (they are only ever added). X is (T, N, I) in ONNX (layout=0), (N, T, I) in Keras."""

from __future__ import annotations

import numpy as np

from rosetta.convert.onnx.to_keras.context import Mapped
from rosetta.convert.onnx.to_keras.layout import materialize
from rosetta.convert.onnx.to_keras.registry import add_converter
from rosetta.errors import RosettaError
from rosetta.frameworks.onnx_graph import text


@add_converter("GRU", 7, reads_symbolic=True)
def gru(context, node, attrs):
    if attrs.get("linear_before_reset", 0) != 1:
        raise RosettaError("keras mapper: GRU with linear_before_reset=0 (Keras' reset_after=True is =1)")
    if attrs.get("direction", b"forward") not in (b"forward", "forward") or attrs.get("layout", 0) != 0:
        raise RosettaError("keras mapper: only forward GRUs with layout=0 are supported")
    if len(node.input) > 4 and node.input[4] or len(node.input) > 5 and node.input[5] and \
            not context.is_zero(node.input[5]):
        raise RosettaError("keras mapper: GRU with sequence_lens or a non-zero initial state is not supported")
    x = materialize(context, context.values[node.input[0]], (1, 0, 2))  # ONNX (T, N, I) -> Keras (N, T, I)
    w = context.constant(node.input[1], "GRU W")[0]
    r = context.constant(node.input[2], "GRU R")[0]
    hidden = attrs["hidden_size"]
    b = context.constant(node.input[3], "GRU B")[0] if len(node.input) > 3 and node.input[3] \
        else np.zeros(6 * hidden, np.float32)
    layer = context.keras.layers.GRU(hidden, return_sequences=True, return_state=True, reset_after=True,
                                     name=context.name("gru"))
    sequence, state = layer(x.tensor)
    # Keras splits kernels as (z, r, h): the ONNX gate order, so only transposes are needed.
    layer.set_weights([w.T, r.T, np.stack([b[: 3 * hidden], b[3 * hidden:]])])
    return [Mapped(sequence, (1, None, 0, 2)), Mapped(state, (None, 0, 1))]


@add_converter("LSTM", 7, reads_symbolic=True)
def lstm(context, node, attrs):
    """keras.layers.LSTM per direction (Bidirectional for both) with the ONNX weights: gates reordered from
    ONNX's (i, o, f, c) to Keras' (i, f, c, o), the input and recurrent biases summed into Keras' one bias
    (they are only ever added). Y is (T, directions, N, H), Y_h and Y_c (directions, N, H)."""
    direction = text(attrs.get("direction", "forward"))
    directions = 2 if direction == "bidirectional" else 1
    activations = [text(f) for f in attrs.get("activations", [])]
    if attrs.get("layout", 0) != 0 or "clip" in attrs or attrs.get("input_forget", 0) or \
            activations not in ([], ["Sigmoid", "Tanh", "Tanh"] * directions) or "activation_alpha" in attrs:
        raise RosettaError("keras mapper: LSTM with layout=1, clip, input_forget or other activations than "
                           "(Sigmoid, Tanh, Tanh) is not supported")
    optional = lambda index: len(node.input) > index and node.input[index]  # noqa: E731
    if optional(4):
        raise RosettaError("keras mapper: LSTM with sequence_lens is not supported")
    if any(optional(index) and not context.is_zero(node.input[index]) for index in (5, 6, 7)):
        raise RosettaError("keras mapper: LSTM with a non-zero initial state or peepholes is not supported "
                           "(Keras' LSTM layer starts from zeros and has no peepholes)")
    hidden = attrs["hidden_size"]
    w, r = context.constant(node.input[1], "LSTM W"), context.constant(node.input[2], "LSTM R")
    b = context.constant(node.input[3], "LSTM B") if optional(3) else np.zeros((directions, 8 * hidden), np.float32)
    keras_gates = [0, 2, 3, 1]  # Keras' i, f, c, o among ONNX's i, o, f, c

    def weights(d: int) -> list:
        gates = lambda m: m.reshape((4, hidden) + m.shape[1:])[keras_gates].reshape((4 * hidden,) + m.shape[1:])  # noqa: E731
        return [gates(w[d]).T, gates(r[d]).T, gates(b[d][: 4 * hidden] + b[d][4 * hidden:])]

    x = materialize(context, context.values[node.input[0]], (1, 0, 2))  # ONNX (T, N, I) -> Keras (N, T, I)
    options = dict(return_sequences=True, return_state=True)
    if direction == "bidirectional":
        layer = context.keras.layers.Bidirectional(context.keras.layers.LSTM(hidden, **options), merge_mode=None,
                                                   name=context.name("lstm"))
        forward, backward, h_forward, c_forward, h_backward, c_backward = layer(x.tensor)
        layer.set_weights(weights(0) + weights(1))
        stack = lambda pair, axis: context.keras.ops.stack(pair, axis=axis)  # noqa: E731
        return [Mapped(stack([forward, backward], 2), (1, 2, 0, 3)),
                Mapped(stack([h_forward, h_backward], 1), (1, 0, 2)),
                Mapped(stack([c_forward, c_backward], 1), (1, 0, 2))]
    if direction not in ("forward", "reverse"):
        raise RosettaError(f"keras mapper: LSTM direction={direction!r} is not supported")
    layer = context.keras.layers.LSTM(hidden, go_backwards=direction == "reverse", name=context.name("lstm"), **options)
    sequence, h, c = layer(x.tensor)
    layer.set_weights(weights(0))
    if direction == "reverse":  # Keras gives the outputs in processing order; ONNX at their time step
        sequence = context.keras.ops.flip(sequence, axis=1)
    return [Mapped(sequence, (1, None, 0, 2)), Mapped(h, (None, 0, 1)), Mapped(c, (None, 0, 1))]
