"""IsInf: onnx2torch's reads neither detect_positive nor detect_negative. ThresholdedRelu and the bitwise ops
(CPM-Ant's integer masks): onnx2torch has none."""

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


class OnnxThresholdedRelu(torch.nn.Module, OnnxToTorchModule):
    """ONNX ThresholdedRelu: x where x > alpha, else 0 (torch.nn.Threshold keeps a NaN, which ONNX makes 0)."""

    def __init__(self, alpha: float) -> None:
        super().__init__()
        self.alpha = alpha

    def forward(self, x):
        return torch.where(x > self.alpha, x, torch.zeros_like(x))


@add_converter("ThresholdedRelu", 10)
def thresholded_relu(node, graph) -> OperationConverterResult:
    """Opset 10 on (22 only widened the types: the same converter, frameworks.onnx2torch.register_later_opsets)."""
    return result(OnnxThresholdedRelu(float(node.attributes.get("alpha", 1.0))), node)


class OnnxBitwise(torch.nn.Module, OnnxToTorchModule):
    """ONNX BitwiseAnd, BitwiseOr, BitwiseXor (broadcast) and BitwiseNot, as torch's."""

    def __init__(self, op_type: str) -> None:
        super().__init__()
        self.op_type = op_type

    def forward(self, x, y=None):
        compute = {"BitwiseAnd": torch.bitwise_and, "BitwiseOr": torch.bitwise_or,
                   "BitwiseXor": torch.bitwise_xor}.get(self.op_type)
        return torch.bitwise_not(x) if compute is None else compute(x, y)


@add_converter("BitwiseNot", 18)
@add_converter("BitwiseXor", 18)
@add_converter("BitwiseOr", 18)
@add_converter("BitwiseAnd", 18)
def bitwise(node, graph) -> OperationConverterResult:
    return result(OnnxBitwise(node.operation_type), node)
