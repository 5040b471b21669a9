"""rosetta's onnx2torch converters, registered in onnx2torch's registry by `register` (called once by
frameworks.onnx2torch.import_onnx2torch): the modules they make are classes of this module, so that a manifest can
name them at a path they import from (`rosetta.frameworks.onnx2torch_converters.OnnxGRU`). Each is registered
with onnx2torch's `add_converter`; the few that replace one of onnx2torch's own go through `replace_converter`,
the one place that writes its private registry. onnx2torch is imported here with a stand-in for torchvision
(see frameworks.onnx2torch, 1.).

- GRU and LSTM (onnx2torch has none) on torch.nn.GRU/LSTM: ONNX stacks the gates z, r, h and i, o, f, c, torch
  r, z, n and i, f, g, o; ONNX B is [Wb; Rb] (torch's bias_ih, bias_hh); layout=1 and Y (T, D, N, H) are
  transposes of torch's. Refused with the reason, being what torch's modules do not compute: GRU
  linear_before_reset=0, LSTM peepholes (input P, unless all zeros) and input_forget, and for both clip,
  activations other than the defaults, sequence_lens and direction=reverse.
- GlobalMaxPool (none): the max over every axis after N and C, kept (torch.amax, which like ONNX propagates NaN).
- GroupNormalization (none): group statistics (torch's group_norm), then the trainable per-channel scale and bias
  (opset 18 gives them per group, each applied to its group's channels).
- Trilu (none) with k computed at run time (a constant k is rewritten as Where before: rewrites.trilu_as_where).
- The opset-18 forms of the reductions (axes an input), adapted to onnx2torch's opset-13 converters where the axes
  are a constant; Split-18 (num_outputs, the last part smaller), Pad from opset 18 without `axes` (onnx2torch's
  opset-13 Pad is the same function).
- Replacing onnx2torch's (silently wrong): CumSum (it defaults `reverse` to 1; ONNX to 0), Pad-2 (it reads the pad
  value from an attribute `constant_value`; ONNX names it `value`), NonZero (torch.nonzero is ONNX's transpose),
  IsInf (its detect_positive/detect_negative flags ignored), TopK (ties in torch.topk's order, not lowest index
  first: a stable sort);
  ConvTranspose with output_shape or auto_pad, which onnx2torch ignores, is refused by name.
- Wrapping onnx2torch's: LayerNormalization takes nn.LayerNorm's normalized_shape from the input's inferred
  shape, which is 0 where shape inference left an axis symbolic (torch's TransformerEncoder/mixer exports after a
  Transpose): the module then fails at run time. Where the scale is a weight of exactly the normalized axes'
  rank, its shape is the normalized shape. An opset-12+ Dropout becomes `OnnxDropoutDynamic`, which takes its
  ratio as a run-time input: a layer whose rate no one can read or set, and which no code that turns dropout off
  for a comparison finds; where the ratio is a constant and training_mode is omitted, it is
  torch.nn.Dropout(p=ratio), which is what it means.
- ConstantOfShape: onnx2torch builds `torch.Size(shape_tensor)` from its shape input at run time; under
  torch.compile that tensor is a FakeTensor and Dynamo fails ("torch.Size() takes an iterable of 'int'"), and on
  a GPU it reads the shape back to the host every step (torch's exporter writes a GRU's zero initial state that
  way, Shape -> Gather -> Unsqueeze -> Concat of the input). Where the shape is computed from one tensor's shape
  and constants alone (`_shape_terms`), `OnnxConstantOfShapeOf` takes that tensor and calls torch.full with sizes
  read from its `.shape`; the Shape nodes it no longer needs are dropped from the FX graph.
- Gather of one constant index and an opset-13+ Squeeze of constant axes: onnx2torch takes them as run-time
  tensors, which torch turns into Python ints by reading them back from the device at every call (a host sync
  per step on a GPU, which a CUDA graph cannot hold): `OnnxSelect` (torch.select) and onnx2torch's own
  static-axes Squeeze.
"""

from __future__ import annotations

import importlib
import types

import torch
from onnx import helper

from rosetta.errors import RosettaError, Unsupported
from rosetta.imports import stand_in_modules


