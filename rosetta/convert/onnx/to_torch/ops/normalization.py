"""GroupNormalization (onnx2torch has none): group statistics (torch's group_norm), then the trainable per-channel
scale and bias (opset 18 gives them per group, each applied to its group's channels). LayerNormalization:
onnx2torch's takes nn.LayerNorm's normalized_shape from the input's inferred shape, which is 0 where shape
inference left an axis symbolic (torch's TransformerEncoder/mixer exports after a Transpose): the module then
fails at run time. Where the scale is a weight of exactly the normalized axes' rank, its shape is the
normalized shape."""

from __future__ import annotations

import torch
from onnx2torch.utils.common import OnnxMapping, OnnxToTorchModule, OperationConverterResult

from rosetta.convert.onnx.to_torch.nodes import constant
from rosetta.convert.onnx.to_torch.registry import add_converter
from rosetta.errors import RosettaError


class OnnxGroupNorm(torch.nn.Module, OnnxToTorchModule):
    """ONNX GroupNormalization: torch's group statistics (group_norm without affine), then the trainable scale
    and bias, per channel, or per group (opset 18), each applied to its group's channels."""

    def __init__(self, groups: int, scale: torch.Tensor, bias: torch.Tensor, epsilon: float) -> None:
        super().__init__()
        self.groups, self.epsilon = groups, epsilon
        self.weight, self.bias = torch.nn.Parameter(scale.clone()), torch.nn.Parameter(bias.clone())

    def forward(self, x):
        normalized = torch.nn.functional.group_norm(x, self.groups, eps=self.epsilon)
        repeat = x.shape[1] // self.weight.numel()
        shape = (1, -1) + (1,) * (x.dim() - 2)
        return normalized * self.weight.repeat_interleave(repeat).view(shape) \
            + self.bias.repeat_interleave(repeat).view(shape)


@add_converter("GroupNormalization", 21)
@add_converter("GroupNormalization", 18)
def group_normalization(node, graph) -> OperationConverterResult:
    scale, bias = (constant(graph, name) for name in node.input_values[1:3])
    if scale is None or bias is None:
        raise RosettaError(f"GroupNormalization node {node.name!r}: rosetta's onnx2torch converter needs its scale "
                           "and bias as initializers (its trainable weights)")
    module = OnnxGroupNorm(node.attributes["num_groups"], scale.float(), bias.float(), node.attributes.get("epsilon", 1e-5))
    return OperationConverterResult(torch_module=module, onnx_mapping=OnnxMapping(inputs=node.input_values[:1],
                                                                                  outputs=node.output_values))


@add_converter("LayerNormalization", 17, wraps=True)
def layer_norm_with_scale_shape(original):
    def convert(node, graph):
        converted = original(node, graph)
        module = converted.torch_module
        scale = node.input_values[1] if len(node.input_values) > 1 else None
        if scale in graph.initializers and hasattr(module, "normalized_shape") and 0 in module.normalized_shape:
            shape = tuple(graph.initializers[scale].to_torch().shape)
            axis = node.attributes.get("axis", -1)
            if axis < 0 and len(shape) == -axis:
                module.normalized_shape = shape
        return converted
    return convert
