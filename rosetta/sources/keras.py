"""Reading a Keras file (.keras, or legacy .h5) with Keras' safe_mode on (rosetta.frameworks.keras
load_keras_model): a file whose layers carry Python code (Lambda layers, custom objects) is refused unless the
user passes --trust-code. The model's signature is read by rosetta.frameworks.keras_sources."""

from __future__ import annotations

import shutil
from pathlib import Path

from rosetta.frameworks.keras import load_keras_model
from rosetta.frameworks.keras_sources import embedding_rows, signature  # noqa: F401 - embedding_rows: found here before
from rosetta.sources.readers import write_manifest


def read(argument: dict) -> dict:
    path = Path(argument["model"]["path"])
    model = load_keras_model(path, argument["trust_code"])
    artifact = "model" + path.suffix.lower()
    shutil.copyfile(path, Path(argument["staging"]) / artifact)
    inputs, outputs = signature(model)
    return write_manifest(argument, artifact, "keras", inputs, outputs)
