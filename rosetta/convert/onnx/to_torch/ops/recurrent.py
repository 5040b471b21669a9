"""GRU and LSTM (onnx2torch has neither) on torch.nn.GRU/LSTM: ONNX stacks the gates z, r, h and i, o, f, c, torch
r, z, n and i, f, g, o; ONNX B is [Wb; Rb] (torch's bias_ih, bias_hh); layout=1 and Y (T, D, N, H) are
transposes of torch's. Refused with the reason, being what torch's modules do not compute: GRU
linear_before_reset=0, LSTM peepholes (input P, unless all zeros) and input_forget, and for both clip,
activations other than the defaults, sequence_lens and direction=reverse."""

from __future__ import annotations

import torch
from onnx2torch.utils.common import OnnxMapping, OnnxToTorchModule, OperationConverterResult

from rosetta.convert.onnx.to_torch.registry import add_converter
from rosetta.errors import RosettaError


class OnnxRecurrent(torch.nn.Module, OnnxToTorchModule):
    """A torch RNN (time-major, as torch keeps its states) behind ONNX's layouts: X (T, N, I) and states
    (D, N, H), or with layout=1 X (N, T, I) and states (N, D, H); Y is (T, D, N, H), or (N, T, D, H)."""

    def __init__(self, batch_first: bool) -> None:
        super().__init__()
        self.batch_first = batch_first

    def time_major(self, tensor):  # layout=1 puts the batch first on X and on the states
        return tensor.transpose(0, 1) if self.batch_first and tensor is not None else tensor

    def onnx_outputs(self, rnn, y, *states):
        steps, batch, _ = y.shape
        y = y.view(steps, batch, 2 if rnn.bidirectional else 1, rnn.hidden_size)
        return (y.transpose(0, 1) if self.batch_first else y.transpose(1, 2),
                *(self.time_major(state) for state in states))


class OnnxGRU(OnnxRecurrent):
    """ONNX GRU on torch.nn.GRU: X, [initial_h] -> Y, Y_h."""

    def __init__(self, gru: torch.nn.GRU, batch_first: bool) -> None:
        super().__init__(batch_first)
        self.gru = gru

    def forward(self, x, initial_h=None):
        y, h = self.gru(self.time_major(x), self.time_major(initial_h))
        return self.onnx_outputs(self.gru, y, h)


class OnnxLSTM(OnnxRecurrent):
    """ONNX LSTM on torch.nn.LSTM: X, [initial_h], [initial_c] -> Y, Y_h, Y_c. ONNX lets either initial state be
    omitted (zeros); torch takes both or neither."""

    def __init__(self, lstm: torch.nn.LSTM, batch_first: bool) -> None:
        super().__init__(batch_first)
        self.lstm = lstm

    def forward(self, x, initial_h=None, initial_c=None):
        h, c = self.time_major(initial_h), self.time_major(initial_c)
        if (h is None) != (c is None):
            h, c = (torch.zeros_like(c) if h is None else h), (torch.zeros_like(h) if c is None else c)
        y, (h, c) = self.lstm(self.time_major(x), None if h is None else (h, c))
        return self.onnx_outputs(self.lstm, y, h, c)


def _recurrent_converter(rnn_class, module_class, onnx_gates: str, torch_gates: str, default_activations: list[str],
                         unsupported):
    """An onnx2torch converter for ONNX GRU or LSTM. The two share their inputs (X, W, R, B, sequence_lens,
    initial_h, [initial_c, P]), B = [Wb; Rb] (torch's bias_ih, bias_hh) and W, R, B with their gates stacked
    along the rows, in another order than torch's; `unsupported(node, inputs, graph)` lists what else of the op
    torch cannot express."""
    order = [onnx_gates.index(gate) for gate in torch_gates]

    def reorder(stacked):
        gates = stacked.chunk(len(order), dim=0)
        return torch.cat([gates[index] for index in order], dim=0)

    def convert(node, graph) -> OperationConverterResult:
        attributes, op = node.attributes, node.operation_type
        inputs = list(node.input_values) + [""] * (8 - len(node.input_values))
        x_name, w_name, r_name, b_name, lengths_name = inputs[:5]
        problems = unsupported(node, inputs, graph)
        if attributes.get("direction", "forward") == "reverse":
            problems.append("direction=reverse")
        if attributes.get("clip") is not None:
            problems.append("clip")
        activations = [a.lower() for a in attributes.get("activations", [])]
        if activations not in ([], default_activations, default_activations * 2):
            problems.append(f"activations {attributes.get('activations')}")
        if lengths_name:
            problems.append("sequence_lens")
        if any(name and name not in graph.initializers for name in (w_name, r_name, b_name)):
            problems.append("weights that are not initializers")
        if problems:
            raise RosettaError(f"{op} node {node.name!r}: rosetta's onnx2torch {op} converter does not support "
                               + ", ".join(problems))
        w = graph.initializers[w_name].to_torch()
        r = graph.initializers[r_name].to_torch()
        directions, gate_rows, input_size = w.shape
        b = graph.initializers[b_name].to_torch() if b_name else torch.zeros(directions, 2 * gate_rows)
        rnn = rnn_class(input_size, gate_rows // len(order), bidirectional=directions == 2)
        with torch.no_grad():
            for d, suffix in enumerate(["", "_reverse"][:directions]):
                getattr(rnn, f"weight_ih_l0{suffix}").copy_(reorder(w[d]))
                getattr(rnn, f"weight_hh_l0{suffix}").copy_(reorder(r[d]))
                getattr(rnn, f"bias_ih_l0{suffix}").copy_(reorder(b[d, :gate_rows]))
                getattr(rnn, f"bias_hh_l0{suffix}").copy_(reorder(b[d, gate_rows:]))
        states = inputs[5:7] if op == "LSTM" else inputs[5:6]
        while states and not states[-1]:  # an omitted state is "", for which onnx2torch passes None
            states.pop()
        module = module_class(rnn, batch_first=attributes.get("layout", 0) == 1)
        return OperationConverterResult(torch_module=module,
                                        onnx_mapping=OnnxMapping(inputs=(x_name, *states), outputs=node.output_values))

    return convert


def _gru_unsupported(node, inputs, graph) -> list[str]:
    if node.attributes.get("linear_before_reset", 0) != 1:
        return ["linear_before_reset=0 (torch.nn.GRU computes linear_before_reset=1)"]
    return []


def _lstm_unsupported(node, inputs, graph) -> list[str]:
    problems = []
    peepholes = inputs[7]  # all zeros is the same as none
    if peepholes and (peepholes not in graph.initializers or graph.initializers[peepholes].to_torch().any()):
        problems.append("peepholes (input P)")
    if node.attributes.get("input_forget", 0):
        problems.append("input_forget")
    return problems


# gates: ONNX GRU z, r, h and LSTM i, o, f, c; torch's GRU r, z, n (= h) and LSTM i, f, g (= c), o
_gru = _recurrent_converter(torch.nn.GRU, OnnxGRU, "zrh", "rzh", ["sigmoid", "tanh"], _gru_unsupported)
_lstm = _recurrent_converter(torch.nn.LSTM, OnnxLSTM, "iofc", "ifco", ["sigmoid", "tanh", "tanh"], _lstm_unsupported)


@add_converter("GRU", 14)
@add_converter("GRU", 7)
def gru(node, graph) -> OperationConverterResult:
    return _gru(node, graph)


@add_converter("LSTM", 14)
@add_converter("LSTM", 7)
def lstm(node, graph) -> OperationConverterResult:
    return _lstm(node, graph)
