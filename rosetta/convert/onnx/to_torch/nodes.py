"""What rosetta's torch converters share: onnx2torch imported (with the torchvision stand-in, through
frameworks.onnx2torch), its converter result of a module, a graph value that is a constant, and a node handed on
to onnx2torch's converter of an older opset."""

from __future__ import annotations

from rosetta.frameworks.onnx2torch import import_bare_onnx2torch

import_bare_onnx2torch()  # before any `from onnx2torch ...`: onnx2torch imports torchvision, absent or broken here

from onnx import helper  # noqa: E402
from onnx2torch.onnx_node import OnnxNode  # noqa: E402
from onnx2torch.utils.common import OperationConverterResult, onnx_mapping_from_node  # noqa: E402


def result(module, node) -> OperationConverterResult:
    """`module` computing `node`, its inputs and outputs those of the node."""
    return OperationConverterResult(torch_module=module, onnx_mapping=onnx_mapping_from_node(node))


def constant(graph, name: str):
    """The value of `name` where the graph makes it a constant (an initializer or a Constant node), or None."""
    if name in graph.initializers:
        return graph.initializers[name].to_torch()
    try:
        node, _ = graph.value_as_node_output(name)
    except KeyError:
        return None
    value = node.attributes.get("value") if node.operation_type == "Constant" else None
    return value.to_torch() if hasattr(value, "to_torch") else None


def as_node(node, inputs: list, **attributes) -> OnnxNode:
    """`node` with other inputs and attributes: how an opset-18 form is handed to onnx2torch's older converter."""
    proto = helper.make_node(node.operation_type, inputs, list(node.output_values), name=node.name, **attributes)
    return OnnxNode(proto, node.unique_name)
