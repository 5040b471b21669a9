"""ONNX -> PyTorch with onnx2torch, plus rosetta's converters: one module per op family under `ops/`, each
registered by op type and the opset its semantics start at (`registry.py`), installed into onnx2torch's own
registry by `install`, which frameworks.onnx2torch.import_onnx2torch calls by its registered name before onnx2torch
converts anything (a torch artifact converted or loaded).

The artifact is the ONNX graph onnx2torch converts, after REWRITES, plus the converted module's state_dict
(loaded with torch.load(weights_only=True): no pickled code). Loading rebuilds the module with onnx2torch, which
is deterministic, and loads the weights, so a trained copy round-trips through the same two files.
"""

from __future__ import annotations

from pathlib import Path

from rosetta.convert.onnx import rewrites as rw
from rosetta.convert.onnx.to_torch.registry import TorchConverter
from rosetta.frameworks.onnx2torch import GRAPH, WEIGHTS, build_module, opset_aliases
from rosetta.frameworks.onnx_graph import copy_onnx, external_data_files
from rosetta.manifest import Manifest, sha256_of

ARTIFACT = "model"  # a folder: the graph and the weights

# The ops onnx2torch lacks or gets wrong, in the primitives it converts: Resize/Upsample (none from opset 18,
# modes torch computes otherwise only warned about), Trilu (none), DepthToSpace/SpaceToDepth, a
# LayerNormalization whose Mean or InvStdDev is read (nn.LayerNorm returns Y alone), CastLike and Gelu (none);
# a Conv's or Gemm's weight or bias behind an Identity of an initializer or given by a Constant node (onnx2torch
# reads initializers only);
# auto_pad SAME_* (onnx2torch's Conv raises NotImplementedError: timm's ConvMixer, Keras's ConvNeXt); and a
# BatchNormalization of constants with its statistics outputs (a weight-standardised convolution: BiT)
REWRITES = (rw.constant_attributes_as_tensors, rw.batch_normalization_of_constants,
            rw.identity_of_initializers_as_initializers, rw.constant_weights_as_initializers,
            rw.resize_as_gathers_and_matmuls, rw.trilu_as_where,
            rw.depth_to_space_as_reshapes, rw.layer_normalization_statistics_as_primitives, rw.cast_like_as_cast,
            rw.gelu_as_primitives, rw.explicit_pads, rw.allowzero_without_zeros, rw.clip_bounds_as_max_min)


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
                   "options": {"rewrites": rw.names(REWRITES), "converters": manifest_entry(),
                               "opset_aliases": opset_aliases(model)}},
        inputs=previous.inputs, outputs=previous.outputs, sha256=sha256_of(artifact), opset=previous.opset,
    )


def converters() -> list[TorchConverter]:
    """Every converter of the torch bridge, by op and version (the ops package imported, which registers them)."""
    from rosetta.convert.onnx.to_torch import ops  # noqa: F401 - registers every converter
    from rosetta.convert.onnx.to_torch.registry import converters as registered_converters

    return registered_converters()


def registered() -> dict[str, list[int]]:
    """{op type: the opsets its converters start at}: what the torch bridge adds to onnx2torch or corrects."""
    found: dict[str, list[int]] = {}
    for converter in converters():
        found.setdefault(converter.op_type, []).append(converter.since_version)
    return found


def install() -> None:
    """Every converter into onnx2torch's registry: added with its `add_converter`, or, with `wraps`, in place of
    its own converter of that version (onnx2torch refuses a second registration and has no other way: this writes
    its registry dict, `_CONVERTER_REGISTRY`). A wrapped version onnx2torch does not have is an error: an
    onnx2torch release that moved its versions must be looked at, not silently left unwrapped."""
    from onnx2torch.node_converters import registry

    for converter in converters():
        op, version = converter.op_type, converter.since_version
        if not converter.wraps:
            registry.add_converter(operation_type=op, version=version)(converter.function)
            continue
        found = [description for description in registry._CONVERTER_REGISTRY
                 if description.operation_type == op and description.version == version
                 and description.domain in ("", "ai.onnx")]
        if not found:
            raise ValueError(f"torch converter wraps onnx2torch's {op} of opset {version}, which onnx2torch lacks")
        for description in found:
            registry._CONVERTER_REGISTRY[description] = converter.function(registry._CONVERTER_REGISTRY[description])


def manifest_entry() -> dict[str, str]:
    """{"op-version": the importable path of the converter}, for a manifest."""
    return {f"{c.op_type}-{c.since_version}": f"{c.function.__module__}.{c.function.__qualname__}"
            for c in converters()}
