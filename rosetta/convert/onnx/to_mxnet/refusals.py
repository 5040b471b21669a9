"""Patterns MXNet computes otherwise than ONNX, refused by name before the import (a CANNOT, never a silent
FAIL), where no converter or rewrite of rosetta's makes them right. Each entry says what MXNet does instead."""

from __future__ import annotations

from rosetta.errors import RosettaError
from rosetta.frameworks.onnx_graph import default_opset, element_types, node_attributes, static_shapes

_FLOATS = {1, 10, 11, 16}  # onnx.TensorProto FLOAT, FLOAT16, DOUBLE, BFLOAT16


def _ceil_mode_differs(node, shapes) -> bool:
    """Whether ONNX's ceil_mode output size differs from MXNet's 'full' convention on this input, or the input's
    size is unknown: ONNX drops a last window that would start in the end padding, MXNet keeps it."""
    attributes = node_attributes(node)
    shape = shapes.get(node.input[0])
    if shape is None or None in shape[2:]:
        return True
    kernel = attributes["kernel_shape"]
    spatial = len(kernel)
    pads = list(attributes.get("pads", [0] * 2 * spatial))
    for axis, (size, k, stride) in enumerate(zip(shape[2:], kernel, attributes.get("strides", [1] * spatial))):
        begin, end = pads[axis], pads[spatial + axis]
        onnx_size = -(-(size + begin + end - k) // stride) + 1
        if (onnx_size - 1) * stride >= size + begin:
            onnx_size -= 1
        if onnx_size != -(-(size + 2 * begin - k) // stride) + 1:
            return True
    return False


def refuse_known_wrong(model) -> None:
    """RosettaError naming the first node of a pattern MXNet would compute wrongly (module docstring), or a
    float64 model (the importer loads every tensor as float32)."""
    shapes, types, opset = static_shapes(model), element_types(model), default_opset(model)
    doubles = [v.name for v in list(model.graph.input) + list(model.graph.output) if v.type.tensor_type.elem_type == 11]
    if doubles:
        raise RosettaError(f"a float64 model ({doubles[0]!r}) cannot be converted to mxnet: its ONNX importer loads "
                           "every tensor as float32, which would round the model's values and overflow past its range")
    for node in model.graph.node:
        attributes, op = node_attributes(node), node.op_type
        reason = ""
        if op in ("MaxPool", "AveragePool", "LpPool") and any(d != 1 for d in attributes.get("dilations", [1])):
            reason = "dilations: MXNet's Pooling has none"
        elif op in ("MaxPool", "AveragePool") and attributes.get("ceil_mode", 0) and _ceil_mode_differs(node, shapes):
            reason = "ceil_mode where MXNet's 'full' convention keeps a last window that starts in the padding (or " \
                     "the input's size is unknown)"
        elif op == "LpPool":
            reason = "MXNet's lp Pooling computes another norm at the borders"
        elif op in ("ArgMax", "ArgMin") and attributes.get("select_last_index", 0):
            reason = "select_last_index=1: MXNet's argmax and argmin give the first index"
        elif op == "Hardmax" and opset >= 13 and attributes.get("axis", -1) not in (
                -1, len(shapes.get(node.input[0], [])) - 1):
            reason = "an axis other than the last: MXNet's importer flattens from it (Hardmax before opset 13)"
        elif op == "Mod" and not attributes.get("fmod", 0) and types.get(node.input[0]) in _FLOATS:
            reason = "fmod=0 on floats: MXNet's mod differs from ONNX's at infinities and zero divisors"
        if reason:
            raise RosettaError(f"ONNX op {op} with {reason}, cannot be converted to mxnet")


def refuse_omitted_inputs(model) -> None:
    """MXNet's importer looks every input up by name, so an omitted optional input ("", e.g. Clip's min) fails
    with KeyError: ''. Say which op, before the import."""
    for node in model.graph.node:
        if "" in node.input:
            raise RosettaError(f"ONNX op {node.op_type} with an omitted optional input cannot be converted to mxnet: "
                               "MXNet's ONNX importer reads every input by name")
