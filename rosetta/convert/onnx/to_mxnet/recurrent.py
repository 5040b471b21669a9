"""GRU and LSTM (the importer has none) on MXNet's fused RNN operator, one or two directions: the ONNX weights
packed into its flat parameter vector, gates reordered from ONNX's z, r, h to MXNet's r, z, n (GRU: MXNet's is the
linear_before_reset=1 formulation, input and recurrent biases kept apart) and from i, o, f, c to i, f, c, o
(LSTM). The importer looks every input up by name, "" included: `name_omitted_inputs`
names their omitted optional inputs OMITTED (an unused initializer), which these converters read as omitted."""

from __future__ import annotations

import numpy as np

from rosetta.convert.onnx.rewrites import rewrite
from rosetta.convert.onnx.to_mxnet.registry import add_converter
from rosetta.errors import RosettaError

OMITTED = "rosetta_omitted_input"  # the name an omitted optional input is given (name_omitted_inputs)


def _reorder(gates: np.ndarray) -> np.ndarray:
    z, r, h = np.split(gates, 3, axis=0)
    return np.concatenate([r, z, h], axis=0)


@add_converter("GRU", 1)
def gru(attrs, inputs, importer):
    """ONNX GRU -> mx.sym.RNN(mode='gru'), forward or bidirectional; returns the Group (Y, Y_h) the importer
    indexes by output. The parameter vector is every direction's W and R, then every direction's input and
    recurrent biases, as for the LSTM."""
    from rosetta.frameworks.mxnet import import_mxnet

    mx = import_mxnet()
    if attrs.get("linear_before_reset", 0) != 1:
        raise RosettaError("GRU with linear_before_reset=0 has no MXNet equivalent (MXNet computes linear_before_reset=1)")
    direction = attrs.get("direction", b"forward")
    direction = direction.decode() if isinstance(direction, bytes) else direction
    if direction not in ("forward", "bidirectional"):
        raise RosettaError(f"GRU direction={direction!r} is not supported by rosetta's MXNet GRU converter")
    _refuse_sequence_lens("GRU", inputs)
    data, w_sym, r_sym = inputs[:3]
    w, r = importer._params[w_sym.name].asnumpy(), importer._params[r_sym.name].asnumpy()
    directions, hidden = w.shape[0], int(attrs["hidden_size"])
    b = importer._params[inputs[3].name].asnumpy() if _given(inputs, 3) else np.zeros((directions, 6 * hidden), np.float32)
    flat = np.concatenate([_reorder(m[d]).ravel() for d in range(directions) for m in (w, r)]
                          + [_reorder(part).ravel() for d in range(directions) for part in np.split(b[d], 2)]
                          ).astype(np.float32)
    name = f"{w_sym.name}_mxnet_gru_parameters"
    importer._params[name] = mx.nd.array(flat)
    parameters = mx.sym.Variable(name, shape=flat.shape)
    state = inputs[5] if _given(inputs, 5) else _zero_state(data, directions, hidden)
    rnn = mx.sym.RNN(data=data, parameters=parameters, state=state, state_size=hidden, num_layers=1,
                     mode="gru", bidirectional=directions == 2, state_outputs=True)
    # MXNet's output (T, N, D * H) -> ONNX Y (T, D, N, H)
    y = mx.sym.transpose(mx.sym.reshape(rnn[0], shape=(0, 0, directions, hidden)), axes=(0, 2, 1, 3))
    return mx.sym.Group([y, rnn[1]]), attrs, inputs


def _given(inputs, index: int) -> bool:
    """Whether the optional input at `index` is given (neither past the end nor named OMITTED)."""
    return index < len(inputs) and inputs[index].name != OMITTED


def _refuse_sequence_lens(op: str, inputs) -> None:
    if _given(inputs, 4):
        raise RosettaError(f"{op} with sequence_lens cannot be converted to mxnet: MXNet's RNN operator reads "
                           "whole sequences")


