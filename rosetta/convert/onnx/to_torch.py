"""ONNX -> PyTorch with onnx2torch (plus rosetta's GRU and LSTM converters, see rosetta.frameworks.onnx2torch).

The artifact is the ONNX graph onnx2torch converts plus the converted module's state_dict (loaded with
torch.load(weights_only=True): no pickled code). Loading rebuilds the module with onnx2torch, which is
deterministic, and loads the weights, so a trained copy round-trips through the same two files.
"""

from __future__ import annotations

from pathlib import Path

from rosetta.frameworks.onnx2torch import GRAPH, WEIGHTS, build_module
from rosetta.frameworks.onnx_graph import copy_onnx
from rosetta.manifest import Manifest, sha256_of

ARTIFACT = "model"  # a folder: the graph and the weights


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
                   "options": {"gru": "rosetta.frameworks.onnx2torch.OnnxGRU",
                               "lstm": "rosetta.frameworks.onnx2torch.OnnxLSTM"}},
        inputs=previous.inputs, outputs=previous.outputs, sha256=sha256_of(artifact), opset=previous.opset,
    )
