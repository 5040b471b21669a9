"""Reading a Keras file (.keras, or legacy .h5) with Keras' safe_mode on: a file whose layers carry Python
code (Lambda layers, custom objects) is refused unless the user passes --trust-code."""

from __future__ import annotations

import shutil
from pathlib import Path

from rosetta.errors import RosettaError

TRUST_HINT = "pass --trust-code if you trust the file"


def load_keras_model(path: Path, trust_code: bool):
    """keras.saving.load_model, safe unless trusted, with one-line errors for code and for broken files."""
    from rosetta.frameworks.keras import import_keras

    _check_container(path)
    keras = import_keras()
    try:
        return keras.saving.load_model(str(path), compile=False, safe_mode=not trust_code)
    except Exception as error:
        text = str(error)
        if "safe_mode" in text or "arbitrary code" in text:
            raise RosettaError(f"{path.name} contains Python code (e.g. a Lambda layer) that loading it would run; "
                               f"{TRUST_HINT}") from None
        if "Unknown layer" in text or "Could not locate" in text:
            raise RosettaError(f"{path.name} uses a custom layer Keras cannot find ({text.splitlines()[0][:160]}); "
                               "only built-in layers can be read") from None
        first = text.strip().splitlines()[0][:200] if text.strip() else type(error).__name__
        raise RosettaError(f"{path.name} is not a readable Keras model ({first})") from None


HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"


def _check_container(path: Path) -> None:
    """A .keras file is a zip archive and a .h5 file an HDF5 file: say so before Keras gives a stranger error."""
    import zipfile

    if path.suffix.lower() == ".keras":
        if not zipfile.is_zipfile(path):
            raise RosettaError(f"{path.name} is not a Keras file: a .keras file is the zip archive model.save() "
                               "writes; save the model again")
    else:
        with open(path, "rb") as handle:
            if handle.read(len(HDF5_SIGNATURE)) != HDF5_SIGNATURE:
                raise RosettaError(f"{path.name} is not a Keras HDF5 file (no HDF5 signature); save the model "
                                   "again with model.save()")


def _signature(tensors, names) -> list[dict]:
    return [{"name": name, "shape": list(tensor.shape),
             "dtype": str(getattr(tensor.dtype, "name", tensor.dtype))} for tensor, name in zip(tensors, names)]


def read(argument: dict) -> dict:
    from rosetta.sources.readers import write_manifest

    path = Path(argument["model"]["path"])
    model = load_keras_model(path, argument["trust_code"])
    artifact = "model" + path.suffix.lower()
    shutil.copyfile(path, Path(argument["staging"]) / artifact)
    input_names = [tensor.name for tensor in model.inputs]
    output_names = list(model.output_names)
    return write_manifest(argument, artifact, "keras", _signature(model.inputs, input_names),
                          _signature(model.outputs, output_names))
