"""Patterns onnx2tf computes otherwise than ONNX, refused by name before it runs (a CANNOT, never a silent FAIL),
where no rewrite of rosetta's (to_tensorflow.REWRITES) makes them right. Each entry says what onnx2tf does
instead; each was a silent FAIL of ONNX's backend suite (rosetta conformance --targets tensorflow)."""

from __future__ import annotations

from rosetta.convert.onnx import rewrites as rw
from rosetta.errors import RosettaError
from rosetta.frameworks.onnx_graph import constant_values, element_types, node_attributes, static_shapes, text

HIGHEST_RANK = 6  # onnx2tf's search of axis orders does not end on rank 7 (7! = 5,040 orders, of both operands)
_FLOATS = {1, 10, 11, 16}  # onnx.TensorProto FLOAT, FLOAT16, DOUBLE, BFLOAT16
_UINT64 = 13


def _node_reason(node, types, constants) -> str:
    """What onnx2tf would do wrong with this node, or ""."""
    attributes, op = node_attributes(node), node.op_type
    if op == "BatchNormalization" and attributes.get("training_mode", 0):
        return "training_mode=1: onnx2tf normalises with the running statistics and returns no batch statistics"
    if op == "ScatterND" and text(attributes.get("reduction", "none")) != "none":
        return f"reduction={text(attributes['reduction'])}: onnx2tf writes the updates over the data instead"
    if op == "Mod" and attributes.get("fmod", 0) and types.get(node.input[0]) in _FLOATS:
        return "fmod=1 on floats: onnx2tf computes the remainder with the divisor's sign (Python's), not C's fmod"
    if op == "Div" and types.get(node.input[0]) == _UINT64:
        return "uint64 operands: onnx2tf divides them as floats and returns floats"
    if op in ("QuantizeLinear", "QLinearMatMul", "QLinearConv"):
        return "quantized outputs: onnx2tf does not saturate them to their integer type's range (test_quantizelinear " \
               "FAILed by 373 on a uint8)"
    if op == "SpaceToDepth" and text(attributes.get("mode", "DCR")) == "CRD":
        return "mode=CRD: onnx2tf's model orders the channels otherwise, even written as Reshape and Transpose"
    return ""


def refuse_known_wrong(model) -> None:
    """RosettaError naming the first node of a pattern onnx2tf would compute wrongly (module docstring), a tensor
    of rank above HIGHEST_RANK (onnx2tf tries every order of its axes against ONNX's values and did not finish in
    300 s on the backend suite's rank-7 NLLLoss cases), or a reduction over run-time axes of unknown count
    (onnx2tf reduces no axis where they are empty, ONNX every axis; rewrites.empty_axes_as_every_axis decides it
    where the count is known)."""
    types, constants = element_types(model), constant_values(model)
    for node in model.graph.node:
        reason = _node_reason(node, types, constants)
        if reason:
            raise RosettaError(f"ONNX op {node.op_type} with {reason}, cannot be converted to tensorflow")
    unknown = rw.run_time_axes_of_unknown_count(model)
    if unknown:
        raise RosettaError(f"ONNX op {unknown[0]} with axes computed at run time, of unknown count, cannot be converted "
                           "to tensorflow: onnx2tf reduces no axis where they are empty, ONNX every axis")
    high = next(((name, len(shape)) for name, shape in static_shapes(model).items() if len(shape) > HIGHEST_RANK), None)
    if high is not None:
        raise RosettaError(f"a tensor of rank {high[1]} ({high[0]}) cannot be converted to tensorflow: onnx2tf searches "
                           f"every order of its axes and does not finish above rank {HIGHEST_RANK}")
