"""Tensor ops onnx2torch lacks or gets wrong. Added: Trilu with k computed at run time (a constant k is rewritten
as Where before: rewrites.trilu_as_where), Split-18 (num_outputs, the last part smaller), Pad from opset 18
without `axes` (onnx2torch's opset-13 Pad is the same function). Replacing onnx2torch's (silently wrong):
CumSum (it defaults `reverse` to 1; ONNX to 0), Pad-2 (it reads the pad value from an attribute
`constant_value`; ONNX names it `value`), NonZero (torch.nonzero is ONNX's transpose), TopK (ties in
torch.topk's order, not lowest index first: a stable sort), GatherElements (torch.gather refuses the negative
indices ONNX counts from the end: Hugging Face decoders' and RoBERTa-style position ids). Added:
ScatterElements (a mixture-of-experts router's mask), OneHot by a constant depth (Gemma's vision tower)."""

from __future__ import annotations

import torch
from onnx2torch.node_converters.pad import OnnxPadStatic
from onnx2torch.node_converters.registry import get_converter
from onnx2torch.utils.common import OnnxToTorchModule, OperationConverterResult

from rosetta.convert.onnx.to_torch.nodes import as_node, constant, result
from rosetta.convert.onnx.to_torch.registry import add_converter
from rosetta.errors import RosettaError


class OnnxTrilu(torch.nn.Module, OnnxToTorchModule):
    """ONNX Trilu with k given at run time: torch.triu or torch.tril of the last two axes."""

    def __init__(self, upper: bool) -> None:
        super().__init__()
        self.upper = upper

    def forward(self, x, k=None):
        diagonal = 0 if k is None else int(k)
        return torch.triu(x, diagonal) if self.upper else torch.tril(x, diagonal)


@add_converter("Trilu", 14)
def trilu(node, graph) -> OperationConverterResult:
    return result(OnnxTrilu(bool(node.attributes.get("upper", 1))), node)


