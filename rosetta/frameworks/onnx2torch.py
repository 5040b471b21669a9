"""onnx2torch, as rosetta uses it: a converted `torch` artifact (the ONNX graph and the converted module's
state_dict, see convert.onnx.to_torch) is rebuilt with onnx2torch, which is deterministic, and its weights
loaded with torch.load(weights_only=True): no pickled code. What rosetta adds to onnx2torch, through its own
extension points:

1. onnx2torch imports torchvision at import time, for its NMS and RoiAlign converters only. On machines
   with CPU torch, torchvision is absent or its PyPI (CUDA) build fails to import ("operator
   torchvision::nms does not exist"). While onnx2torch imports, a stand-in `torchvision` whose `ops`
   functions raise a clear error is put in sys.modules, then removed: only a model with NMS/RoiAlign is
   affected, and it gets that error.
2. onnx2torch has no GRU converter. `OnnxGRU` maps ONNX GRU (linear_before_reset=1, the cuDNN/PyTorch
   formulation) onto torch.nn.GRU, registered with onnx2torch's `add_converter` for opsets 7 and 14:
   ONNX gates are ordered z, r, h; torch's r, z, n. ONNX B is [Wb; Rb]; torch has bias_ih and bias_hh.
"""

from __future__ import annotations

import importlib
import re
import types
from pathlib import Path

from rosetta.errors import RosettaError
from rosetta.frameworks.onnx_graph import external_data_files
from rosetta.imports import stand_in_modules

GRAPH = "model.onnx"  # the files of a converted `torch` artifact (a folder)
WEIGHTS = "state_dict.pt"

_LOADED = None


def _torchvision_stand_in() -> dict[str, types.ModuleType]:
    def unavailable(*_args, **_kwargs):
        raise RosettaError("this model uses NMS/RoiAlign, whose onnx2torch converters need torchvision; "
                           "install a torchvision that matches your torch")

    package = types.ModuleType("torchvision")
    ops = types.ModuleType("torchvision.ops")
    for name in ("nms", "batched_nms", "box_convert", "roi_align"):
        setattr(ops, name, unavailable)
    package.ops = ops
    return {"torchvision": package, "torchvision.ops": ops}


def import_onnx2torch():
    """onnx2torch, imported once, with rosetta's GRU converter registered."""
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
    _register_gru()
    _LOADED = onnx2torch
    return onnx2torch


def _register_gru() -> None:
    import torch
    from onnx2torch.node_converters.registry import add_converter
    from onnx2torch.utils.common import OnnxMapping, OnnxToTorchModule, OperationConverterResult

    class OnnxGRU(torch.nn.Module, OnnxToTorchModule):
        """ONNX GRU on torch.nn.GRU: X (T, N, I) [or (N, T, I) with layout=1] -> Y (T, D, N, H), Y_h (D, N, H)."""

        def __init__(self, gru: torch.nn.GRU, batch_first: bool) -> None:
            super().__init__()
            self.gru, self.batch_first = gru, batch_first

        def forward(self, x, initial_h=None):
            if self.batch_first:
                x = x.transpose(0, 1)
                initial_h = None if initial_h is None else initial_h.transpose(0, 1)
            y, h = self.gru(x, initial_h)
            steps, batch, _ = y.shape
            directions = 2 if self.gru.bidirectional else 1
            y = y.view(steps, batch, directions, self.gru.hidden_size).transpose(1, 2)
            if self.batch_first:
                return y.permute(2, 0, 1, 3), h.transpose(0, 1)
            return y, h

    def reorder(gates):  # ONNX z, r, h -> torch r, z, n along the first axis
        z, r, h = gates.chunk(3, dim=0)
        return torch.cat([r, z, h], dim=0)

    def convert(node, graph) -> OperationConverterResult:
        attributes = node.attributes
        names = list(node.input_values) + [""] * (6 - len(node.input_values))
        x_name, w_name, r_name, b_name, lengths_name, initial_name = names[:6]
        problems = []
        if attributes.get("linear_before_reset", 0) != 1:
            problems.append("linear_before_reset=0 (torch.nn.GRU computes linear_before_reset=1)")
        if attributes.get("direction", "forward") == "reverse":
            problems.append("direction=reverse")
        if attributes.get("clip") is not None:
            problems.append("clip")
        if [a.lower() for a in attributes.get("activations", [])] not in ([], ["sigmoid", "tanh"], ["sigmoid", "tanh"] * 2):
            problems.append(f"activations {attributes.get('activations')}")
        if lengths_name:
            problems.append("sequence_lens")
        if any(name not in graph.initializers for name in (w_name, r_name)) or (b_name and b_name not in graph.initializers):
            problems.append("weights that are not initializers")
        if problems:
            raise RosettaError(f"GRU node {node.name!r}: rosetta's onnx2torch GRU converter does not support "
                               + ", ".join(problems))
        w = graph.initializers[w_name].to_torch()
        r = graph.initializers[r_name].to_torch()
        directions, hidden3, input_size = w.shape
        hidden = hidden3 // 3
        b = graph.initializers[b_name].to_torch() if b_name else torch.zeros(directions, 6 * hidden)
        gru = torch.nn.GRU(input_size, hidden, bidirectional=directions == 2)
        with torch.no_grad():
            for d, suffix in enumerate(["", "_reverse"][:directions]):
                getattr(gru, f"weight_ih_l0{suffix}").copy_(reorder(w[d]))
                getattr(gru, f"weight_hh_l0{suffix}").copy_(reorder(r[d]))
                getattr(gru, f"bias_ih_l0{suffix}").copy_(reorder(b[d, :hidden3]))
                getattr(gru, f"bias_hh_l0{suffix}").copy_(reorder(b[d, hidden3:]))
        inputs = (x_name,) + ((initial_name,) if initial_name else ())
        module = OnnxGRU(gru, batch_first=attributes.get("layout", 0) == 1)
        return OperationConverterResult(torch_module=module,
                                        onnx_mapping=OnnxMapping(inputs=inputs, outputs=node.output_values))

    for version in (7, 14):
        add_converter(operation_type="GRU", version=version)(convert)


def build_module(graph_path: Path):
    """The torch.fx.GraphModule onnx2torch makes of an ONNX file, with one-line errors."""
    import onnx

    onnx2torch = import_onnx2torch()
    try:
        model = onnx.load(str(graph_path), load_external_data=False)
        # with external data (e.g. over protobuf's 2 GB), onnx2torch infers shapes by path instead of in memory
        return onnx2torch.convert(str(graph_path) if external_data_files(model) else onnx.load(str(graph_path)))
    except RosettaError:
        raise
    except NotImplementedError as error:  # onnx2torch: "Converter is not implemented (OperationDescription(...))"
        found = re.search(r"operation_type='(\w+)', version=(\d+)", str(error))
        if found:
            raise RosettaError(f"ONNX op {found.group(1)} (opset {found.group(2)}) cannot be converted to torch: "
                               "onnx2torch has no converter for it") from None
        raise RosettaError(f"onnx2torch cannot convert this model: {str(error).strip().splitlines()[0]}") from None


def load_module(folder: Path, manifest):
    """The module of a converted `torch` artifact: its graph rebuilt by onnx2torch, its state_dict loaded."""
    import torch

    artifact = manifest.artifact_path(folder)
    module = build_module(artifact / GRAPH)
    state = torch.load(artifact / WEIGHTS, weights_only=True)
    module.load_state_dict(state, strict=True)
    return module.eval()
