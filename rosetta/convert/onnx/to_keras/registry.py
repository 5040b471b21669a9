"""The Keras mapper's op converters, registered by ONNX op type and the opset at which the semantics they
implement began (`since_version`), as onnx2torch's `add_converter` does: for a model of opset V, an op is
mapped by its converter of the highest `since_version` <= V. An op whose semantics changed at a later opset
(Softmax at 13: axis -1 instead of the flattening from axis 1) has a converter for each. The nodes that
patterns.py fuses (a LayerNorm, a GELU, a MatMul with its bias) are in rosetta's own domain FUSED, at version 1,
whatever the model's opset: they are rosetta's nodes, not ONNX's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


FUSED = "rosetta.fused"  # the domain of the nodes patterns.py writes


@dataclass(frozen=True)
class OpConverter:
    domain: str  # "" for ONNX's default domain, or FUSED
    op_type: str
    since_version: int
    function: Callable  # (context, node, attributes) -> [Mapped per output]
    reads_symbolic: bool = False  # takes, besides tensors, values computed from the run-time shape


_CONVERTERS: dict[tuple[str, str], dict[int, OpConverter]] = {}


def add_converter(op_type: str, since_version: int, reads_symbolic: bool = False, domain: str = ""):
    """Decorator: the function converts `op_type` from opset `since_version` on (until a later registration)."""
    def register(function: Callable) -> Callable:
        versions = _CONVERTERS.setdefault((domain, op_type), {})
        if since_version in versions:
            raise ValueError(f"keras mapper: {domain}:{op_type} since opset {since_version} is registered twice")
        versions[since_version] = OpConverter(domain, op_type, since_version, function, reads_symbolic)
        return function
    return register


def converter_for(domain: str, op_type: str, opset: int) -> OpConverter | None:
    """The converter of `op_type` for a model of `opset` in `domain` ("ai.onnx" is ""), or None when the mapper
    has none."""
    versions = _CONVERTERS.get(("" if domain == "ai.onnx" else domain, op_type), {})
    found = [v for v in versions if v <= opset]
    return versions[max(found)] if found else None


def registered(domain: str = "") -> dict[str, list[int]]:
    """{op type: the opsets its converters start at}, of every converter registered in `domain`."""
    return {op: sorted(versions) for (where, op), versions in sorted(_CONVERTERS.items()) if where == domain}
