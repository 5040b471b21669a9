"""Conversion paths registered by (source format, target format); each is one module with a `convert` function.

A converter is looked up lazily ("module:function"), so listing paths imports no framework.
Signature of a converter: convert(source, staging: Path, options: dict) -> Manifest, where `source` is a
TorchSource for the "torch" format and the folder of an earlier artifact (with its manifest) otherwise.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable

from rosetta.errors import RosettaError


@dataclass(frozen=True)
class ConversionPath:
    source: str
    target: str
    name: str
    entry: str  # "package.module:function"
    description: str = ""

    def load(self) -> Callable:
        module_name, _, function = self.entry.partition(":")
        return getattr(importlib.import_module(module_name), function)


_PATHS: dict[tuple[str, str], ConversionPath] = {}


def register_conversion(path: ConversionPath) -> ConversionPath:
    key = (path.source, path.target)
    if key in _PATHS:
        raise ValueError(f"conversion {key} is registered twice")
    _PATHS[key] = path
    return path


def get_conversion(source: str, target: str) -> ConversionPath:
    try:
        return _PATHS[(source, target)]
    except KeyError:
        known = ", ".join(f"{s}->{t}" for s, t in _PATHS)
        raise RosettaError(f"no conversion from {source} to {target}; rosetta has: {known}") from None


def list_conversions() -> list[ConversionPath]:
    return list(_PATHS.values())


register_conversion(ConversionPath(
    "torch", "onnx", "torch-to-onnx", "rosetta.convert.torch_to_onnx:convert",
    "torch.onnx.export (TorchScript exporter at opset 17 by default; dynamo exporter as an option)",
))
