"""Recurrent layers: zero initial states built at run time, omitted (the ONNX spec's zeros)."""

from __future__ import annotations

import numpy as np

from rosetta.convert.onnx.rewrites.graph import remove_dead_nodes
from rosetta.convert.onnx.rewrites.registry import rewrite


@rewrite
def drop_zero_initial_states(model):
    """GRU/LSTM/RNN whose initial_h is all zeros computed at run time (torch's exporter builds it from
    Shape -> Gather -> Unsqueeze -> Concat -> ConstantOfShape(0)) get that input omitted instead, which the
    ONNX spec defines as zeros. Trailing empty optional inputs are dropped too: importers such as MXNet's
    look every input name up, including "". Keras and MXNet cannot express the dynamic-shape chain."""
    producers = {out: node for node in model.graph.node for out in node.output}
    for node in model.graph.node:
        if node.op_type not in ("GRU", "LSTM", "RNN"):
            continue
        inputs = list(node.input)
        for index in (5, 6):  # initial_h, initial_c
            if index < len(inputs) and inputs[index]:
                producer = producers.get(inputs[index])
                if producer is not None and producer.op_type == "ConstantOfShape" and _fills_zero(producer):
                    inputs[index] = ""
        while inputs and not inputs[-1]:
            inputs.pop()
        del node.input[:]
        node.input.extend(inputs)
    return remove_dead_nodes(model)


def _fills_zero(node) -> bool:
    from onnx import numpy_helper

    for attribute in node.attribute:
        if attribute.name == "value":
            return not np.any(numpy_helper.to_array(attribute.t))
    return True  # ConstantOfShape's default value is 0
