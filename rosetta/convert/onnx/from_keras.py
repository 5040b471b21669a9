"""Keras -> ONNX: the Keras model saved as a SavedModel whose signature keeps the Keras input and output
names, then tf2onnx on it as on any SavedModel (tf2onnx's from_keras predates Keras 3), with rosetta's handlers
for the TensorFlow ops tf2onnx lacks (Erfc: exact GELU) and its Einsum optimizer off, and its graph made the
plain ONNX a torch export of the same layers is (tf2onnx_graph: constant Reshape targets, LayerNormalization,
attention as MatMuls). The layout stays the Keras model's (channels-last images stay channels-last), so the
ONNX model takes the same arrays.

Of the three ways to take a Keras 3 model to ONNX (README, "Keras 3 models in"), this one converts the most:
Keras 3's own `model.export(format="onnx")` runs the same tf2onnx without these handlers (on the TensorFlow
backend it writes graphs ONNX Runtime cannot load, with Erfc or StatefulPartitionedCall nodes in them), and on
the torch backend torch.onnx cannot trace Keras' layers."""

from __future__ import annotations

import tempfile
from pathlib import Path

from rosetta.convert.targets import EXPORT_DEFAULTS
from rosetta.convert.onnx.from_tensorflow import (check_tensor_names, newest_tf2onnx_opset, run_tf2onnx,
                                                    tensorflow_version)
from rosetta.convert.onnx.tf2onnx_graph import KEEP_EINSUM, plain_onnx
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
        run_tf2onnx(saved, target, opset, without_optimizers=KEEP_EINSUM)
    import onnx

    onnx.save(plain_onnx(onnx.load(str(target))), str(target))
    signature_in, signature_out = check_tensor_names(load_checked(target), previous)
    return Manifest(
        artifact=ARTIFACT, format="onnx", source=previous.source,
        converter={"name": "tf2onnx", "version": version("tf2onnx"), "framework_version": tensorflow_version(),
                   "options": {"opset": opset, "via": "SavedModel", "without_optimizers": list(KEEP_EINSUM),
                               "rewrites": "rosetta.convert.onnx.tf2onnx_graph.plain_onnx"}},
        inputs=signature_in, outputs=signature_out, sha256=sha256_of(target), opset=opset,
    )
