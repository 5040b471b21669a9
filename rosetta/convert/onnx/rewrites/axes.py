"""Axes: axes inputs as attributes, default axes made explicit, empty axes of reductions."""

from __future__ import annotations

import numpy as np

from rosetta.convert.onnx.rewrites.graph import add_initializer, remove_dead_nodes, replace_nodes
from rosetta.convert.onnx.rewrites.registry import rewrite
from rosetta.frameworks.onnx_graph import constant_values, default_opset, node_attributes, static_shapes


@rewrite
def axes_inputs_to_attributes(model):
    """Squeeze/Unsqueeze/Reduce* take `axes` as a constant input since opset 13/18; importers written for
    older opsets (MXNet's) read only the attribute. Moves constant axes back into the attribute."""
    import onnx

    constants = constant_values(model)
    for node in model.graph.node:
        if node.op_type in ("Squeeze", "Unsqueeze") or node.op_type.startswith("Reduce"):
            if len(node.input) > 1 and node.input[1] in constants:
                axes = [int(a) for a in np.atleast_1d(constants[node.input[1]])]
                del node.input[1:]
                node.attribute.append(onnx.helper.make_attribute("axes", axes))
    return remove_dead_nodes(model)


@rewrite
def explicit_default_axes(model):
    """MXNet: Softmax, LogSoftmax and Hardmax of opset 13 and later, whose axis attribute is omitted, get it
    written (-1, the default since opset 13): MXNet's importer reads an omitted one as the old default, 1, and
    flattens from it (ONNX's test_hardmax_default_axis FAILed: a rank-3 Hardmax over the wrong axes)."""
    from onnx import helper

    if default_opset(model) < 13:
        return model
    for node in model.graph.node:
        if node.op_type in ("Softmax", "LogSoftmax", "Hardmax") and node.domain in ("", "ai.onnx") and \
                not any(attribute.name == "axis" for attribute in node.attribute):
            node.attribute.append(helper.make_attribute("axis", -1))
    return model


REDUCTIONS = ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
              "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare")


@rewrite
def empty_axes_as_every_axis(model):
    """onnx2tf: a reduction whose axes are computed at run time (ReduceSum from opset 13, the others from 18) and
    are known to be empty (a 1-D tensor of size 0) reduces every axis, as ONNX says (noop_with_empty_axes=0);
    onnx2tf reduced none (ReduceSum_default_axes_keepdims FAILed by its shape). The axes become Concat(axes,
    0..rank-1), so the run-time tensor is still read. Axes of unknown count are left for refuse_unknown_axes."""
    from onnx import helper

    constants, shapes = constant_values(model), static_shapes(model)

    def replace(node):
        if node.op_type not in REDUCTIONS or len(node.input) < 2 or not node.input[1] or node.input[1] in constants \
                or node_attributes(node).get("noop_with_empty_axes", 0) or shapes.get(node.input[1]) != [0] \
                or shapes.get(node.input[0]) is None:
            return None
        every = f"{node.output[0]}_every_axis"
        add_initializer(model, every, np.arange(len(shapes[node.input[0]])))
        concat = helper.make_node("Concat", [node.input[1], every], [f"{every}s"], axis=0)
        node.input[1] = f"{every}s"
        return [concat, node]

    replace_nodes(model, replace)
    return model


def run_time_axes_of_unknown_count(model) -> list[str]:
    """The reductions whose axes are computed at run time and may be empty (their count is unknown): what
    empty_axes_as_every_axis cannot decide."""
    constants, shapes = constant_values(model), static_shapes(model)
    return [node.op_type for node in model.graph.node
            if node.op_type in REDUCTIONS and len(node.input) > 1 and node.input[1] and node.input[1] not in constants
            and not node_attributes(node).get("noop_with_empty_axes", 0)
            and (shapes.get(node.input[1]) is None or shapes[node.input[1]][0] is None)]