def _torchvision_stand_in() -> dict[str, types.ModuleType]:
    def unavailable(*_args, **_kwargs):
        raise Unsupported("this model uses NMS/RoiAlign, whose onnx2torch converters need torchvision; "
                          "install a torchvision that matches your torch")

    package = types.ModuleType("torchvision")
    ops = types.ModuleType("torchvision.ops")
    for name in ("nms", "batched_nms", "box_convert", "roi_align"):
        setattr(ops, name, unavailable)
    package.ops = ops
    return {"torchvision": package, "torchvision.ops": ops}


try:
    importlib.import_module("torchvision")
    _STAND_IN = {}
except Exception:  # absent, or a build that does not match torch
    _STAND_IN = _torchvision_stand_in()
with stand_in_modules(_STAND_IN):
    import onnx2torch  # noqa: F401 - its node converters register themselves
from onnx2torch.node_converters import registry  # noqa: E402
from onnx2torch.node_converters.pad import OnnxPadStatic  # noqa: E402
from onnx2torch.node_converters.registry import add_converter, get_converter  # noqa: E402
from onnx2torch.onnx_node import OnnxNode  # noqa: E402
from onnx2torch.utils.common import (OnnxMapping, OnnxToTorchModule, OperationConverterResult,  # noqa: E402
                                     onnx_mapping_from_node)


def replace_converter(op_type: str, wrap, versions=None) -> None:
    """The converters of onnx2torch's for `op_type` (those of `versions`, or all) replaced by `wrap(original)`:
    onnx2torch's `add_converter` refuses a second registration and it has no other way, so this is the one
    place rosetta writes its registry dict (`_CONVERTER_REGISTRY`)."""
    for description, original in list(registry._CONVERTER_REGISTRY.items()):
        if description.operation_type == op_type and description.domain in ("", "ai.onnx") and \
                (versions is None or description.version in versions):
            registry._CONVERTER_REGISTRY[description] = wrap(original)


def _result(module, node) -> OperationConverterResult:
    return OperationConverterResult(torch_module=module, onnx_mapping=onnx_mapping_from_node(node))


def _constant(graph, name: str):
    """The value of `name` where the graph makes it a constant (an initializer or a Constant node), or None."""
    if name in graph.initializers:
        return graph.initializers[name].to_torch()
    try:
        node, _ = graph.value_as_node_output(name)
    except KeyError:
        return None
    value = node.attributes.get("value") if node.operation_type == "Constant" else None
    return value.to_torch() if hasattr(value, "to_torch") else None


def _as_node(node, inputs: list, **attributes) -> OnnxNode:
    """`node` with other inputs and attributes: how an opset-18 form is handed to onnx2torch's older converter."""
    proto = helper.make_node(node.operation_type, inputs, list(node.output_values), name=node.name, **attributes)
    return OnnxNode(proto, node.unique_name)


# ---- recurrent layers ------------------------------------------------------------------------------------------
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


# ---- ops onnx2torch lacks ----------------------------------------------------------------------------------------
class OnnxGlobalMaxPool(torch.nn.Module, OnnxToTorchModule):
    """ONNX GlobalMaxPool: (N, C, D1, ...) -> (N, C, 1, ...), the max over D1, ..."""

    def forward(self, x):
        return torch.amax(x, dim=tuple(range(2, x.dim())), keepdim=True)


def _global_max_pool(node, graph) -> OperationConverterResult:
    return _result(OnnxGlobalMaxPool(), node)


class OnnxGroupNorm(torch.nn.Module, OnnxToTorchModule):
    """ONNX GroupNormalization: torch's group statistics (group_norm without affine), then the trainable scale
    and bias, per channel, or per group (opset 18), each applied to its group's channels."""

    def __init__(self, groups: int, scale: torch.Tensor, bias: torch.Tensor, epsilon: float) -> None:
        super().__init__()
        self.groups, self.epsilon = groups, epsilon
        self.weight, self.bias = torch.nn.Parameter(scale.clone()), torch.nn.Parameter(bias.clone())

    def forward(self, x):
        normalized = torch.nn.functional.group_norm(x, self.groups, eps=self.epsilon)
        repeat = x.shape[1] // self.weight.numel()
        shape = (1, -1) + (1,) * (x.dim() - 2)
        return normalized * self.weight.repeat_interleave(repeat).view(shape) \
            + self.bias.repeat_interleave(repeat).view(shape)


