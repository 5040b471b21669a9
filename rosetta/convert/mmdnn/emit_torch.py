"""IR -> PyTorch with MMdnn's PyTorch emitter: the artifact is the generated `KitModel` code and the weights
it reads (`weights.npz`, one array per "layer/parameter"). MMdnn's generated code loads a pickled .npy
through its module-level `load_weights`; rosetta sets that function to one that returns the arrays of the
.npz, so nothing is unpickled, at conversion or when the artifact runs (rosetta.frameworks.torch_code)."""

from __future__ import annotations

from pathlib import Path

from rosetta.convert.manifest import Manifest
from rosetta.convert.mmdnn import compat
from rosetta.convert.mmdnn.emit import emitted_manifest, generate_code, import_generated, ir_paths, layouts
from rosetta.convert.mmdnn.ir import save_weights, weights_dict

ARTIFACT = "model"
CODE, WEIGHTS = "kit_pytorch.py", "weights.npz"


def build_module(folder: Path):
    """The generated KitModel from an artifact folder, with its weights from the .npz (no pickle)."""
    module = import_generated(Path(folder) / CODE, "mmdnn_kit_pytorch")
    weights = weights_dict(folder, WEIGHTS)
    module.load_weights = lambda weight_file=None: weights
    return module.KitModel(None).eval()


def convert(source: Path, staging: Path, options: dict) -> Manifest:
    compat.apply()
    import torch
    from mmdnn.conversion.pytorch.pytorch_emitter import PytorchEmitter

    previous, graph, weights = ir_paths(source)
    artifact = Path(staging) / ARTIFACT
    artifact.mkdir()
    emitter = PytorchEmitter((graph, weights))  # folds the IR in place (MMdnn's Folder) while loading
    generate_code(emitter, artifact / CODE)
    save_weights(emitter.weights_dict, artifact / WEIGHTS)
    build_module(artifact)  # fail here, not at the first run, if the code does not build
    return emitted_manifest(previous, artifact, "torch-code", "PytorchEmitter", torch.__version__, code=CODE,
                            layouts=layouts(previous, "channels_first"))
