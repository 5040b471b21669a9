"""ONNX -> PyTorch with onnx2torch (plus rosetta's GRU converter, see onnx2torch_bridge).

The artifact is the ONNX graph onnx2torch converts plus the converted module's state_dict (loaded with
torch.load(weights_only=True): no pickled code). Loading rebuilds the module with onnx2torch, which is
deterministic, and loads the weights, so a trained copy round-trips through the same two files.
"""

from __future__ import annotations

import re
from pathlib import Path

from rosetta.convert.manifest import Manifest, sha256_of
from rosetta.convert.onnx_graph import copy_onnx, external_data_files
from rosetta.errors import RosettaError

ARTIFACT = "model"  # a folder: the graph and the weights
GRAPH = "model.onnx"
WEIGHTS = "state_dict.pt"


def build_module(graph_path: Path):
    """The torch.fx.GraphModule onnx2torch makes of an ONNX file, with one-line errors."""
    import onnx

    from rosetta.convert.onnx2torch_bridge import import_onnx2torch

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


def load_module(folder: Path, manifest: Manifest):
    import torch

    artifact = manifest.artifact_path(folder)
    module = build_module(artifact / GRAPH)
    state = torch.load(artifact / WEIGHTS, weights_only=True)
    module.load_state_dict(state, strict=True)
    return module.eval()


def convert(source: Path, staging: Path, options: dict) -> Manifest:
    from importlib.metadata import version

    import torch

    previous = Manifest.read(source)
    artifact = Path(staging) / ARTIFACT
    artifact.mkdir()
    copy_onnx(previous.artifact_path(source), artifact / GRAPH)  # with its external data, if any
    module = build_module(artifact / GRAPH)
    torch.save(module.state_dict(), artifact / WEIGHTS)
    return Manifest(
        artifact=ARTIFACT, format="torch", source=previous.source,
        converter={"name": "onnx2torch", "version": version("onnx2torch"), "framework_version": torch.__version__,
                   "options": {"gru": "rosetta.convert.onnx2torch_bridge.OnnxGRU"}},
        inputs=previous.inputs, outputs=previous.outputs, sha256=sha256_of(artifact), opset=previous.opset,
    )
