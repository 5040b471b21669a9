"""The torch bridge's op converters, registered by ONNX op type and the opset at which the semantics they
implement began (`since_version`), as onnx2torch registers its own (`@add_converter(operation_type, version)`,
looked up by the version at which the op's schema last changed at or below the model's opset; later versions that
only widened the types reuse it, frameworks.onnx2torch.register_later_opsets). A converter is onnx2torch's
(node, graph) -> OperationConverterResult; one registered with `wraps=True` replaces onnx2torch's own converter of
that version and is called with it, `function(original) -> converter`, for the ops onnx2torch computes otherwise
than ONNX does. `to_torch.install` is the one place that writes onnx2torch's registry."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class TorchConverter:
    op_type: str
    since_version: int
    function: Callable  # (node, graph) -> OperationConverterResult; with `wraps`, (original) -> such a function
    wraps: bool = False  # replaces onnx2torch's own converter of this version, which it is given


_CONVERTERS: dict[tuple[str, int], TorchConverter] = {}


def add_converter(op_type: str, since_version: int, wraps: bool = False):
    """Decorator: the function converts `op_type` of the schema version `since_version` (see the module
    docstring for `wraps`)."""
    def register(function: Callable) -> Callable:
        if (op_type, since_version) in _CONVERTERS:
            raise ValueError(f"torch converter for {op_type} since opset {since_version} is registered twice")
        _CONVERTERS[(op_type, since_version)] = TorchConverter(op_type, since_version, function, wraps)
        return function
    return register


def converters() -> list[TorchConverter]:
    """Every converter registered so far (to_torch.converters() imports the ops package first), by op and version."""
    return [_CONVERTERS[key] for key in sorted(_CONVERTERS)]
