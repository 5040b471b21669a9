"""IR -> PyTorch with MMdnn's PyTorch emitter: the artifact is the generated `KitModel` code and the weights
it reads (`weights.npz`, one array per "layer/parameter"). MMdnn's generated code loads a pickled .npy
through its module-level `load_weights`; rosetta sets that function to one that returns the arrays of the
.npz, so nothing is unpickled, at conversion or when the artifact runs (rosetta.frameworks.torch
build_kit_module)."""

from __future__ import annotations

from pathlib import Path

from rosetta.convert.mmdnn import compat
from rosetta.convert.mmdnn.emit import emitted_manifest, generate_code, ir_paths
from rosetta.convert.mmdnn.ir import save_weights
from rosetta.frameworks.torch import KIT_CODE, KIT_WEIGHTS, build_kit_module
from rosetta.manifest import Manifest

ARTIFACT = "model"


def convert(source: Path, staging: Path, options: dict) -> Manifest:
    compat.apply()
    import torch
    from mmdnn.conversion.pytorch.pytorch_emitter import PytorchEmitter

    previous, graph, weights = ir_paths(source)
    artifact = Path(staging) / ARTIFACT
    artifact.mkdir()
    emitter = PytorchEmitter((graph, weights))  # folds the IR in place (MMdnn's Folder) while loading
    generate_code(emitter, artifact / KIT_CODE)
    save_weights(emitter.weights_dict, artifact / KIT_WEIGHTS)
    build_kit_module(artifact)  # fail here, not at the first run, if the code does not build
    return emitted_manifest(previous, artifact, "torch-code", "PytorchEmitter", torch.__version__, code=KIT_CODE,
                            layout="channels_first")
