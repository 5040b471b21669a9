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
    isolation: str = ""  # where it runs (rosetta.execution): "" in-process, else that family's warm worker
    packages: tuple[str, ...] = ()  # the distributions whose versions decide what it writes

    def load(self) -> Callable:
        return load_entry(self.entry)

    def versions(self) -> dict[str, str]:
        """Installed version of each package that makes this conversion (read from metadata: nothing imported),
        so that an artifact made by another version is made again, not reused."""
        from importlib.metadata import PackageNotFoundError, version

        found = {}
        for package in self.packages:
            try:
                found[package] = version(package)
            except PackageNotFoundError:
                found[package] = "not installed"
        return found


CONVERSIONS: Registry[ConversionPath] = Registry("conversion", key=lambda path: (path.source, path.target))
register_conversion = CONVERSIONS.register


def get_conversion(source: str, target: str) -> ConversionPath:
    known = [f"{s}->{t}" for s, t in CONVERSIONS.keys()]
    return CONVERSIONS.get((source, target), label=f"{source} -> {target}", choices=known)


def chain_versions(chain) -> dict[str, str]:
    """rosetta's version and that of every package that makes a step of `chain` (formats, source first): what
    decides the artifact a chain makes, beside its options."""
    from rosetta import version  # read at call time: a test sets rosetta.version.__version__

    return {"rosetta": version.__version__,
            **{k: v for a, b in zip(chain, chain[1:]) for k, v in get_conversion(a, b).versions().items()}}


def list_conversions() -> list[ConversionPath]:
    return list(CONVERSIONS)


# (source, target, module in rosetta.convert, worker family ("": in-process), packages that make it, what it is)
TF, MX, MM = "tensorflow", "mxnet", "mmdnn"
# MMdnn's TensorFlow emitter turns TensorFlow 2 behaviour off for good, so its worker retires after each job:
# a family of its own, or MMdnn's other parsers and emitters would lose their warm worker with it
MM_TF1 = "mmdnn-tf1"
TORCH_ONNX, TF2ONNX = ("torch", "onnx"), ("tf2onnx", "tensorflow", "onnx")
for _source, _target, _module, _isolation, _packages, _description in (
    # The ONNX route (rosetta.convert.onnx): into ONNX (from_*), and out of it (to_*).
    ("torch", "onnx", "onnx.from_torch", "", TORCH_ONNX,
     "torch.onnx.export (TorchScript exporter at opset 17 by default; dynamo exporter as an option)"),
    ("onnx", "torch", "onnx.to_torch", "", ("onnx2torch", *TORCH_ONNX),
     "onnx2torch, with rosetta's GRU and LSTM converters registered through onnx2torch's converter registry"),
    ("onnx", "mxnet", "onnx.to_mxnet", MX, ("mxnet", "onnx"),
     "MXNet's ONNX importer with rosetta's graph fixes and GRU and Slice converters"),
    ("onnx", "keras", "onnx.to_keras", TF, ("keras", "tensorflow", "onnx"),
     "rosetta's layer mapper: a trainable .keras file of built-in layers"),
    ("onnx", "tensorflow", "onnx.to_tensorflow", TF, ("onnx2tf", "tensorflow", "onnx"),
     "onnx2tf: a TensorFlow SavedModel (inference only: its weights are constants)"),
    ("tensorflow", "onnx", "onnx.from_tensorflow", TF, TF2ONNX,
     "tf2onnx: a SavedModel to ONNX (round trip; users' SavedModels)"),
    ("keras", "onnx", "onnx.from_keras", TF, ("keras", *TF2ONNX), "tf2onnx on a SavedModel of the Keras model (users' Keras models)"),
    ("keras", "tensorflow", "keras_to_tensorflow", TF, ("keras", "tensorflow"),
     "a Keras model saved as a TensorFlow SavedModel (the tensorflow target's second way in: the Keras mapper's)"),
    ("mxnet", "onnx", "onnx.from_mxnet", MX, ("mxnet", "onnx"), "MXNet's ONNX exporter, opset <= 13 (users' MXNet models)"),
    # The MMdnn route (rosetta.convert.mmdnn): parsers into MMdnn's IR, emitters out of it. Only the PyTorch
    # parser runs in-process (it needs the module); the rest run in workers, where MMdnn's shims are applied.
    ("torch", "mmdnn", "mmdnn.parse_torch", "", ("mmdnn", "torch"), "MMdnn's PyTorch parser on the module (torch 2.x graph API)"),
    ("mxnet", "mmdnn", "mmdnn.parse_mxnet", MM, ("mmdnn", "mxnet"), "MMdnn's MXNet parser (symbol + params; Gluon names mapped)"),
    ("keras", "mmdnn", "mmdnn.parse_keras", MM, ("mmdnn", "tf-keras"), "MMdnn's Keras parser (through tf-keras)"),
    ("mmdnn", "torch-code", "mmdnn.emit_torch", MM, ("mmdnn", "torch"),
     "MMdnn's PyTorch emitter: generated module code + state_dict"),
    ("mmdnn", "tensorflow", "mmdnn.emit_tensorflow", MM_TF1, ("mmdnn", "tensorflow"),
     "MMdnn's TensorFlow emitter (TF1 code) -> SavedModel"),
    ("mmdnn", "keras", "mmdnn.emit_keras", MM, ("mmdnn", "tf-keras"), "MMdnn's Keras emitter (tf-keras code) -> Keras file"),
    ("mmdnn", "mxnet", "mmdnn.emit_mxnet", MM, ("mmdnn", "mxnet"), "MMdnn's MXNet emitter: symbol + params"),
    ("mmdnn", "onnx", "mmdnn.emit_onnx", MM, ("mmdnn", "onnx"), "MMdnn's ONNX emitter, brought to opset 13 for ONNX Runtime"),
):
    register_conversion(ConversionPath(_source, _target, f"{_source}-to-{_target}",
                                       f"rosetta.convert.{_module}:convert", _description, isolation=_isolation,
                                       packages=_packages))
