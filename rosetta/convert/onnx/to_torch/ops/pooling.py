"""GlobalMaxPool (onnx2torch has none): the max over every axis after N and C, kept (torch.amax, which like
ONNX propagates NaN)."""

from __future__ import annotations

import torch
from onnx2torch.utils.common import OnnxToTorchModule, OperationConverterResult

from rosetta.convert.onnx.to_torch.nodes import result
from rosetta.convert.onnx.to_torch.registry import add_converter


class OnnxGlobalMaxPool(torch.nn.Module, OnnxToTorchModule):
    """ONNX GlobalMaxPool: (N, C, D1, ...) -> (N, C, 1, ...), the max over D1, ..."""

    def forward(self, x):
        return torch.amax(x, dim=tuple(range(2, x.dim())), keepdim=True)


@add_converter("GlobalMaxPool", 1)
def global_max_pool(node, graph) -> OperationConverterResult:
    return result(OnnxGlobalMaxPool(), node)
