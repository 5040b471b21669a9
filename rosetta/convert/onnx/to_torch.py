"""ONNX -> PyTorch with onnx2torch (plus rosetta's converters, see rosetta.frameworks.onnx2torch).

The artifact is the ONNX graph onnx2torch converts, after REWRITES, plus the converted module's state_dict
(loaded with torch.load(weights_only=True): no pickled code). Loading rebuilds the module with onnx2torch, which
is deterministic, and loads the weights, so a trained copy round-trips through the same two files.
"""

from __future__ import annotations

from pathlib import Path

from rosetta.convert.onnx import rewrites as rw
from rosetta.frameworks.onnx2torch import GRAPH, WEIGHTS, build_module, opset_aliases, rosetta_converters
from rosetta.frameworks.onnx_graph import copy_onnx, external_data_files
from rosetta.manifest import Manifest, sha256_of

ARTIFACT = "model"  # a folder: the graph and the weights

# The ops onnx2torch lacks or gets wrong, in the primitives it converts: Resize/Upsample (none from opset 18,
# modes torch computes otherwise only warned about), Trilu (none), DepthToSpace/SpaceToDepth, a
# LayerNormalization whose Mean or InvStdDev is read (nn.LayerNorm returns Y alone), CastLike and Gelu (none)
REWRITES = (rw.resize_as_gathers_and_matmuls, rw.trilu_as_where, rw.depth_to_space_as_reshapes,
            rw.layer_normalization_statistics_as_primitives, rw.cast_like_as_cast, rw.gelu_as_primitives)


def convert(source: Path, staging: Path, options: dict) -> Manifest:
    from importlib.metadata import version

    import onnx
    import torch

    previous = Manifest.read(source)
    artifact = Path(staging) / ARTIFACT
    artifact.mkdir()
    original = previous.artifact_path(source)
    model = onnx.load(str(original))
    before = model.SerializeToString()
    model = rw.apply(REWRITES, model)
    if model.SerializeToString() == before:
        copy_onnx(original, artifact / GRAPH)  # with its external data, if any
    else:
        external = bool(external_data_files(onnx.load(str(original), load_external_data=False)))
        onnx.save(model, str(artifact / GRAPH), save_as_external_data=external)
    module = build_module(artifact / GRAPH)
    torch.save(module.state_dict(), artifact / WEIGHTS)
    return Manifest(
        artifact=ARTIFACT, format="torch", source=previous.source,
        converter={"name": "onnx2torch", "version": version("onnx2torch"), "framework_version": torch.__version__,
                   "options": {"rewrites": rw.names(REWRITES), "converters": rosetta_converters(),
                               "opset_aliases": opset_aliases(model)}},
        inputs=previous.inputs, outputs=previous.outputs, sha256=sha256_of(artifact), opset=previous.opset,
    )
