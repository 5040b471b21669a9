"""ONNX -> Keras 3: rosetta's own layer mapper, producing a trainable `.keras` file of built-in layers and
`keras.ops` operations only (no Lambda: it loads in plain Keras with safe_mode).

Why our own: onnx2tf's output holds its weights as constants (untrainable by design), onnx2keras has no GRU
and mishandles Dropout, nobuco is tied to Keras 2. Laid out as onnx2torch's node_converters: one module per op
family under `ops/`, each converter registered by op type and the opset its semantics start at
(`registry.py`); a walker that knows no op (`walker.py`); the state converters share in one `MappingContext`
(`context.py`); the layouts (NCHW held as NHWC, axis remapping, padding) in `layout.py`; shapes read at run
time followed at conversion time (`symbolic.py`); the exporters' multi-node patterns fused before mapping
(`patterns.py`). Any op without a converter, or an attribute a converter cannot honour exactly, is an error
naming the op.

Before mapping, the graph goes through REWRITES (the rewrites package: a Where of two shape vectors by a constant
condition as a Gather (torch.onnx's expand(batch, ...)), a Reshape to a shape computed from its own
input's gets it as a constant, zero initial states of recurrent layers omitted, auto_pad as explicit pads,
DepthToSpace/SpaceToDepth as their reshapes, CastLike as Cast where its type is known, so that a CastLike of a
constant, as ONNX's function bodies write their attributes (Selu's Alpha), is folded like any constant), its nodes
whose inputs are all
constants are evaluated (ONNX's reference evaluator), and patterns.FUSIONS are applied; the manifest records
both lists and the registered converters' opsets.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rosetta.convert.onnx import rewrites
from rosetta.convert.onnx.to_keras import ops  # noqa: F401 - registers every op converter
from rosetta.convert.onnx.to_keras.context import MappingContext
from rosetta.convert.onnx.to_keras.patterns import FUSIONS
from rosetta.convert.onnx.to_keras.walker import build, tensor_map
from rosetta.manifest import Manifest, sha256_of

ARTIFACT = "model.keras"
REWRITES = (rewrites.constant_attributes_as_tensors, rewrites.vector_wheres_as_gathers,
            rewrites.constant_reshape_shapes, rewrites.axis_ranges, rewrites.tile_as_expand,
            rewrites.drop_zero_initial_states,
            rewrites.explicit_pads, rewrites.depth_to_space_as_reshapes, rewrites.cast_like_as_cast)


def onnx_to_keras_model(model, keras, tensors: dict | None = None):
    """The Keras model of an ONNX model (after REWRITES); `tensors`, if given, receives walker.tensor_map()."""
    context = MappingContext(rewrites.apply(REWRITES, model), keras)
    built = build(context)
    if tensors is not None:
        tensors.update(tensor_map(context))
    return built


def convert(source: Path, staging: Path, options: dict) -> Manifest:
    import onnx

    from rosetta.frameworks.keras import import_keras

    keras = import_keras()
    previous = Manifest.read(source)
    tensors: dict = {}
    model = onnx_to_keras_model(onnx.load(str(previous.artifact_path(source))), keras, tensors)
    target = Path(staging) / ARTIFACT
    model.save(str(target))
    trainable = int(sum(np.prod(w.shape) for w in model.trainable_weights))
    return Manifest(
        artifact=ARTIFACT, format="keras", source=previous.source,
        converter={"name": "rosetta.convert.onnx.to_keras", "version": keras.__version__,
                   "framework_version": f"{keras.__version__} ({keras.backend.backend()} backend)",
                   "options": {"rewrites": rewrites.names(REWRITES), "fusions": list(FUSIONS)},
                   "trainable_parameters": trainable, "tensors": tensors},
        inputs=previous.inputs, outputs=previous.outputs, sha256=sha256_of(target), opset=previous.opset,
    )
