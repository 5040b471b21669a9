"""Dropout at inference. Opset 7 to 9: the identity (onnx2torch has none before 10). Opset 12 on: onnx2torch makes
`OnnxDropoutDynamic`, which takes its ratio as a run-time input: a layer whose rate no one can read or set, and
which no code that turns dropout off for a comparison finds; where the ratio is a constant and training_mode is
omitted, it is torch.nn.Dropout(p=ratio), which is what it means."""

from __future__ import annotations

import torch
from onnx2torch.utils.common import OnnxMapping, OperationConverterResult

from rosetta.convert.onnx.to_torch.nodes import constant
from rosetta.convert.onnx.to_torch.registry import add_converter
from rosetta.errors import RosettaError


@add_converter("Dropout", 13, wraps=True)
@add_converter("Dropout", 12, wraps=True)
def dropout_with_constant_ratio(original):
    def convert(node, graph):
        inputs = node.input_values
        ratio = constant(graph, inputs[1]) if len(inputs) > 1 and inputs[1] else torch.tensor(0.5)
        mask = len(node.output_values) > 1 and node.output_values[1]
        if ratio is None or mask or (len(inputs) > 2 and inputs[2]):
            return original(node, graph)
        return OperationConverterResult(torch_module=torch.nn.Dropout(p=float(ratio)),
                                        onnx_mapping=OnnxMapping(inputs=(inputs[0],), outputs=node.output_values[:1]))
    return convert


@add_converter("Dropout", 7)
def dropout_7(node, graph) -> OperationConverterResult:
    """Opset 7 to 9 (Caffe2-era models; onnx2torch starts at 10): `ratio` an attribute, the identity at inference,
    torch.nn.Dropout(p=ratio) as onnx2torch's opset-10 converter makes it. Its mask output, all ones at inference
    and float-typed where opset 10 made it bool, is refused where a node reads it."""
    if len(node.output_values) > 1 and node.output_values[1]:
        raise RosettaError(f"Dropout node {node.name!r}: its mask output cannot be converted to torch by rosetta's "
                           "opset-7 Dropout converter")
    return OperationConverterResult(torch_module=torch.nn.Dropout(p=node.attributes.get("ratio", 0.5)),
                                    onnx_mapping=OnnxMapping(inputs=node.input_values[:1],
                                                             outputs=node.output_values[:1]))
