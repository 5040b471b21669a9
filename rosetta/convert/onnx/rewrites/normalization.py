"""Normalizations: LayerNormalization (and its statistics), LpNormalization and GroupNormalization in the
primitives importers read."""

from __future__ import annotations

import numpy as np

from rosetta.convert.onnx.rewrites.constants import fold_constant_subgraphs
from rosetta.convert.onnx.rewrites.graph import FLOAT_TYPES, add_initializer, remove_dead_nodes, replace_nodes
from rosetta.convert.onnx.rewrites.registry import rewrite
from rosetta.frameworks.onnx_graph import constant_values, default_opset, element_types, node_attributes, static_shapes


@rewrite
def decompose_layer_normalization(model):
    """MXNet: LayerNormalization (opset 17), which its importer lacks, written as the function the ONNX spec
    defines it by, in primitives the importer reads: over the axes from `axis` on, computed in `stash_type`,
    Y = (X - mean) / sqrt(mean((X - mean)^2) + epsilon) * Scale + B; its optional Mean and InvStdDev outputs
    kept. Left as it is where `axis` >= 0 and the rank of X is unknown."""
    return _decompose_layer_normalizations(model, lambda node: True)


@rewrite
def layer_normalization_statistics_as_primitives(model):
    """onnx2torch and onnx2tf: a LayerNormalization whose Mean or InvStdDev output is read (or is a graph output)
    written out as decompose_layer_normalization does; onnx2torch's nn.LayerNorm returns Y alone, which it then
    hands out for all three (a silent wrong result), onnx2tf fails on the names. The others stay one op (a
    trainable nn.LayerNorm in torch)."""
    used = {name for node in model.graph.node for name in node.input} | {o.name for o in model.graph.output}
    return _decompose_layer_normalizations(model, lambda node: any(name in used for name in node.output[1:] if name))


def _decompose_layer_normalizations(model, chosen):
    from onnx import TensorProto

    shapes, types = static_shapes(model), element_types(model)
    nodes = []
    for node in model.graph.node:
        if node.op_type != "LayerNormalization" or not chosen(node):
            nodes.append(node)
            continue
        axis = node_attributes(node).get("axis", -1)
        rank = len(shapes[node.input[0]]) if node.input[0] in shapes else None
        if axis >= 0 and rank is None:
            nodes.append(node)
            continue
        axes = list(range(axis, 0)) if axis < 0 else list(range(axis, rank))
        primitives, initializers = _layer_normalization_primitives(
            node, axes, types.get(node.input[0], TensorProto.FLOAT), axes_as_input=default_opset(model) >= 18)
        nodes.extend(primitives)
        model.graph.initializer.extend(initializers)
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    return model


def _layer_normalization_primitives(node, axes: list[int], x_type: int, axes_as_input: bool):
    """The nodes and initializers one LayerNormalization is written as (decompose_layer_normalization).
    ReduceMean's keepdims=1 is written out: MXNet's importer passes on only the attributes given, and
    MXNet's default is 0. `axes_as_input`: ReduceMean takes its axes as an input from opset 18."""
    from onnx import TensorProto, helper, numpy_helper

    attributes = node_attributes(node)
    x, scale, bias = (list(node.input) + [""])[:3]
    y, mean_output, inverse_deviation_output = (list(node.output) + ["", ""])[:3]
    stash_type = attributes.get("stash_type", TensorProto.FLOAT)
    epsilon = np.array(attributes.get("epsilon", 1e-5), helper.tensor_dtype_to_np_dtype(stash_type))
    initializers = [numpy_helper.from_array(epsilon, f"{y}_epsilon")]
    if axes_as_input:
        initializers.append(numpy_helper.from_array(np.array(axes, np.int64), f"{y}_axes"))
    nodes = []

    def add(op, inputs, output, **attrs):
        nodes.append(helper.make_node(op, inputs, [output], **attrs))
        return output

    def reduce_mean(tensor, output):
        if axes_as_input:
            return add("ReduceMean", [tensor, f"{y}_axes"], output, keepdims=1)
        return add("ReduceMean", [tensor], output, axes=axes, keepdims=1)

    if x_type != stash_type:
        x = add("Cast", [x], f"{y}_stashed", to=stash_type)
    centred = add("Sub", [x, reduce_mean(x, mean_output or f"{y}_mean")], f"{y}_centred")
    variance = reduce_mean(add("Mul", [centred, centred], f"{y}_squared"), f"{y}_variance")
    deviation = add("Sqrt", [add("Add", [variance, f"{y}_epsilon"], f"{y}_variance_epsilon")], f"{y}_deviation")
    if inverse_deviation_output:
        add("Reciprocal", [deviation], inverse_deviation_output)
    normalised = add("Div", [centred, deviation], f"{y}_normalised")
    if x_type != stash_type:
        normalised = add("Cast", [normalised], f"{y}_normalised_cast", to=x_type)
    if bias:
        add("Add", [add("Mul", [normalised, scale], f"{y}_scaled"), bias], y)
    else:
        add("Mul", [normalised, scale], y)
    return nodes, initializers


