"""rosetta's entries in MXNet's importer's operator table (`_import_helper._convert_map`): an ONNX op it lacks, one
it gets wrong (replacing its own), or one rosetta's rewrites write (Rosetta*, at version 1: rosetta's nodes, not
ONNX's). Each converter is registered by `@add_converter(op_type, since_version)` in its family's module, as the
Keras mapper's are: for a model of opset V, an op is mapped by its converter of the highest `since_version` <= V
(the since_version of each is the op's first: the rewrites before the import give the importer the forms it
reads, whatever the opset). `install` is the one place that changes MXNet's table, which the importer reads per
node and which has no public API to extend. A converter takes the importer's (attrs, inputs, importer) and
returns (symbol, attrs, inputs)."""

from __future__ import annotations

from typing import Callable

_CONVERTERS: dict[str, dict[int, Callable]] = {}  # op type -> {since_version: converter}


def add_converter(op_type: str, since_version: int):
    """Decorator: the function converts `op_type` for MXNet's importer from opset `since_version` on (until a
    later registration)."""
    def register(function: Callable) -> Callable:
        versions = _CONVERTERS.setdefault(op_type, {})
        if since_version in versions:
            raise ValueError(f"mxnet converter for {op_type} since opset {since_version} is registered twice")
        versions[since_version] = function
        return function
    return register


def registered() -> dict[str, list[int]]:
    """{op type: the opsets its converters start at}, of every converter registered."""
    return {op: sorted(versions) for op, versions in sorted(_CONVERTERS.items())}


def converters_for(opset: int) -> dict[str, Callable]:
    """{op type: its converter for a model of `opset`}: the one of the highest since_version <= opset."""
    found = {}
    for op, versions in sorted(_CONVERTERS.items()):
        below = [version for version in versions if version <= opset]
        if below:
            found[op] = versions[max(below)]
    return found


def install(opset: int) -> dict[str, Callable]:
    """The converters for a model of `opset` into MXNet's importer's operator table; returns them."""
    from mxnet.contrib.onnx.onnx2mx import _import_helper

    chosen = converters_for(opset)
    _import_helper._convert_map.update(chosen)
    return chosen


def mxnet_own(op_type: str):
    """MXNet's own converter of `op_type` (from its translations module: the table may hold rosetta's now)."""
    from mxnet.contrib.onnx.onnx2mx import _op_translations

    names = {"Conv": "conv", "MaxPool": "max_pooling", "AveragePool": "avg_pooling", "MatMul": "matrix_multiplication",
             "Cast": "cast", "Slice": "_slice", "BatchNormalization": "batch_norm", "Gemm": "linalg_gemm"}
    return getattr(_op_translations, names[op_type])


def text(value) -> str:
    """A string attribute as str (the importer gives bytes or str)."""
    return value.decode() if isinstance(value, bytes) else value


def symbols():
    """mx.sym, MXNet imported the way rosetta imports it."""
    from rosetta.frameworks.mxnet import import_mxnet

    return import_mxnet().sym
