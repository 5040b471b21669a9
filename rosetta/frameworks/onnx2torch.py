"""onnx2torch, as rosetta uses it: a converted `torch` artifact (the ONNX graph and the converted module's
state_dict, see convert.onnx.to_torch) is rebuilt with onnx2torch, which is deterministic, and its weights
loaded with torch.load(weights_only=True): no pickled code. What rosetta adds to onnx2torch, through its own
extension points:

1. onnx2torch imports torchvision at import time, for its NMS and RoiAlign converters only. On machines
   with CPU torch, torchvision is absent or its PyPI (CUDA) build fails to import ("operator
   torchvision::nms does not exist"). While onnx2torch imports, a stand-in `torchvision` whose `ops`
   functions raise a clear error is put in sys.modules, then removed: only a model with NMS/RoiAlign is
   affected, and it gets that error.
2. onnx2torch has no GRU or LSTM converter. `OnnxGRU` and `OnnxLSTM` map them onto torch.nn.GRU/LSTM,
   registered with onnx2torch's `add_converter` for opsets 7 and 14, one converter shared by both: ONNX
   stacks the gates z, r, h (GRU) and i, o, f, c (LSTM), torch r, z, n and i, f, g, o; ONNX B is [Wb; Rb],
   torch has bias_ih and bias_hh; ONNX's layout=1 and its Y (T, D, N, H) are transposes of torch's.
   Refused with the reason, being what torch's modules do not compute: GRU linear_before_reset=0 (torch's is
   linear_before_reset=1), LSTM peepholes (input P, unless all zeros) and input_forget, and for both clip,
   activations other than the defaults, sequence_lens and direction=reverse (a reverse-only RNN).
3. onnx2torch's LayerNormalization takes nn.LayerNorm's normalized_shape from the input's inferred shape,
   which is 0 where shape inference left an axis symbolic (torch's TransformerEncoder/mixer exports after a
   Transpose): the module then fails at run time. Where the scale is a weight of exactly the normalized
   axes' rank, its shape is the normalized shape; rosetta's wrapper passes that to onnx2torch's own converter.
   onnx2torch has no way to replace a converter, so the wrapper takes its place in the registry dict.
4. onnx2torch has no GlobalMaxPool converter (tf2onnx writes Keras' GlobalMaxPooling1D/2D as one).
   `OnnxGlobalMaxPool`, registered with `add_converter`, is the max over every axis after N and C, kept as
   size 1 (torch.amax, which like ONNX propagates NaN).
5. onnx2torch returns one value per graph-output *node*, not per graph output: an output of a node with
   several outputs (a GRU's Y_h, a TopK's indices) is returned as the node's whole tuple, and two outputs of
   one node collapse into one. `_outputs_per_value` rewrites the FX graph's output: one value per ONNX graph
   output, the node's own output taken by index.
6. onnx2torch makes an opset-12+ Dropout an `OnnxDropoutDynamic` that takes its ratio as a run-time input:
   a layer whose rate no one can read or set, and which no code that turns dropout off for a comparison
   finds. Where the ratio is a constant (an initializer or a Constant node) and training_mode is omitted,
   it is torch.nn.Dropout(p=ratio), which is what it means; otherwise onnx2torch's own. Like 3., the
   wrapper takes the original's place in the registry dict.
7. onnx2torch's ConstantOfShape builds `torch.Size(shape_tensor)` from its shape input at run time: under
   torch.compile that tensor is a FakeTensor and Dynamo fails ("torch.Size() takes an iterable of 'int'"), and
   on a GPU it reads the shape back to the host every step. torch's exporter writes a GRU's zero initial state
   that way, from Shape -> Gather -> Unsqueeze -> Concat of the input. Where the shape input is computed from
   one tensor's shape and constants alone (`_shape_terms`), `OnnxConstantOfShapeOf` takes that tensor and
   calls torch.full with sizes read from its `.shape` (symbolic sizes under torch.compile, plain ints
   otherwise); the Shape nodes it no longer needs are dropped from the FX graph (their modules, which hold
   no state, stay). Otherwise onnx2torch's own converter. Like 3., the wrapper takes the original's place.
8. onnx2torch takes a Gather's indices and an opset-13 Squeeze's axes as run-time tensors even where they are
   constants, and torch turns a 0-d index or an axis tensor into a Python int by reading it back from the
   device at every call: on a GPU a host sync per step (the GRU's last-step Gather and Squeeze), which a CUDA
   graph cannot hold. Where the index is one constant, `OnnxSelect` is torch.select with it as an int; where
   the axes are constants, onnx2torch's own static-axes Squeeze. Otherwise onnx2torch's converters.
"""