def _group_normalization(node, graph) -> OperationConverterResult:
    scale, bias = (_constant(graph, name) for name in node.input_values[1:3])
    if scale is None or bias is None:
        raise RosettaError(f"GroupNormalization node {node.name!r}: rosetta's onnx2torch converter needs its scale "
                           "and bias as initializers (its trainable weights)")
    module = OnnxGroupNorm(node.attributes["num_groups"], scale.float(), bias.float(), node.attributes.get("epsilon", 1e-5))
    return OperationConverterResult(torch_module=module, onnx_mapping=OnnxMapping(inputs=node.input_values[:1],
                                                                                  outputs=node.output_values))


class OnnxTrilu(torch.nn.Module, OnnxToTorchModule):
    """ONNX Trilu with k given at run time: torch.triu or torch.tril of the last two axes."""

    def __init__(self, upper: bool) -> None:
        super().__init__()
        self.upper = upper

    def forward(self, x, k=None):
        diagonal = 0 if k is None else int(k)
        return torch.triu(x, diagonal) if self.upper else torch.tril(x, diagonal)


def _trilu(node, graph) -> OperationConverterResult:
    return _result(OnnxTrilu(bool(node.attributes.get("upper", 1))), node)


class OnnxSplit18(torch.nn.Module, OnnxToTorchModule):
    """ONNX Split from opset 18: by the sizes in `split`, or into `parts` of ceil(length / parts), the last one
    smaller."""

    def __init__(self, axis: int, parts: int) -> None:
        super().__init__()
        self.axis, self.parts = axis, parts

    def forward(self, x, split=None):
        if split is not None:
            return torch.split(x, split.tolist(), dim=self.axis)
        length = x.shape[self.axis]
        size = -(-length // self.parts)
        return torch.split(x, [size] * (self.parts - 1) + [length - size * (self.parts - 1)], dim=self.axis)


def _split(node, graph) -> OperationConverterResult:
    parts = node.attributes.get("num_outputs", len(node.output_values))
    return _result(OnnxSplit18(node.attributes.get("axis", 0), parts), node)


_REDUCTIONS_18 = ("ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin",
                  "ReduceProd", "ReduceSumSquare")


def _reduction_18(node, graph) -> OperationConverterResult:
    """The opset-18 reductions take their axes as an input: a constant one becomes the attribute of onnx2torch's
    opset-13 converter; none is every axis, or with noop_with_empty_axes the input itself."""
    inputs = list(node.input_values)
    axes = _constant(graph, inputs[1]) if len(inputs) > 1 and inputs[1] else None
    if len(inputs) > 1 and inputs[1] and axes is None:
        raise RosettaError(f"{node.operation_type} node {node.name!r}: axes computed at run time cannot be "
                           "converted to torch by rosetta's adapter of onnx2torch's opset-13 reduction")
    keepdims = node.attributes.get("keepdims", 1)
    if axes is None or axes.numel() == 0:
        if node.attributes.get("noop_with_empty_axes", 0):
            return get_converter("Identity", 13)(_as_node(node, inputs[:1]), graph)
        return get_converter(node.operation_type, 13)(_as_node(node, inputs[:1], keepdims=keepdims), graph)
    return get_converter(node.operation_type, 13)(
        _as_node(node, inputs[:1], axes=[int(a) for a in axes.tolist()], keepdims=keepdims), graph)




def _pad_18(node, graph) -> OperationConverterResult:
    """Pad from opset 18 without its `axes` input is opset 13's Pad (onnx2torch's)."""
    inputs = list(node.input_values)
    if len(inputs) > 3 and inputs[3]:
        raise RosettaError(f"Pad node {node.name!r}: an `axes` input cannot be converted to torch by rosetta's "
                           "adapter of onnx2torch's opset-13 Pad")
    return get_converter("Pad", 13)(_as_node(node, inputs[:3], **dict(node.attributes)), graph)


# ---- onnx2torch's own, replaced where they compute another function ---------------------------------------------
class OnnxCumSum(torch.nn.Module, OnnxToTorchModule):
    """ONNX CumSum along a run-time axis, `exclusive` (each sum without its own element) and `reverse`."""

    def __init__(self, exclusive: bool, reverse: bool) -> None:
        super().__init__()
        self.exclusive, self.reverse = exclusive, reverse

    def forward(self, x, axis):
        dim = int(axis)
        if self.reverse:
            x = torch.flip(x, (dim,))
        summed = torch.cumsum(x, dim)
        if self.exclusive:
            summed = summed - x
        return torch.flip(summed, (dim,)) if self.reverse else summed


def _cumsum(original):
    def convert(node, graph) -> OperationConverterResult:
        return _result(OnnxCumSum(bool(node.attributes.get("exclusive", 0)), bool(node.attributes.get("reverse", 0))),
                       node)
    return convert


def _pad_2(original):
    def convert(node, graph) -> OperationConverterResult:
        module = OnnxPadStatic.create_from_onnx_params(onnx_pads=node.attributes.get("pads"),
                                                       onnx_mode=node.attributes.get("mode", "constant"),
                                                       constant_value=node.attributes.get("value", 0.0))
        return _result(module, node)
    return convert


class OnnxIsInf(torch.nn.Module, OnnxToTorchModule):
    """ONNX IsInf with its detect_positive and detect_negative flags (onnx2torch's reads neither)."""

    def __init__(self, positive: bool, negative: bool) -> None:
        super().__init__()
        self.positive, self.negative = positive, negative

    def forward(self, x):
        if self.positive and self.negative:
            return torch.isinf(x)
        if self.positive:
            return torch.isposinf(x)
        if self.negative:
            return torch.isneginf(x)
        return torch.zeros_like(x, dtype=torch.bool)


def _isinf(original):
    def convert(node, graph) -> OperationConverterResult:
        return _result(OnnxIsInf(bool(node.attributes.get("detect_positive", 1)),
                                 bool(node.attributes.get("detect_negative", 1))), node)
    return convert


class OnnxTopK(torch.nn.Module, OnnxToTorchModule):
    """ONNX TopK, whose equal values come lowest index first: a stable sort, then the first k (torch.topk
    orders ties as it likes, onnx2torch's TopK with it)."""

    def __init__(self, axis: int, largest: bool) -> None:
        super().__init__()
        self.axis, self.largest = axis, largest

    def forward(self, x, k):
        count = int(k.reshape(-1)[0]) if isinstance(k, torch.Tensor) else int(k)
        values, indices = torch.sort(x, dim=self.axis, descending=self.largest, stable=True)
        return values.narrow(self.axis, 0, count), indices.narrow(self.axis, 0, count)


def _topk(original):
    def convert(node, graph) -> OperationConverterResult:
        if len(node.input_values) < 2:  # TopK-1: k an attribute
            return original(node, graph)
        return _result(OnnxTopK(node.attributes.get("axis", -1), bool(node.attributes.get("largest", 1))), node)
    return convert


class OnnxNonZero(torch.nn.Module, OnnxToTorchModule):
    """ONNX NonZero: the indices of the non-zero elements, one row per axis (torch.nonzero's transpose)."""

    def forward(self, x):
        return torch.nonzero(x).T


def _nonzero(original):
    def convert(node, graph) -> OperationConverterResult:
        return _result(OnnxNonZero(), node)
    return convert


def _layer_norm_with_scale_shape(original):
    def convert(node, graph):
        result = original(node, graph)
        module = result.torch_module
        scale = node.input_values[1] if len(node.input_values) > 1 else None
        if scale in graph.initializers and hasattr(module, "normalized_shape") and 0 in module.normalized_shape:
            shape = tuple(graph.initializers[scale].to_torch().shape)
            axis = node.attributes.get("axis", -1)
            if axis < 0 and len(shape) == -axis:
                module.normalized_shape = shape
        return result
    return convert


def _dropout_with_constant_ratio(original):
    def convert(node, graph):
        inputs = node.input_values
        ratio = _constant(graph, inputs[1]) if len(inputs) > 1 and inputs[1] else torch.tensor(0.5)
        mask = len(node.output_values) > 1 and node.output_values[1]
        if ratio is None or mask or (len(inputs) > 2 and inputs[2]):
            return original(node, graph)
        return OperationConverterResult(torch_module=torch.nn.Dropout(p=float(ratio)),
                                        onnx_mapping=OnnxMapping(inputs=(inputs[0],), outputs=node.output_values[:1]))
    return convert


def _conv_transpose_without_output_shape(original):
    """onnx2torch's ConvTranspose reads neither output_shape nor auto_pad: refused by name where given."""
    def convert(node, graph):
        if "output_shape" in node.attributes or node.attributes.get("auto_pad", "NOTSET") != "NOTSET":
            raise RosettaError(f"ConvTranspose node {node.name!r} with output_shape or auto_pad cannot be converted to "
                               "torch: onnx2torch's converter computes the size of pads and output_padding alone")
        return original(node, graph)
    return convert


def _shape_terms(graph, name: str):
    """The value `name` as sizes of one tensor's shape, where the graph computes it from a Shape and constants
    only: (that tensor's name, or None for a constant; terms; whether it is a scalar). A term is an int, ("dim",
    i): the source's size i, or ("dims", start, end): its sizes start:end. None where it is computed otherwise."""
    constant = _constant(graph, name)
    if constant is not None:
        return None, [int(value) for value in constant.reshape(-1).tolist()], constant.dim() == 0
    try:
        node, _ = graph.value_as_node_output(name)
    except KeyError:
        return None
    op, inputs, attributes = node.operation_type, node.input_values, node.attributes
    if op == "Shape":
        return inputs[0], [("dims", attributes.get("start", 0), attributes.get("end"))], False
    found = [_shape_terms(graph, value) for value in inputs if value]
    sources = {source for source, _, _ in filter(None, found)} - {None}
    if None in found or len(sources) > 1:
        return None
    source, terms, scalar = (sources.pop() if sources else None), found[0][1], found[0][2]
    if op == "Cast":
        return source, terms, scalar
    if op == "Concat" and not any(part[2] for part in found):
        return source, [term for part in found for term in part[1]], False
    axes = found[1][1] if len(found) > 1 else attributes.get("axes")  # an input from opset 13, else an attribute
    if op == "Unsqueeze" and scalar and axes == [0]:
        return source, terms, False
    if op == "Squeeze" and len(terms) == 1 and (isinstance(terms[0], int) or terms[0][0] == "dim"):
        return source, terms, True
    if op == "Gather" and attributes.get("axis", 0) == 0 and len(found) == 2 and found[1][0] is None:
        picked = [_pick(terms, index) for index in found[1][1]]
        return None if None in picked else (source, picked, found[1][2])
    return None


def _pick(terms: list, index: int):
    """Term `index` of a shape value (see _shape_terms), or None where its position is not known."""
    if all(not isinstance(term, tuple) or term[0] == "dim" for term in terms):
        return terms[index] if -len(terms) <= index < len(terms) else None
    if len(terms) == 1 and terms[0][2] is None:  # the source's sizes from `start` on: its rank is not known
        start = terms[0][1]
        if index >= 0 and (start >= 0 or start + index < 0):
            return "dim", start + index
        if index < 0 and start >= 0:  # the last sizes are the source's last
            return "dim", index
    return None


def _constant_of_shape_from_sizes(original):
    """ConstantOfShape of sizes of one tensor's shape (see the module docstring)."""
    import torch
    from onnx2torch.utils.common import OnnxMapping, OnnxToTorchModule, OperationConverterResult

    class OnnxConstantOfShapeOf(torch.nn.Module, OnnxToTorchModule):
        """ConstantOfShape whose shape is sizes of its input's shape (`terms`, see _shape_terms)."""

        def __init__(self, value, terms: list) -> None:
            super().__init__()
            self.register_buffer("value", value)  # the state_dict entry onnx2torch's module has
            self.fill, self.terms = value.reshape(-1)[0].item(), terms

        def forward(self, source=None):
            shape = () if source is None else source.shape
            sizes = []
            for term in self.terms:
                if isinstance(term, int):
                    sizes.append(term)
                elif term[0] == "dim":
                    sizes.append(shape[term[1]])
                else:
                    sizes.extend(shape[term[1]:term[2]])
            return torch.full(sizes, self.fill, dtype=self.value.dtype, device=self.value.device)

    def convert(node, graph):
        found = _shape_terms(graph, node.input_values[0])
        if found is None or found[2]:
            return original(node, graph)
        source, terms, _ = found
        value = node.attributes.get("value")
        value = value.to_torch() if value is not None else torch.tensor([0.0], dtype=torch.float32)
        return OperationConverterResult(torch_module=OnnxConstantOfShapeOf(value, terms),
                                        onnx_mapping=OnnxMapping(inputs=(source,) if source else (),
                                                                 outputs=node.output_values))

    return convert


def _gather_of_a_constant_index(original):
    """A constant index or constant axes as ints (see the module docstring)."""
    import torch
    from onnx2torch.utils.common import OnnxMapping, OnnxToTorchModule, OperationConverterResult

    class OnnxSelect(torch.nn.Module, OnnxToTorchModule):
        """ONNX Gather of one constant index (numpy.take of a scalar: the axis goes): torch.select."""

        def __init__(self, axis: int, index: int) -> None:
            super().__init__()
            self.axis, self.index = axis, index

        def forward(self, data):
            return data.select(self.axis, self.index)

    def convert(node, graph):
        indices = _constant(graph, node.input_values[1])
        if indices is None or indices.dim() != 0:
            return original(node, graph)
        return OperationConverterResult(torch_module=OnnxSelect(node.attributes.get("axis", 0), int(indices)),
                                        onnx_mapping=OnnxMapping(inputs=node.input_values[:1],
                                                                 outputs=node.output_values))

    return convert


def _squeeze_of_constant_axes(original):
    """A constant index or constant axes as ints (see the module docstring)."""
    from onnx2torch.node_converters.squeeze import OnnxSqueezeStaticAxes
    from onnx2torch.utils.common import OnnxMapping, OperationConverterResult

    def convert(node, graph):
        given = len(node.input_values) > 1 and node.input_values[1]
        axes = _constant(graph, node.input_values[1]) if given else None
        if axes is None:
            return original(node, graph)
        return OperationConverterResult(torch_module=OnnxSqueezeStaticAxes([int(axis) for axis in axes.reshape(-1)]),
                                        onnx_mapping=OnnxMapping(inputs=node.input_values[:1],
                                                                 outputs=node.output_values))

    return convert


# (op, versions, converter) that rosetta adds to onnx2torch's registry
ADDED = [("GRU", (7, 14), _gru), ("LSTM", (7, 14), _lstm), ("GlobalMaxPool", (1,), _global_max_pool),
         ("GroupNormalization", (18, 21), _group_normalization), ("Trilu", (14,), _trilu), ("Split", (18,), _split),
         ("Pad", (18,), _pad_18), *[(op, (18,), _reduction_18) for op in _REDUCTIONS_18]]
# (op, versions or None for all, wrapper of onnx2torch's converter) that replace onnx2torch's own
REPLACED = [("LayerNormalization", None, _layer_norm_with_scale_shape), ("Dropout", (12, 13), _dropout_with_constant_ratio),
            ("CumSum", None, _cumsum), ("Pad", (2,), _pad_2), ("NonZero", None, _nonzero), ("IsInf", None, _isinf),
            ("TopK", None, _topk),
            ("ConvTranspose", None, _conv_transpose_without_output_shape),
            ("ConstantOfShape", None, _constant_of_shape_from_sizes), ("Gather", None, _gather_of_a_constant_index),
            ("Squeeze", tuple(range(13, 100)), _squeeze_of_constant_axes)]
# {op: the module class or converter that computes it}, for a manifest
CONVERTERS = {"GRU": OnnxGRU, "LSTM": OnnxLSTM, "GlobalMaxPool": OnnxGlobalMaxPool, "GroupNormalization": OnnxGroupNorm,
              "Trilu": OnnxTrilu, "Split": OnnxSplit18, "CumSum": OnnxCumSum, "NonZero": OnnxNonZero, "Pad": _pad_18,
              "IsInf": OnnxIsInf, "TopK": OnnxTopK,
              **dict.fromkeys(_REDUCTIONS_18, _reduction_18)}


def register() -> None:
    """ADDED and REPLACED, in onnx2torch's registry (once per process: frameworks.onnx2torch.import_onnx2torch)."""
    for op, versions, converter in ADDED:
        for version in versions:
            add_converter(operation_type=op, version=version)(converter)
    for op, versions, wrap in REPLACED:
        replace_converter(op, wrap, versions)
