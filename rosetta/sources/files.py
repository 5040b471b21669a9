"""What a model path names: its format, from its suffix or folder contents, with one-line errors."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from rosetta.errors import RosettaError

FORMATS_HELP = ("an ONNX file (.onnx), a Keras file (.keras, .h5), a TensorFlow SavedModel folder, an MXNet "
                "NAME-symbol.json (with NAME-0000.params beside it), a torch.export file (.pt2), a PyTorch factory "
                "(path/to/file.py:function or package.module:function) or a folder written by rosetta")
PICKLE_SUFFIXES = (".pt", ".pth", ".pkl", ".pickle", ".bin", ".ckpt")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_MODULE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


@dataclass(frozen=True)
class ModelFile:
    """A user's model as named on the command line."""

    text: str  # as the user wrote it
    format: str  # onnx | keras | tensorflow | mxnet | torch-export | torch-factory | artifact
    path: Path | None  # the file or folder (None for a factory given as package.module:function)
    function: str = ""  # torch-factory: the function that builds the model
    module: str = ""  # torch-factory given as package.module:function
    params: Path | None = None  # mxnet: the .params file beside the -symbol.json

    @property
    def label(self) -> str:
        return self.path.name if self.path is not None and not self.function else self.text

    def files(self) -> list[Path]:
        """The files and folders the model is read from (none for a factory given as package.module:function)."""
        return [path for path in (self.path, self.params) if path is not None]

    def to_json(self) -> dict:
        return {"text": self.text, "format": self.format, "path": str(self.path) if self.path else None,
                "function": self.function, "module": self.module, "params": str(self.params) if self.params else None}

    @classmethod
    def from_json(cls, data: dict) -> "ModelFile":
        return cls(data["text"], data["format"], Path(data["path"]) if data["path"] else None, data["function"],
                   data["module"], Path(data["params"]) if data["params"] else None)


def identify(text: str) -> ModelFile:
    """The ModelFile that `text` names; a RosettaError saying what is wrong and what to give instead. Its paths
    are absolute: the workers that read it keep the folder they started in, not the caller's current one."""
    path = Path(text).expanduser().absolute()
    location, colon, function = text.rpartition(":")
    if colon and not path.exists() and _IDENTIFIER.match(function):
        if location.endswith(".py"):
            file = Path(location).expanduser().absolute()
            if not file.is_file():
                raise RosettaError(f"no such file: {location} (in {text}); give path/to/file.py:function")
            return ModelFile(text, "torch-factory", file, function)
        if _MODULE.match(location):
            return ModelFile(text, "torch-factory", None, function, module=location)
    if not path.exists():
        raise RosettaError(f"no such file or folder: {text}; give {FORMATS_HELP}")
    if path.is_dir():
        if (path / "manifest.json").is_file():
            return ModelFile(text, "artifact", path)
        if (path / "saved_model.pb").is_file() or (path / "saved_model.pbtxt").is_file():
            return ModelFile(text, "tensorflow", path)
        raise RosettaError(f"folder {text} is neither a TensorFlow SavedModel (no saved_model.pb) nor a folder "
                           "written by rosetta (no manifest.json)")
    if path.is_file() and path.stat().st_size == 0:  # every format would give its own puzzling message
        raise RosettaError(f"{text} is empty (0 bytes): a copy or download cut short? give the model file itself")
    name = path.name.lower()
    if name.endswith(".onnx"):
        return ModelFile(text, "onnx", path)
    if name.endswith((".keras", ".h5", ".hdf5")):
        return ModelFile(text, "keras", path)
    if name.endswith(".pt2"):
        return ModelFile(text, "torch-export", path)
    if name.endswith("-symbol.json"):
        return ModelFile(text, "mxnet", path, params=_mxnet_params(path))
    if name.endswith(".params"):
        prefix = re.sub(r"-\d{4}\.params$", "", path.name)
        symbol = path.with_name(f"{prefix}-symbol.json")
        if not symbol.is_file():
            raise RosettaError(f"{text} has no {symbol.name} beside it; an MXNet model is NAME-symbol.json + "
                               "NAME-0000.params")
        return ModelFile(text, "mxnet", symbol, params=path)
    if name.endswith(PICKLE_SUFFIXES):
        raise RosettaError(f"{text} is a pickle, which runs code when loaded; rosetta does not read pickled models: "
                           "save it with torch.export.save (.pt2) or give path/to/file.py:function with trust_code=True")
    if name.endswith(".pb"):
        raise RosettaError(f"{text}: frozen TensorFlow graphs are not supported; give the SavedModel folder")
    raise RosettaError(f"{text}: unknown model format; give {FORMATS_HELP}")


def _mxnet_params(symbol: Path) -> Path:
    prefix = symbol.name[: -len("-symbol.json")]
    # NAME-EPOCH.params only: NAME-other-0000.params belongs to another model (NAME-other-symbol.json)
    candidates = sorted(p for p in symbol.parent.glob(f"{prefix}-*.params")
                        if re.fullmatch(rf"{re.escape(prefix)}-\d{{4}}\.params", p.name))
    if not candidates:
        raise RosettaError(f"{symbol} has no {prefix}-0000.params beside it; export the MXNet model with its "
                           "parameters (HybridBlock.export)")
    return candidates[-1]  # the latest epoch
