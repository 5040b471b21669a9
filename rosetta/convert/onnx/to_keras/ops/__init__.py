"""The Keras mapper's op converters, one module per op family; importing this package registers them all
(registry.add_converter). An op is added as a function in its family's module (or a new module listed here)
plus its conformance cases."""

from rosetta.convert.onnx.to_keras.ops import (activations, arithmetic, conv, dense, math, normalization,  # noqa: F401
                                               pad, pooling, recurrent, reshape, resize, tensors)
