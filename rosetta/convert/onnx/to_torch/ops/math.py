"""IsInf: onnx2torch's reads neither detect_positive nor detect_negative."""

from __future__ import annotations

import torch
from onnx2torch.utils.common import OnnxToTorchModule, OperationConverterResult

from rosetta.convert.onnx.to_torch.nodes import result
from rosetta.convert.onnx.to_torch.registry import add_converter


class OnnxIsInf(torch.nn.Module, OnnxToTorchModule):
    """ONNX IsInf with its detect_positive and detect_negative flags (onnx2torch's reads neither)."""

    def __init__(self, positive: bool, negative: bool) -> None:
        super().__init__()
        self.positive, self.negative = positive, negative

    def forward(self, x):
        if self.positive and self.negative:
            return torch.isinf(x)
        if self.positive:
            return torch.isposinf(x)
        if self.negative:
            return torch.isneginf(x)
        return torch.zeros_like(x, dtype=torch.bool)


@add_converter("IsInf", 10, wraps=True)
def isinf(original):
    def convert(node, graph) -> OperationConverterResult:
        return result(OnnxIsInf(bool(node.attributes.get("detect_positive", 1)),
                                 bool(node.attributes.get("detect_negative", 1))), node)
    return convert
