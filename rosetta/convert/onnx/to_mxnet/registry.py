"""rosetta's entries in MXNet's importer's operator table (`_import_helper._convert_map`): an ONNX op it lacks, one
it gets wrong (replacing its own), or one rosetta's rewrites write (Rosetta*). Each converter is registered by
`mxnet_converter(op_type, ...)` in its family's module; `install` is the one place that changes MXNet's table,
which the importer reads per node and which has no public API to extend. A converter takes the importer's
(attrs, inputs, importer) and returns (symbol, attrs, inputs)."""

from __future__ import annotations

from typing import Callable

CONVERTERS: dict[str, Callable] = {}


def mxnet_converter(*op_types: str):
    """Decorator: the function converts these ONNX op types for MXNet's importer."""
    def register(function: Callable) -> Callable:
        for op_type in op_types:
            if op_type in CONVERTERS:
                raise ValueError(f"mxnet converter for {op_type} registered twice")
            CONVERTERS[op_type] = function
        return function
    return register


def install() -> None:
    """CONVERTERS into MXNet's importer's operator table."""
    from mxnet.contrib.onnx.onnx2mx import _import_helper

    _import_helper._convert_map.update(CONVERTERS)


def mxnet_own(op_type: str):
    """MXNet's own converter of `op_type` (from its translations module: the table may hold rosetta's now)."""
    from mxnet.contrib.onnx.onnx2mx import _op_translations

    names = {"MaxPool": "max_pooling", "AveragePool": "avg_pooling", "MatMul": "matrix_multiplication",
             "Cast": "cast", "Slice": "_slice", "BatchNormalization": "batch_norm"}
    return getattr(_op_translations, names[op_type])


def text(value) -> str:
    """A string attribute as str (the importer gives bytes or str)."""
    return value.decode() if isinstance(value, bytes) else value


def symbols():
    """mx.sym, MXNet imported the way rosetta imports it."""
    from rosetta.frameworks.mxnet import import_mxnet

    return import_mxnet().sym
