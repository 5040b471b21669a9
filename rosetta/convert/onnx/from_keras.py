"""Keras -> ONNX: the Keras model saved as a SavedModel whose signature keeps the Keras input and output
names, then tf2onnx on it as on any SavedModel (tf2onnx's from_keras predates Keras 3). The layout stays
the Keras model's (channels-last images stay channels-last), so the ONNX model takes the same arrays."""

from __future__ import annotations

import tempfile
from pathlib import Path

from rosetta.convert.targets import EXPORT_DEFAULTS
from rosetta.convert.onnx.from_tensorflow import (check_tensor_names, newest_tf2onnx_opset, run_tf2onnx,
                                                    tensorflow_version)
from rosetta.convert.onnx.to_tensorflow import save_saved_model
from rosetta.frameworks.onnx_graph import load_checked
from rosetta.manifest import Manifest, sha256_of

ARTIFACT = "model.onnx"


def convert(source: Path, staging: Path, options: dict) -> Manifest:
    from importlib.metadata import version

    from rosetta.frameworks.keras import load_keras_model
    from rosetta.frameworks.tensorflow import import_tensorflow

    tf = import_tensorflow()
    previous = Manifest.read(source)
    model = load_keras_model(previous.artifact_path(source), bool(options.get("trust_code")))
    opset = min(int(options.get("opset", EXPORT_DEFAULTS["opset"])), newest_tf2onnx_opset())
    target = Path(staging) / ARTIFACT
    with tempfile.TemporaryDirectory(prefix="rosetta-keras-", dir=staging) as scratch:
        saved = Path(scratch) / "saved_model"
        save_saved_model(tf, model, saved, [e["name"] for e in previous.inputs], [e["name"] for e in previous.outputs])
        run_tf2onnx(saved, target, opset)
    signature_in, signature_out = check_tensor_names(load_checked(target), previous)
    return Manifest(
        artifact=ARTIFACT, format="onnx", source=previous.source,
        converter={"name": "tf2onnx", "version": version("tf2onnx"), "framework_version": tensorflow_version(),
                   "options": {"opset": opset, "via": "SavedModel"}},
        inputs=signature_in, outputs=signature_out, sha256=sha256_of(target), opset=opset,
    )
