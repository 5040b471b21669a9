"""RNN, GRU and LSTM as Keras' trainable recurrent layers (SimpleRNN, GRU, LSTM), one per direction
(Bidirectional for both; go_backwards for reverse, its outputs flipped back to their time steps), layout 0
(X (T, N, I)) or 1 (X (N, T, I)), zero initial states omitted and others passed as the layer's initial_state.

Weights: the kernels transposed; GRU's gates are z, r, h in both ONNX and Keras, its input and recurrent biases
stacked as Keras' reset_after=True (linear_before_reset=1) expects, summed for reset_after=False
(linear_before_reset=0, where they are only ever added); LSTM's gates reordered from ONNX's (i, o, f, c) to
Keras' (i, f, c, o), its two biases summed; SimpleRNN's summed. Refused by name: sequence_lens, clip,
activations other than the defaults, LSTM's peepholes (unless all zero) and input_forget."""

from __future__ import annotations

import numpy as np

from rosetta.convert.onnx.to_keras.context import Mapped
from rosetta.convert.onnx.to_keras.layout import add, materialize, onnx_order
from rosetta.convert.onnx.to_keras.registry import add_converter
from rosetta.errors import RosettaError
from rosetta.frameworks.onnx_graph import text

_DEFAULT_ACTIVATIONS = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}


def _initial_state(context, node, index: int, x, directions: int, layout: int) -> list | None:
    """The initial state at input `index` as one (N, H) Keras tensor per direction, or None where it is
    omitted or zero (Keras' layers start from zeros). A constant (or one value filling a run-time shape) is added
    to zeros made from the input, since a functional model's tensors come from its inputs."""
    name = node.input[index] if len(node.input) > index else ""
    if not name or context.is_zero(name):
        return None
    ops = context.keras.ops
    filled = context.symbolic.get(name)
    if name in context.constants or filled is not None:
        hidden = node_hidden(node)
        value = context.constants[name] if name in context.constants else \
            np.full((directions, 1, hidden), filled.value, np.float32)
        value = np.swapaxes(value, 0, 1) if layout and name in context.constants else value
        zeros = ops.sum(ops.zeros_like(x.tensor[:, :1, :1]), axis=1)  # (N, 1)
        return [add(ops, zeros, value[d]) for d in range(directions)]
    state = onnx_order(context, context.values[name]).tensor
    return [state[:, d] if layout else state[d] for d in range(directions)]


def node_hidden(node) -> int:
    return next(a.i for a in node.attribute if a.name == "hidden_size")


def _gates(matrix: np.ndarray, order: list, count: int) -> np.ndarray:
    """Rows of stacked gates reordered (ONNX's order to Keras')."""
    rows = matrix.shape[0] // count
    return matrix.reshape((count, rows) + matrix.shape[1:])[order].reshape(matrix.shape)


def recurrent(context, node, attrs, kind: str) -> list:
    direction = text(attrs.get("direction", "forward"))
    directions = 2 if direction == "bidirectional" else 1
    activations = [text(f) for f in attrs.get("activations", [])]
    problems = [what for what, bad in (
        ("sequence_lens", len(node.input) > 4 and bool(node.input[4])), ("clip", "clip" in attrs),
        ("other activations", activations not in ([], _DEFAULT_ACTIVATIONS[kind] * directions)
         or "activation_alpha" in attrs or "activation_beta" in attrs),
        ("input_forget", kind == "LSTM" and attrs.get("input_forget", 0)),
        ("peepholes", kind == "LSTM" and len(node.input) > 7 and bool(node.input[7]) and not context.is_zero(node.input[7])),
    ) if bad]
    if problems:
        raise RosettaError(f"keras mapper: {kind} with {', '.join(problems)} is not supported by Keras' {kind} layer")
    hidden, layout = attrs["hidden_size"], attrs.get("layout", 0)
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[kind]
    w, r = context.constant(node.input[1], f"{kind} W"), context.constant(node.input[2], f"{kind} R")
    b = context.optional_constant(node, 3, f"{kind} B")
    b = np.zeros((directions, 2 * gates * hidden), np.float32) if b is None else b
    reset_after = kind == "GRU" and attrs.get("linear_before_reset", 0) == 1
    order = [0, 2, 3, 1] if kind == "LSTM" else list(range(gates))  # Keras' i, f, c, o among ONNX's i, o, f, c

    def weights(d: int) -> list:
        input_bias, recurrent_bias = b[d][: gates * hidden], b[d][gates * hidden:]
        bias = np.stack([input_bias, recurrent_bias]) if reset_after else _gates(input_bias + recurrent_bias, order, gates)
        return [_gates(w[d], order, gates).T, _gates(r[d], order, gates).T, bias]

    x = materialize(context, context.values[node.input[0]], (0, 1, 2) if layout else (1, 0, 2))  # Keras (N, T, I)
    states = 3 if kind == "LSTM" else 2
    initial = [_initial_state(context, node, index, x, directions, layout) for index in range(5, 5 + states - 1)]
    initial_state = None
    if any(state is not None for state in initial):
        if any(state is None for state in initial):  # LSTM: one given, the other zero
            raise RosettaError("keras mapper: LSTM with one initial state zero and the other not is not supported")
        initial_state = [state[d] for d in range(directions) for state in initial]
    options = dict(return_sequences=True, return_state=True)
    layer_class = {"RNN": "SimpleRNN", "GRU": "GRU", "LSTM": "LSTM"}[kind]
    extra = {"reset_after": reset_after} if kind == "GRU" else {}

    def make(go_backwards: bool = False, name: str | None = None):
        return getattr(context.keras.layers, layer_class)(hidden, go_backwards=go_backwards, name=name, **options, **extra)

    call = {} if initial_state is None else {"initial_state": initial_state}
    ops = context.keras.ops
    if directions == 2:
        layer = context.keras.layers.Bidirectional(make(), merge_mode=None, name=context.name(kind))
        outputs = layer(x.tensor, **call)
        layer.set_weights(weights(0) + weights(1))
        forward, backward, finals = outputs[0], outputs[1], outputs[2:]
        per_direction = len(finals) // 2
        sequence = ops.stack([forward, backward], axis=2)  # (N, T, 2, H)
        final = [ops.stack([finals[i], finals[per_direction + i]], axis=1) for i in range(per_direction)]  # (N, 2, H)
        sequence_axes, final_axes = ((0, 1, 2, 3), (0, 1, 2)) if layout else ((1, 2, 0, 3), (1, 0, 2))
    else:
        if direction not in ("forward", "reverse"):
            raise RosettaError(f"keras mapper: {kind} direction={direction!r} is not supported")
        layer = make(direction == "reverse", context.name(kind))
        sequence, *final = layer(x.tensor, **call)
        layer.set_weights(weights(0))
        if direction == "reverse":  # Keras gives the outputs in processing order; ONNX at their time step
            sequence = ops.flip(sequence, axis=1)
        sequence_axes, final_axes = ((0, 1, None, 2), (0, None, 1)) if layout else ((1, None, 0, 2), (None, 0, 1))
    return [Mapped(sequence, sequence_axes)] + [Mapped(state, final_axes) for state in final]


@add_converter("RNN", 7, reads_symbolic=True)
def rnn(context, node, attrs):
    return recurrent(context, node, attrs, "RNN")


@add_converter("GRU", 7, reads_symbolic=True)
def gru(context, node, attrs):
    return recurrent(context, node, attrs, "GRU")


@add_converter("LSTM", 7, reads_symbolic=True)
def lstm(context, node, attrs):
    return recurrent(context, node, attrs, "LSTM")