class OnnxSplit18(torch.nn.Module, OnnxToTorchModule):
    """ONNX Split from opset 18: by the sizes in `split`, or into `parts` of ceil(length / parts), the last one
    smaller."""

    def __init__(self, axis: int, parts: int) -> None:
        super().__init__()
        self.axis, self.parts = axis, parts

    def forward(self, x, split=None):
        if split is not None:
            return torch.split(x, split.tolist(), dim=self.axis)
        length = x.shape[self.axis]
        size = -(-length // self.parts)
        return torch.split(x, [size] * (self.parts - 1) + [length - size * (self.parts - 1)], dim=self.axis)


@add_converter("Split", 18)
def split(node, graph) -> OperationConverterResult:
    parts = node.attributes.get("num_outputs", len(node.output_values))
    return result(OnnxSplit18(node.attributes.get("axis", 0), parts), node)


@add_converter("Pad", 18)
def pad_18(node, graph) -> OperationConverterResult:
    """Pad from opset 18 without its `axes` input is opset 13's Pad (onnx2torch's)."""
    inputs = list(node.input_values)
    if len(inputs) > 3 and inputs[3]:
        raise RosettaError(f"Pad node {node.name!r}: an `axes` input cannot be converted to torch by rosetta's "
                           "adapter of onnx2torch's opset-13 Pad")
    return get_converter("Pad", 13)(as_node(node, inputs[:3], **dict(node.attributes)), graph)


class OnnxCumSum(torch.nn.Module, OnnxToTorchModule):
    """ONNX CumSum along a run-time axis, `exclusive` (each sum without its own element) and `reverse`."""

    def __init__(self, exclusive: bool, reverse: bool) -> None:
        super().__init__()
        self.exclusive, self.reverse = exclusive, reverse

    def forward(self, x, axis):
        dim = int(axis)
        if self.reverse:
            x = torch.flip(x, (dim,))
        summed = torch.cumsum(x, dim)
        if self.exclusive:
            summed = summed - x
        return torch.flip(summed, (dim,)) if self.reverse else summed


@add_converter("CumSum", 14, wraps=True)
@add_converter("CumSum", 11, wraps=True)
def cumsum(original):
    def convert(node, graph) -> OperationConverterResult:
        return result(OnnxCumSum(bool(node.attributes.get("exclusive", 0)), bool(node.attributes.get("reverse", 0))),
                       node)
    return convert


@add_converter("Pad", 2, wraps=True)
def pad_2(original):
    def convert(node, graph) -> OperationConverterResult:
        module = OnnxPadStatic.create_from_onnx_params(onnx_pads=node.attributes.get("pads"),
                                                       onnx_mode=node.attributes.get("mode", "constant"),
                                                       constant_value=node.attributes.get("value", 0.0))
        return result(module, node)
    return convert


class OnnxTopK(torch.nn.Module, OnnxToTorchModule):
    """ONNX TopK, whose equal values come lowest index first: a stable sort, then the first k (torch.topk
    orders ties as it likes, onnx2torch's TopK with it). TopK-1 gives k as an attribute (`fixed_k`)."""

    def __init__(self, axis: int, largest: bool, fixed_k: int | None = None) -> None:
        super().__init__()
        self.axis, self.largest, self.fixed_k = axis, largest, fixed_k

    def forward(self, x, k=None):
        k = self.fixed_k if k is None else k
        count = int(k.reshape(-1)[0]) if isinstance(k, torch.Tensor) else int(k)
        values, indices = torch.sort(x, dim=self.axis, descending=self.largest, stable=True)
        return values.narrow(self.axis, 0, count), indices.narrow(self.axis, 0, count)


@add_converter("TopK", 11, wraps=True)
@add_converter("TopK", 10, wraps=True)
@add_converter("TopK", 1, wraps=True)
def topk(original):
    # onnx2torch's own TopK-1 module takes k as an input, which TopK-1 does not have: it failed at run time
    def convert(node, graph) -> OperationConverterResult:
        fixed_k = node.attributes.get("k") if len(node.input_values) < 2 else None  # TopK-1: k an attribute
        return result(OnnxTopK(node.attributes.get("axis", -1), bool(node.attributes.get("largest", 1)), fixed_k), node)
    return convert


class OnnxNonZero(torch.nn.Module, OnnxToTorchModule):
    """ONNX NonZero: the indices of the non-zero elements, one row per axis (torch.nonzero's transpose)."""

    def forward(self, x):
        return torch.nonzero(x).T


@add_converter("NonZero", 13, wraps=True)
def nonzero(original):
    def convert(node, graph) -> OperationConverterResult:
        return result(OnnxNonZero(), node)
    return convert


class OnnxGatherElements(torch.nn.Module, OnnxToTorchModule):
    """ONNX GatherElements: torch.gather along `axis`, a negative index counted from the end of that axis."""

    def __init__(self, axis: int) -> None:
        super().__init__()
        self.axis = axis

    def forward(self, x, indices):
        indices = indices.long()
        return torch.gather(x, self.axis, torch.where(indices < 0, indices + x.shape[self.axis], indices))


@add_converter("GatherElements", 13, wraps=True)
@add_converter("GatherElements", 11, wraps=True)
def gather_elements(original):
    def convert(node, graph) -> OperationConverterResult:
        return result(OnnxGatherElements(int(node.attributes.get("axis", 0))), node)
    return convert


class OnnxScatterElements(torch.nn.Module, OnnxToTorchModule):
    """ONNX ScatterElements: torch.scatter (reduction none) or scatter_reduce (add, mul, max, min, the data's
    own values included as ONNX's), a negative index counted from the end of the axis."""

    def __init__(self, axis: int, reduction: str) -> None:
        super().__init__()
        self.axis, self.reduction = axis, reduction

    def forward(self, x, indices, updates):
        indices = indices.long()
        indices = torch.where(indices < 0, indices + x.shape[self.axis], indices)
        if self.reduction == "none":
            return torch.scatter(x, self.axis, indices, updates)
        reduce = {"add": "sum", "mul": "prod", "max": "amax", "min": "amin"}[self.reduction]
        return torch.scatter_reduce(x, self.axis, indices, updates, reduce, include_self=True)


@add_converter("ScatterElements", 18)
@add_converter("ScatterElements", 16)
@add_converter("ScatterElements", 11)
def scatter_elements(node, graph) -> OperationConverterResult:
    """onnx2torch has none (a mixture-of-experts router's mask of the chosen experts)."""
    reduction = node.attributes.get("reduction", "none")
    reduction = reduction.decode() if isinstance(reduction, bytes) else reduction
    return result(OnnxScatterElements(int(node.attributes.get("axis", 0)), reduction), node)


class OnnxOneHot(torch.nn.Module, OnnxToTorchModule):
    """ONNX OneHot by a constant depth and [off, on] values along `axis`: a negative index counted from the end of
    the depth, one outside [-depth, depth) all off."""

    def __init__(self, depth: int, off: float, on: float, dtype: torch.dtype, axis: int) -> None:
        super().__init__()
        self.depth, self.off, self.on, self.dtype, self.axis = depth, off, on, dtype, axis

    def forward(self, indices, *constants):
        indices = indices.long()
        inside = (indices >= -self.depth) & (indices < self.depth)
        indices = torch.where(indices < 0, indices + self.depth, indices)
        hot = torch.nn.functional.one_hot(torch.where(inside, indices, 0), self.depth) * inside.unsqueeze(-1)
        result = (hot * (self.on - self.off) + self.off).to(self.dtype)
        return torch.movedim(result, -1, self.axis % result.dim())


@add_converter("OneHot", 11)
@add_converter("OneHot", 9)
def one_hot(node, graph) -> OperationConverterResult:
    """onnx2torch has none (Gemma's vision tower)."""
    depth, values = constant(graph, node.input_values[1]), constant(graph, node.input_values[2])
    if depth is None or values is None:
        raise RosettaError("onnx2torch: OneHot with a depth or values computed at run time is not supported")
    off, on = (float(v) for v in values.reshape(-1))
    return result(OnnxOneHot(int(depth.reshape(-1)[0]), off, on, values.dtype, int(node.attributes.get("axis", -1))),
                  node)
