"""Keras -> TensorFlow SavedModel: a Keras 3 model (the Keras mapper's, from ONNX) saved as a SavedModel whose
serving signature takes and returns tensors by the ONNX names (to_tensorflow.save_saved_model, as onnx2tf's model
is saved). The tensorflow target's second way in (targets.Target.ways_in): where onnx2tf's artifact does not
verify, the same ONNX graph through rosetta's own mapper. Layouts the mapper recorded are carried over, so the
TensorFlow runner feeds the same arrays as ONNX Runtime."""

from __future__ import annotations

from pathlib import Path

from rosetta.convert.onnx.to_tensorflow import save_saved_model
from rosetta.manifest import Manifest, sha256_of

ARTIFACT = "saved_model"


def convert(source: Path, staging: Path, options: dict) -> Manifest:
    from rosetta.frameworks.keras import load_keras_model
    from rosetta.frameworks.tensorflow import import_tensorflow

    tf = import_tensorflow()
    previous = Manifest.read(source)
    model = load_keras_model(previous.artifact_path(source), bool(options.get("trust_code")))
    target = Path(staging) / ARTIFACT
    save_saved_model(tf, model, target, [e["name"] for e in previous.inputs], [e["name"] for e in previous.outputs])
    mapper = previous.converter
    return Manifest(
        artifact=ARTIFACT, format="tensorflow", source=previous.source,
        converter={"name": f"{mapper.get('name', 'keras')} + tf.saved_model", "version": mapper.get("version", ""),
                   "framework_version": tf.__version__, "options": mapper.get("options", {}),
                   **({"layouts": mapper["layouts"]} if mapper.get("layouts") else {})},
        inputs=previous.inputs, outputs=previous.outputs, sha256=sha256_of(target), opset=previous.opset,
    )