@rewrite
def lp_normalization_as_primitives(model):
    """onnx2tf and MXNet's importer: LpNormalization as x / norm, with a norm of 0 taken as 1, as ONNX's reference
    computes it (a vector of zeros stays zeros; both divided by 0 and gave NaN: test_l2normalization_axis_0)."""
    from onnx import helper

    types = element_types(model)
    opset = default_opset(model)

    def replace(node):
        dtype = FLOAT_TYPES.get(types.get(node.input[0] if node.input else ""))
        if node.op_type != "LpNormalization" or dtype is None:
            return None
        attributes = node_attributes(node)
        axis, p = int(attributes.get("axis", -1)), int(attributes.get("p", 2))
        name, x = node.output[0], node.input[0]
        # |x| or x * x summed (onnx2tf's ReduceL1/L2 hand a 1-axis list to tf.norm, which refuses it), then the root
        nodes = [helper.make_node("Abs", [x], [f"{name}_magnitude"]) if p == 1 else
                 helper.make_node("Mul", [x, x], [f"{name}_magnitude"])]
        summed = f"{name}_norm" if p == 1 else f"{name}_sum"
        if opset >= 13:
            add_initializer(model, f"{name}_axes", [axis])
            nodes.append(helper.make_node("ReduceSum", [f"{name}_magnitude", f"{name}_axes"], [summed], keepdims=1))
        else:
            nodes.append(helper.make_node("ReduceSum", [f"{name}_magnitude"], [summed], axes=[axis], keepdims=1))
        if p != 1:
            nodes.append(helper.make_node("Sqrt", [summed], [f"{name}_norm"]))
        for suffix, value in (("zero", 0), ("one", 1)):
            add_initializer(model, f"{name}_{suffix}", value, dtype)
        return [*nodes,
                helper.make_node("Equal", [f"{name}_norm", f"{name}_zero"], [f"{name}_is_zero"]),
                helper.make_node("Where", [f"{name}_is_zero", f"{name}_one", f"{name}_norm"], [f"{name}_divisor"]),
                helper.make_node("Div", [x, f"{name}_divisor"], [name])]

    replace_nodes(model, replace)
    return model


@rewrite
def group_normalization_as_instance_normalization(model):
    """MXNet and onnx2tf (no GroupNormalization): GroupNormalization of an (N, C, ...) tensor of static C and
    spatial sizes, with constant scale and bias, as torch exports nn.GroupNorm: Reshape to (N, G, -1),
    InstanceNormalization with unit scale and zero bias (the statistics of each group), Reshape back, Mul by
    the scale and Add the bias per channel (opset 18 gives them per group: each repeated over its channels)."""
    from onnx import helper

    shapes, constants, opset = static_shapes(model), constant_values(model), default_opset(model)

    def replace(node):
        shape = shapes.get(node.input[0]) if node.op_type == "GroupNormalization" else None
        if shape is None or None in shape[1:] or len(shape) < 3 or any(n not in constants for n in node.input[1:3]):
            return None
        attributes, name = node_attributes(node), node.output[0]
        groups, channels = attributes["num_groups"], shape[1]
        scale, bias = (constants[n].astype(np.float32).ravel() for n in node.input[1:3])
        if scale.size == groups and opset < 21:  # per group before opset 21
            scale, bias = np.repeat(scale, channels // groups), np.repeat(bias, channels // groups)
        per_channel = [channels] + [1] * (len(shape) - 2)
        add_initializer(model, f"{name}_groups", [0, groups, -1])
        add_initializer(model, f"{name}_shape", [0] + list(shape[1:]))
        for suffix, value in (("ones", np.ones(groups)), ("zeros", np.zeros(groups)),
                              ("scale", scale.reshape(per_channel)), ("bias", bias.reshape(per_channel))):
            add_initializer(model, f"{name}_{suffix}", value, np.float32)
        return [helper.make_node("Reshape", [node.input[0], f"{name}_groups"], [f"{name}_grouped"]),
                helper.make_node("InstanceNormalization", [f"{name}_grouped", f"{name}_ones", f"{name}_zeros"],
                                 [f"{name}_normalized"], epsilon=attributes.get("epsilon", 1e-5)),
                helper.make_node("Reshape", [f"{name}_normalized", f"{name}_shape"], [f"{name}_ungrouped"]),
                helper.make_node("Mul", [f"{name}_ungrouped", f"{name}_scale"], [f"{name}_scaled"]),
                helper.make_node("Add", [f"{name}_scaled", f"{name}_bias"], [name])]

    replace_nodes(model, replace)
    return remove_dead_nodes(model)


@rewrite
def batch_normalization_of_constants(model):
    """onnx2torch and MXNet: a BatchNormalization whose every input is a constant (a weight-standardised
    convolution's batch_norm(weight, training=True): timm's and Hugging Face's BiT StdConv2d) becomes the
    initializer it computes (ONNX's reference implementation), where nothing reads its running-statistics outputs,
    and the exact ops after it (fold_constant_subgraphs) too. onnx2torch refuses a BatchNormalization with those
    outputs, MXNet's importer its training_mode attribute."""
    from onnx import numpy_helper

    from rosetta.frameworks.onnx_graph import fold_constants

    nodes = list(model.graph.node)
    read = {name for node in nodes for name in node.input} | {value.name for value in model.graph.output}
    chosen = [index for index, node in enumerate(nodes) if node.op_type == "BatchNormalization"
              and not any(name in read for name in node.output[1:] if name)]
    if not chosen:
        return model
    values = constant_values(model)
    fold_constants(nodes, values, model.opset_import)  # what constants alone compute (the weight's Reshape)
    folded = {index: values[nodes[index].output[0]] for index in chosen if nodes[index].output[0] in values}
    if not folded:
        return model
    for index, value in folded.items():
        model.graph.initializer.append(numpy_helper.from_array(value, nodes[index].output[0]))
    del model.graph.node[:]
    model.graph.node.extend(node for index, node in enumerate(nodes) if index not in folded)
    # and what reads it, where exact (the standardised weight's Reshape back to the Conv's: onnx2torch reads a
    # Conv's weight from an initializer only)
    return fold_constant_subgraphs(remove_dead_nodes(model))
