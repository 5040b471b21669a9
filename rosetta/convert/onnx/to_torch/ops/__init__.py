"""rosetta's torch converters, one module per op family; importing this package registers every one of them
(registry.add_converter). `nodes` comes first: it imports onnx2torch with the torchvision stand-in."""

from rosetta.convert.onnx.to_torch import nodes  # noqa: F401 - onnx2torch imported before its modules are named
from rosetta.convert.onnx.to_torch.ops import (conv, dropout, math, normalization, pooling, recurrent,  # noqa: F401
                                               reductions, shapes, tensors)