def _zero_state(data, directions: int, hidden: int):
    """Zeros of shape (directions, batch, hidden) in the data's dtype: an omitted initial state, from the
    batch size of time-major data (T, N, I)."""
    from rosetta.frameworks.mxnet import import_mxnet

    mx = import_mxnet()
    column = mx.sym.slice_axis(mx.sym.slice_axis(data, axis=0, begin=0, end=1), axis=2, begin=0, end=1)
    return mx.sym.broadcast_axis(mx.sym.zeros_like(column), axis=(0, 2), size=(directions, hidden))


@add_converter("LSTM", 1)
def lstm(attrs, inputs, importer):
    """ONNX LSTM -> mx.sym.RNN(mode='lstm'), forward or bidirectional; returns the Group (Y, Y_h, Y_c).
    The parameter vector is every direction's W and R, then every direction's input and recurrent biases."""
    from rosetta.frameworks.mxnet import import_mxnet

    mx = import_mxnet()
    problems = [name for name, bad in (
        ("layout=1", attrs.get("layout", 0) != 0), ("clip", "clip" in attrs), ("input_forget", attrs.get("input_forget", 0)),
        ("direction=reverse", attrs.get("direction", "forward") not in ("forward", "bidirectional")),
        ("activations", [a.decode().lower() if isinstance(a, bytes) else a.lower() for a in attrs.get("activations", ())]
         not in ([], ["sigmoid", "tanh", "tanh"], ["sigmoid", "tanh", "tanh"] * 2)),
        ("peepholes (input P)", _given(inputs, 7) and (inputs[7].name not in importer._params
                                                      or importer._params[inputs[7].name].asnumpy().any())),
        ("weights computed at run time", any(i.name not in importer._params for i in inputs[1:4] if i.name != OMITTED)),
    ) if bad]
    if problems:
        raise RosettaError(f"LSTM with {', '.join(problems)} cannot be converted to mxnet by rosetta's LSTM converter")
    _refuse_sequence_lens("LSTM", inputs)
    data, w_sym, r_sym = inputs[:3]
    w, r = importer._params[w_sym.name].asnumpy(), importer._params[r_sym.name].asnumpy()
    directions, hidden = w.shape[0], int(attrs["hidden_size"])
    b = importer._params[inputs[3].name].asnumpy() if _given(inputs, 3) else np.zeros((directions, 8 * hidden), np.float32)

    def reorder(gates):  # ONNX i, o, f, c -> MXNet i, f, c, o
        i, o, f, c = np.split(gates, 4, axis=0)
        return np.concatenate([i, f, c, o], axis=0).ravel()

    flat = np.concatenate([reorder(m[d]) for d in range(directions) for m in (w, r)]
                          + [reorder(part) for d in range(directions) for part in np.split(b[d], 2)]).astype(np.float32)
    name = f"{w_sym.name}_mxnet_lstm_parameters"
    importer._params[name] = mx.nd.array(flat)
    parameters = mx.sym.Variable(name, shape=flat.shape)
    h = inputs[5] if _given(inputs, 5) else None
    c = inputs[6] if _given(inputs, 6) else None
    h = h if h is not None else (mx.sym.zeros_like(c) if c is not None else _zero_state(data, directions, hidden))
    c = c if c is not None else mx.sym.zeros_like(h)
    rnn = mx.sym.RNN(data=data, parameters=parameters, state=h, state_cell=c, state_size=hidden, num_layers=1,
                     mode="lstm", bidirectional=directions == 2, state_outputs=True)
    # MXNet's output (T, N, D * H) -> ONNX Y (T, D, N, H)
    y = mx.sym.transpose(mx.sym.reshape(rnn[0], shape=(0, 0, directions, hidden)), axes=(0, 2, 1, 3))
    return mx.sym.Group([y, rnn[1], rnn[2]]), attrs, inputs


@rewrite
def name_omitted_inputs(model):
    """The omitted optional inputs ("") of GRU, LSTM, Clip and Pad, whose converters read them, named OMITTED,
    an initializer no converter uses (module docstring)."""
    from onnx import numpy_helper

    named = False
    for node in model.graph.node:
        if node.op_type in ("GRU", "LSTM", "Clip", "Pad") and "" in node.input:
            node.input[:] = [name or OMITTED for name in node.input]
            named = True
    if named:
        model.graph.initializer.append(numpy_helper.from_array(np.zeros(1, np.float32), OMITTED))
    return model