from __future__ import annotations

import importlib
import re
import types
from pathlib import Path

from rosetta.errors import RosettaError, Unsupported, one_line
from rosetta.frameworks.onnx_graph import external_data_files
from rosetta.imports import stand_in_modules

GRAPH = "model.onnx"  # the files of a converted `torch` artifact (a folder)
WEIGHTS = "state_dict.pt"

_LOADED = None


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


def import_onnx2torch():
    """onnx2torch, imported once, with rosetta's GRU and LSTM converters registered."""
    global _LOADED
    if _LOADED is not None:
        return _LOADED
    try:
        importlib.import_module("torchvision")
        stand_in = {}
    except Exception:  # absent, or a build that does not match torch
        stand_in = _torchvision_stand_in()
    with stand_in_modules(stand_in):
        onnx2torch = importlib.import_module("onnx2torch")
    _register_recurrent()
    _register_global_max_pool()
    _wrap("LayerNormalization", _layer_norm_with_scale_shape)
    _wrap("Dropout", _dropout_with_constant_ratio, since=12)
    _wrap("ConstantOfShape", _constant_of_shape_from_sizes)
    _wrap("Gather", _gather_of_a_constant_index)
    _wrap("Squeeze", _squeeze_of_constant_axes, since=13)
    _LOADED = onnx2torch
    return onnx2torch


def _register_recurrent() -> None:
    """Registers `OnnxGRU` and `OnnxLSTM` with onnx2torch; their shared parts are the helpers below."""
    import torch
    from onnx2torch.node_converters.registry import add_converter
    from onnx2torch.utils.common import OnnxMapping, OnnxToTorchModule, OperationConverterResult

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
        """ONNX LSTM on torch.nn.LSTM: X, [initial_h], [initial_c] -> Y, Y_h, Y_c. ONNX lets either initial
        state be omitted (zeros); torch takes both or neither."""

        def __init__(self, lstm: torch.nn.LSTM, batch_first: bool) -> None:
            super().__init__(batch_first)
            self.lstm = lstm

        def forward(self, x, initial_h=None, initial_c=None):
            h, c = self.time_major(initial_h), self.time_major(initial_c)
            if (h is None) != (c is None):
                h, c = (torch.zeros_like(c) if h is None else h), (torch.zeros_like(h) if c is None else c)
            y, (h, c) = self.lstm(self.time_major(x), None if h is None else (h, c))
            return self.onnx_outputs(self.lstm, y, h, c)

    def converter(rnn_class, module_class, onnx_gates: str, torch_gates: str, default_activations: list[str],
                  unsupported):
        """An onnx2torch converter for ONNX GRU or LSTM. The two share their inputs (X, W, R, B, sequence_lens,
        initial_h, [initial_c, P]), B = [Wb; Rb] (torch's bias_ih, bias_hh) and W, R, B with their gates
        stacked along the rows, in another order than torch's; `unsupported(node, inputs, graph)` lists what
        else of the op torch cannot express."""
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

    def gru_unsupported(node, inputs, graph) -> list[str]:
        if node.attributes.get("linear_before_reset", 0) != 1:
            return ["linear_before_reset=0 (torch.nn.GRU computes linear_before_reset=1)"]
        return []

    def lstm_unsupported(node, inputs, graph) -> list[str]:
        problems = []
        peepholes = inputs[7]  # all zeros is the same as none
        if peepholes and (peepholes not in graph.initializers or graph.initializers[peepholes].to_torch().any()):
            problems.append("peepholes (input P)")
        if node.attributes.get("input_forget", 0):
            problems.append("input_forget")
        return problems

    # gates: ONNX GRU z, r, h and LSTM i, o, f, c; torch's GRU r, z, n (= h) and LSTM i, f, g (= c), o
    for op, convert in (
        ("GRU", converter(torch.nn.GRU, OnnxGRU, "zrh", "rzh", ["sigmoid", "tanh"], gru_unsupported)),
        ("LSTM", converter(torch.nn.LSTM, OnnxLSTM, "iofc", "ifco", ["sigmoid", "tanh", "tanh"], lstm_unsupported)),
    ):
        for version in (7, 14):
            add_converter(operation_type=op, version=version)(convert)


