"""Reading a TensorFlow SavedModel folder through its serving_default signature. Loading a SavedModel runs its
graph, so without --trust-code every op it can run must be a pure tensor op (rosetta.trust.savedmodel)."""

from __future__ import annotations

import shutil
from pathlib import Path

from rosetta.errors import RosettaError

ARTIFACT = "saved_model"


def _signature(specs: dict) -> list[dict]:
    return [{"name": name, "shape": list(spec.shape.as_list()) if spec.shape.rank is not None else [],
             "dtype": spec.dtype.name} for name, spec in specs.items()]


def read(argument: dict) -> dict:
    from rosetta.frameworks.tensorflow import check_saved_model, import_tensorflow
    from rosetta.sources.readers import write_manifest

    tf = import_tensorflow()
    path = Path(argument["model"]["path"])
    check_saved_model(path, argument["trust_code"], str(path))  # loading runs its graph: pure ops only
    try:
        loaded = tf.saved_model.load(str(path))
    except Exception as error:
        first = (str(error).strip().splitlines() or [type(error).__name__])[0][:200]
        raise RosettaError(f"{path} is not a readable SavedModel ({first})") from None
    if "serving_default" not in loaded.signatures:
        raise RosettaError(f"SavedModel {path} has no serving_default signature; save it with "
                           "signatures={'serving_default': ...}")
    signature = loaded.signatures["serving_default"]
    shutil.copytree(path, Path(argument["staging"]) / ARTIFACT)
    return write_manifest(argument, ARTIFACT, "tensorflow", _signature(signature.structured_input_signature[1]),
                          _signature(signature.structured_outputs))
