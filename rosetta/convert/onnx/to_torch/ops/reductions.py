"""The opset-18 forms of the reductions (axes an input), adapted to onnx2torch's opset-13 converters where the axes
are a constant."""

from __future__ import annotations

from onnx2torch.node_converters.registry import get_converter
from onnx2torch.utils.common import OperationConverterResult

from rosetta.convert.onnx.to_torch.nodes import as_node, constant
from rosetta.convert.onnx.to_torch.registry import add_converter
from rosetta.errors import RosettaError


REDUCTIONS_18 = ("ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin",
                  "ReduceProd", "ReduceSumSquare")


def reduction_18(node, graph) -> OperationConverterResult:
    """The opset-18 reductions take their axes as an input: a constant one becomes the attribute of onnx2torch's
    opset-13 converter; none is every axis, or with noop_with_empty_axes the input itself."""
    inputs = list(node.input_values)
    axes = constant(graph, inputs[1]) if len(inputs) > 1 and inputs[1] else None
    if len(inputs) > 1 and inputs[1] and axes is None:
        raise RosettaError(f"{node.operation_type} node {node.name!r}: axes computed at run time cannot be "
                           "converted to torch by rosetta's adapter of onnx2torch's opset-13 reduction")
    keepdims = node.attributes.get("keepdims", 1)
    if axes is None or axes.numel() == 0:
        if node.attributes.get("noop_with_empty_axes", 0):
            return get_converter("Identity", 13)(as_node(node, inputs[:1]), graph)
        return get_converter(node.operation_type, 13)(as_node(node, inputs[:1], keepdims=keepdims), graph)
    return get_converter(node.operation_type, 13)(
        as_node(node, inputs[:1], axes=[int(a) for a in axes.tolist()], keepdims=keepdims), graph)


for _op in REDUCTIONS_18:
    add_converter(_op, 18)(reduction_18)