def _register_global_max_pool() -> None:
    """See the module docstring, 4."""
    import torch
    from onnx2torch.node_converters.registry import add_converter
    from onnx2torch.utils.common import OnnxToTorchModule, OperationConverterResult, onnx_mapping_from_node

    class OnnxGlobalMaxPool(torch.nn.Module, OnnxToTorchModule):
        """ONNX GlobalMaxPool: (N, C, D1, ...) -> (N, C, 1, ...), the max over D1, ..."""

        def forward(self, x):
            return torch.amax(x, dim=tuple(range(2, x.dim())), keepdim=True)

    @add_converter(operation_type="GlobalMaxPool", version=1)
    def convert(node, graph) -> OperationConverterResult:
        return OperationConverterResult(torch_module=OnnxGlobalMaxPool(), onnx_mapping=onnx_mapping_from_node(node))


def _wrap(operation_type: str, wrapper, since: int = 1) -> None:
    """Each of onnx2torch's converters of an ONNX-domain `operation_type` (opset `since` and later) replaced in
    its registry dict by `wrapper(original)`: onnx2torch has no way to replace a converter."""
    from onnx2torch.node_converters import registry

    for description, original in list(registry._CONVERTER_REGISTRY.items()):
        if (description.operation_type == operation_type and description.domain in ("", "ai.onnx")
                and description.version >= since):
            registry._CONVERTER_REGISTRY[description] = wrapper(original)


def _layer_norm_with_scale_shape(original):
    """See the module docstring, 3."""
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


def _constant_value(graph, name: str):
    """The value of `name` where the graph makes it a constant (an initializer or a Constant node), or None."""
    if name in graph.initializers:
        return graph.initializers[name].to_torch()
    try:
        node, _ = graph.value_as_node_output(name)
    except KeyError:
        return None
    value = node.attributes.get("value") if node.operation_type == "Constant" else None
    return value.to_torch() if hasattr(value, "to_torch") else None


def _dropout_with_constant_ratio(original):
    """See the module docstring, 6."""
    def convert(node, graph):
        import torch
        from onnx2torch.utils.common import OnnxMapping, OperationConverterResult

        inputs = node.input_values
        ratio = _constant_value(graph, inputs[1]) if len(inputs) > 1 and inputs[1] else torch.tensor(0.5)
        mask = len(node.output_values) > 1 and node.output_values[1]
        if ratio is None or mask or (len(inputs) > 2 and inputs[2]):
            return original(node, graph)
        return OperationConverterResult(torch_module=torch.nn.Dropout(p=float(ratio)),
                                        onnx_mapping=OnnxMapping(inputs=(inputs[0],), outputs=node.output_values[:1]))

    return convert


def _shape_terms(graph, name: str):
    """The value `name` as sizes of one tensor's shape, where the graph computes it from a Shape and constants
    only: (that tensor's name, or None for a constant; terms; whether it is a scalar). A term is an int, ("dim",
    i): the source's size i, or ("dims", start, end): its sizes start:end. None where it is computed otherwise."""
    constant = _constant_value(graph, name)
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
    """See the module docstring, 7."""
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
    """See the module docstring, 8."""
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
        indices = _constant_value(graph, node.input_values[1])
        if indices is None or indices.dim() != 0:
            return original(node, graph)
        return OperationConverterResult(torch_module=OnnxSelect(node.attributes.get("axis", 0), int(indices)),
                                        onnx_mapping=OnnxMapping(inputs=node.input_values[:1],
                                                                 outputs=node.output_values))

    return convert


