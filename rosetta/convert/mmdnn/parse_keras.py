"""Keras -> MMdnn IR with MMdnn's Keras parser, which reads Keras 2 HDF5 models through tf-keras
(compat.keras_parser). Keras 3 files (.keras, or HDF5 written by Keras 3) are refused with the reason: tf-keras
cannot read Keras 3's configs."""

from __future__ import annotations

from pathlib import Path

from rosetta.convert.mmdnn import compat
from rosetta.convert.mmdnn.ir import save_ir
from rosetta.errors import RosettaError
from rosetta.manifest import Manifest


def convert(source: Path, staging: Path, options: dict) -> Manifest:
    compat.apply()
    previous = Manifest.read(source)
    path = previous.artifact_path(source)
    keras3 = (f"MMdnn's Keras parser reads Keras 2 HDF5 models (tf-keras); {previous.source.get('path', path.name)} "
              "was written by Keras 3: use via='onnx'")
    if path.suffix.lower() != ".h5":
        raise RosettaError(keras3)
    with compat.keras_parser() as parser_class:
        import tf_keras

        try:
            parser = parser_class(str(path))
        except NotImplementedError as error:
            raise RosettaError(f"MMdnn's Keras parser cannot read this model: {error}") from None
        except TypeError as error:
            if "deserializing" in str(error):  # a Keras 3 config (batch_shape, ...) tf-keras cannot read
                raise RosettaError(keras3) from None
            raise
        return save_ir(parser, staging, previous.source, previous.inputs, previous.outputs,
                       f"tf-keras {tf_keras.__version__}", "channels_last")
