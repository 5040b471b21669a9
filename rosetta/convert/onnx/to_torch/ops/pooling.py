"""GlobalMaxPool (onnx2torch has none): the max over every axis after N and C, kept (torch.amax, which like
ONNX propagates NaN). AveragePool from opset 19 (onnx2torch has 7 to 11; 19 added `dilations`, 22 only
widened the types): without dilations it is opset 11's, handed to onnx2torch's converter where the pads are the same
at both ends of each axis and within half the kernel (torch's AvgPool takes no more), and otherwise (auto_pad SAME_*,
TF-style 'same' exports, which onnx2torch refuses) the zeros padded first and then pooled without pads; dilated
average pooling is refused by name (torch's AvgPool has no dilation)."""

from __future__ import annotations

import torch
from onnx2torch.node_converters.registry import get_converter
from onnx2torch.utils.common import OnnxToTorchModule, OperationConverterResult

from rosetta.convert.onnx.to_torch.nodes import as_node, result
from rosetta.convert.onnx.to_torch.registry import add_converter
from rosetta.errors import RosettaError


class OnnxGlobalMaxPool(torch.nn.Module, OnnxToTorchModule):
    """ONNX GlobalMaxPool: (N, C, D1, ...) -> (N, C, 1, ...), the max over D1, ..."""

    def forward(self, x):
        return torch.amax(x, dim=tuple(range(2, x.dim())), keepdim=True)


@add_converter("GlobalMaxPool", 1)
def global_max_pool(node, graph) -> OperationConverterResult:
    return result(OnnxGlobalMaxPool(), node)


class OnnxPaddedAveragePool(torch.nn.Module, OnnxToTorchModule):
    """ONNX AveragePool whose pads differ at the two ends of an axis: x padded with zeros, then averaged without
    pads; with count_include_pad 0, over the real elements only: the average of the padded x over that of the
    padded ones (each window's sum / k over its real count / k)."""

    def __init__(self, kernel: list, strides: list, pads: list, count_include_pad: bool) -> None:
        super().__init__()
        self.kernel, self.strides, self.count_include_pad = kernel, strides, count_include_pad
        rank = len(kernel)
        # torch.nn.functional.pad: (last axis begin, end, the one before ...); ONNX: all begins, then all ends
        self.pads = [p for axis in reversed(range(rank)) for p in (pads[axis], pads[axis + rank])]

    def forward(self, x):
        pool = (torch.nn.functional.avg_pool1d, torch.nn.functional.avg_pool2d,
                torch.nn.functional.avg_pool3d)[len(self.kernel) - 1]
        averaged = pool(torch.nn.functional.pad(x, self.pads), self.kernel, self.strides)
        if self.count_include_pad:
            return averaged
        ones = torch.nn.functional.pad(torch.ones_like(x[:1, :1]), self.pads)
        return averaged / pool(ones, self.kernel, self.strides)


def _same_pads(node, graph, kernel: list, strides: list, upper: bool) -> list | None:
    """auto_pad SAME_UPPER/SAME_LOWER as explicit ONNX pads (the odd one at the end, or the beginning), from the
    input's static spatial sizes; None where they are unknown."""
    from onnx2torch.utils.common import get_shape_from_value_info

    try:
        sizes = get_shape_from_value_info(graph.value_info[node.input_values[0]])[2:]
    except (KeyError, AttributeError, TypeError):
        return None
    if len(sizes) != len(kernel) or any(not isinstance(size, int) or size <= 0 for size in sizes):
        return None
    total = [max((-(-size // stride) - 1) * stride + k - size, 0) for size, k, stride in zip(sizes, kernel, strides)]
    small = [t // 2 for t in total]
    large = [t - h for t, h in zip(total, small)]
    return small + large if upper else large + small


@add_converter("AveragePool", 19)
def average_pool(node, graph) -> OperationConverterResult:
    """From opset 19 (dilations came at 19, 22 only widened the types); onnx2torch has 7, 10 and 11. Pads the same
    at both ends and within half the kernel go to onnx2torch's opset-11 converter; others, auto_pad SAME_* among
    them, to OnnxPaddedAveragePool."""
    attributes = dict(node.attributes)
    kernel = list(attributes["kernel_shape"])
    rank = len(kernel)
    if any(d != 1 for d in attributes.pop("dilations", [1] * rank)):
        raise RosettaError(f"AveragePool node {node.name!r}: dilations cannot be converted to torch (its AvgPool has "
                           "none)")
    strides = list(attributes.get("strides", [1] * rank))
    auto_pad = attributes.get("auto_pad", "NOTSET")
    pads = _same_pads(node, graph, kernel, strides, auto_pad == "SAME_UPPER") if auto_pad.startswith("SAME") else \
        list(attributes.get("pads", [0] * 2 * rank))
    if pads is None:
        raise RosettaError(f"AveragePool node {node.name!r}: auto_pad {auto_pad} of an input of unknown spatial size "
                           "cannot be converted to torch by rosetta's converter")
    if pads[:rank] == pads[rank:] and all(p <= k // 2 for p, k in zip(pads, kernel)):
        attributes.update(auto_pad="NOTSET", pads=pads)
        return get_converter("AveragePool", 11)(as_node(node, list(node.input_values), **attributes), graph)
    if attributes.get("ceil_mode", 0):
        raise RosettaError(f"AveragePool node {node.name!r}: ceil_mode with pads that differ at the two ends or exceed "
                           "half the kernel cannot be converted to torch by rosetta's converter")
    return result(OnnxPaddedAveragePool(kernel, strides, pads, bool(attributes.get("count_include_pad", 0))), node)