def _squeeze_of_constant_axes(original):
    """See the module docstring, 8."""
    from onnx2torch.node_converters.squeeze import OnnxSqueezeStaticAxes
    from onnx2torch.utils.common import OnnxMapping, OperationConverterResult

    def convert(node, graph):
        given = len(node.input_values) > 1 and node.input_values[1]
        axes = _constant_value(graph, node.input_values[1]) if given else None
        if axes is None:
            return original(node, graph)
        return OperationConverterResult(torch_module=OnnxSqueezeStaticAxes([int(axis) for axis in axes.reshape(-1)]),
                                        onnx_mapping=OnnxMapping(inputs=node.input_values[:1],
                                                                 outputs=node.output_values))

    return convert


def exact_batchnorm_momentum(module) -> None:
    """ONNX keeps BatchNorm's momentum as a float32 attribute (torch's 0.1 is exported as 0.9, stored as
    0.899999976) and onnx2torch makes torch's momentum 1 - that (0.100000024, 2.4e-7 off, which float64
    training sees): the float32's shortest decimal is the value the exporter was given."""
    import numpy as np
    import torch

    for layer in module.modules():
        if isinstance(layer, torch.nn.modules.batchnorm._BatchNorm) and layer.momentum is not None:
            layer.momentum = 1.0 - float(np.format_float_positional(np.float32(1.0 - layer.momentum)))


def build_module(graph_path: Path):
    """The torch.fx.GraphModule onnx2torch makes of an ONNX file, with one-line errors."""
    import onnx

    onnx2torch = import_onnx2torch()
    try:
        model = onnx.load(str(graph_path), load_external_data=False)
        # with external data (e.g. over protobuf's 2 GB), onnx2torch infers shapes by path instead of in memory
        module = onnx2torch.convert(str(graph_path) if external_data_files(model) else onnx.load(str(graph_path)))
        _outputs_per_value(module, model)
        module.graph.eliminate_dead_code()  # e.g. the Shape nodes a ConstantOfShape no longer reads (7.)
        module.recompile()
        exact_batchnorm_momentum(module)
        return module
    except RosettaError:
        raise
    except NotImplementedError as error:  # onnx2torch: "Converter is not implemented (OperationDescription(...))"
        found = re.search(r"operation_type='(\w+)', version=(\d+)", str(error))
        if found:
            raise RosettaError(f"ONNX op {found.group(1)} (opset {found.group(2)}) cannot be converted to torch: "
                               "onnx2torch has no converter for it") from None
        raise RosettaError(f"onnx2torch cannot convert this model: {one_line(error)}") from None


def _outputs_per_value(module, model) -> None:
    """One FX output per ONNX graph output (see 5. above). onnx2torch's output list holds one FX node per
    producing ONNX node, in the order of their first graph output; a graph output that is a graph input or
    an initializer is left as onnx2torch returns it."""
    import operator

    producers = {name: node for node in model.graph.node for name in node.output if name}
    wanted = [producers.get(value.name) for value in model.graph.output]
    if None in wanted or all(len(node.output) == 1 for node in wanted):  # onnx2torch picks by index past 1
        return  # nothing onnx2torch gets wrong
    order = list(dict.fromkeys(id(node) for node in wanted))
    output = next(node for node in module.graph.nodes if node.op == "output")
    returned = output.args[0] if isinstance(output.args[0], (list, tuple)) else [output.args[0]]
    if len(returned) != len(order):
        return
    values = []
    with module.graph.inserting_before(output):
        for value, node in zip(model.graph.output, wanted):
            produced = returned[order.index(id(node))]
            if len(node.output) > 1:
                produced = module.graph.call_function(operator.getitem, (produced, list(node.output).index(value.name)))
            values.append(produced)
    output.args = (values if len(values) > 1 else values[0],)
    module.graph.lint()
    module.recompile()


def load_module(folder: Path, manifest):
    """The module of a converted `torch` artifact: its graph rebuilt by onnx2torch, its state_dict loaded."""
    import torch

    artifact = manifest.artifact_path(folder)
    module = build_module(artifact / GRAPH)
    state = torch.load(artifact / WEIGHTS, weights_only=True)
    module.load_state_dict(state, strict=True)
    return module.eval()
