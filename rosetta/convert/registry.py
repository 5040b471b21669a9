"""Conversion paths registered by (source format, target format); each is one module with a `convert` function.

A converter is looked up lazily ("module:function"), so listing paths imports no framework.
Signature of a converter: convert(source, staging: Path, options: dict) -> Manifest, where `source` is a
TorchSource for the "torch" format and the folder of an earlier artifact (with its manifest) otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from rosetta.registry import Registry, load_entry


@dataclass(frozen=True)
class ConversionPath:
    source: str
    target: str
    name: str
    entry: str  # "package.module:function"
    description: str = ""
    isolated: bool = False  # run in a worker process (rosetta.worker): TensorFlow, Keras, MXNet

    def load(self) -> Callable:
        return load_entry(self.entry)


CONVERSIONS: Registry[ConversionPath] = Registry("conversion", key=lambda path: (path.source, path.target))
register_conversion = CONVERSIONS.register


def get_conversion(source: str, target: str) -> ConversionPath:
    known = [f"{s}->{t}" for s, t in CONVERSIONS.keys()]
    return CONVERSIONS.get((source, target), label=f"{source} -> {target}", choices=known)


def list_conversions() -> list[ConversionPath]:
    return list(CONVERSIONS)


# (source, target, module in rosetta.convert, runs in a worker process, what it is)
for _source, _target, _module, _isolated, _description in (
    ("torch", "onnx", "torch_to_onnx", False,
     "torch.onnx.export (TorchScript exporter at opset 17 by default; dynamo exporter as an option)"),
    ("onnx", "torch", "onnx_to_torch", False,
     "onnx2torch, with rosetta's GRU converter registered through onnx2torch's converter registry"),
    ("onnx", "mxnet", "onnx_to_mxnet", True, "MXNet's ONNX importer with rosetta's graph fixes and GRU converter"),
    ("onnx", "keras", "onnx_to_keras", True, "rosetta's layer mapper: a trainable .keras file of built-in layers"),
    ("onnx", "tensorflow", "onnx_to_tensorflow", True,
     "onnx2tf: a TensorFlow SavedModel (inference only: its weights are constants)"),
    ("tensorflow", "onnx", "tensorflow_to_onnx", True, "tf2onnx: a SavedModel to ONNX (round trip; users' SavedModels)"),
    ("keras", "onnx", "keras_to_onnx", True, "tf2onnx on a SavedModel of the Keras model (users' Keras models)"),
    ("mxnet", "onnx", "mxnet_to_onnx", True, "MXNet's ONNX exporter, opset <= 13 (users' MXNet models)"),
    # The MMdnn route (rosetta.convert.mmdnn): parsers into MMdnn's IR, emitters out of it. Only the PyTorch
    # parser runs in-process (it needs the module); the rest run in workers, where MMdnn's shims are applied.
    ("torch", "mmdnn", "mmdnn.parse_torch", False, "MMdnn's PyTorch parser on the module (torch 2.x graph API)"),
    ("mxnet", "mmdnn", "mmdnn.parse_mxnet", True, "MMdnn's MXNet parser (symbol + params; Gluon names mapped)"),
    ("keras", "mmdnn", "mmdnn.parse_keras", True, "MMdnn's Keras parser (through tf-keras)"),
    ("mmdnn", "torch-code", "mmdnn.emit_torch", True, "MMdnn's PyTorch emitter: generated module code + state_dict"),
    ("mmdnn", "tensorflow", "mmdnn.emit_tensorflow", True, "MMdnn's TensorFlow emitter (TF1 code) -> SavedModel"),
    ("mmdnn", "keras", "mmdnn.emit_keras", True, "MMdnn's Keras emitter (tf-keras code) -> Keras file"),
    ("mmdnn", "mxnet", "mmdnn.emit_mxnet", True, "MMdnn's MXNet emitter: symbol + params"),
    ("mmdnn", "onnx", "mmdnn.emit_onnx", True, "MMdnn's ONNX emitter, brought to opset 13 for ONNX Runtime"),
):
    register_conversion(ConversionPath(_source, _target, f"{_source}-to-{_target}",
                                       f"rosetta.convert.{_module}:convert", _description, isolated=_isolated))
