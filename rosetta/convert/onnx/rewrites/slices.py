"""Indices and slices: negative Gather indices, Slice bounds within the axis, OneHot indices out of range."""

from __future__ import annotations

import numpy as np

from rosetta.convert.onnx.rewrites.graph import add_initializer, remove_dead_nodes, replace_nodes
from rosetta.convert.onnx.rewrites.registry import rewrite
from rosetta.frameworks.onnx_graph import (constant_values, default_opset, element_types, node_attributes, onnx_slice,
                                           shape_of, static_shapes)


@rewrite
def positive_gather_indices(model):
    """Negative constant Gather indices made positive from the static size of the gathered axis. MXNet maps
    Gather to `take`, whose default mode clips -1 to 0: silently the first time step instead of the last."""
    from onnx import numpy_helper

    shapes = static_shapes(model)
    constants = constant_values(model)
    for node in model.graph.node:
        if node.op_type != "Gather" or node.input[1] not in constants:
            continue
        indices = constants[node.input[1]]
        if not np.any(indices < 0):
            continue
        axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
        size = (shapes.get(node.input[0]) or [None] * (axis + 1))[axis]
        if size is None:
            continue  # dynamic size: leave it, the verification will show what the importer makes of it
        fixed_name = f"{node.input[1]}_positive"
        model.graph.initializer.append(numpy_helper.from_array(np.where(indices < 0, indices + size, indices), fixed_name))
        node.input[1] = fixed_name
    return remove_dead_nodes(model)


SLICE_BOUND = 2**30  # beyond any real axis; an int32 (MXNet's slice) that float32 holds exactly (its importer)


def _clamped_slice_index(value: int, size: int, step: int, is_end: bool) -> int:
    """The index ONNX's Slice clamps a start or end to on an axis of `size` (onnx_slice); -size-1 (which ONNX
    clamps to -1) for the end of a backward slice that runs through the first element."""
    picked = onnx_slice(0, value, step, size) if is_end else onnx_slice(value, 0, step, size)
    if not is_end:
        return picked.start
    return -size - 1 if picked.stop is None else picked.stop


def _bounded_slice_index(value: int, step: int, is_end: bool) -> int:
    """A start or end on an axis of unknown size, within +-SLICE_BOUND; a forward slice from before the
    first element starts at 0 (MXNet's slice refuses a start before the first element)."""
    value = min(max(value, -SLICE_BOUND), SLICE_BOUND)
    return 0 if step > 0 and not is_end and value == -SLICE_BOUND else value


@rewrite
def bounded_slices(model):
    """MXNet: the constant starts and ends of Slice brought within the axis, so that the Slice converter of
    to_mxnet can pass them to MXNet's `slice` as int32: "to the end" is INT64_MAX. Each becomes the index
    ONNX clamps it to where the axis' size is static, else a value within +-SLICE_BOUND; negative axes
    become positive where the rank is known. Every parameter is written out, steps included."""
    shapes, constants = static_shapes(model), constant_values(model)
    for node in model.graph.node:
        parameters = list(node.input) + [""] * (5 - len(node.input))
        if node.op_type != "Slice" or len(node.input) < 3:  # before opset 10 its parameters were attributes
            continue
        if not all(name in constants for name in parameters[1:] if name):
            continue
        starts, ends = (constants[name].astype(np.int64).ravel() for name in parameters[1:3])
        axes = constants[parameters[3]].astype(np.int64).ravel() if parameters[3] else np.arange(len(starts))
        steps = constants[parameters[4]].astype(np.int64).ravel() if parameters[4] else np.ones(len(starts), np.int64)
        shape = shapes.get(node.input[0])
        if shape is not None:
            axes = np.where(axes < 0, axes + len(shape), axes)
        for index, (axis, step) in enumerate(zip(axes, steps)):
            size = shape[axis] if shape is not None else None
            for bounds, is_end in ((starts, False), (ends, True)):
                bounds[index] = (_bounded_slice_index(bounds[index], step, is_end) if size is None
                                 else _clamped_slice_index(bounds[index], size, step, is_end))
        for position, (role, values) in enumerate(zip(("starts", "ends", "axes", "steps"), (starts, ends, axes, steps)), 1):
            parameters[position] = f"{node.output[0]}_{role}"
            add_initializer(model, parameters[position], values)
        del node.input[:]
        node.input.extend(parameters)
    return remove_dead_nodes(model)


@rewrite
def one_hot_out_of_range_as_off(model):
    """onnx2tf (which wraps every index into the depth, as Python's modulo: an index of 5 in a depth of 5 became
    hot at 0, test_onehot_out_of_range_indices FAILed): OneHot's rows of indices outside [-depth, depth), which
    ONNX leaves all off, made the off value after it: Where(in range, along the one-hot axis, OneHot, off)."""
    from onnx import helper

    types, shapes, opset = element_types(model), static_shapes(model), default_opset(model)

    def replace(node):
        if node.op_type != "OneHot" or node.input[0] not in types or shapes.get(node.input[0]) is None or opset < 13:
            return None
        indices, depth, values, name = node.input[0], node.input[1], node.input[2], node.output[0]
        rank = len(shapes[indices]) + 1
        axis = int(node_attributes(node).get("axis", -1)) % rank
        add_initializer(model, f"{name}_axis", [axis])
        add_initializer(model, f"{name}_off_index", 0)
        one_hot = helper.make_node("OneHot", list(node.input), [f"{name}_hot"], name=node.name)
        one_hot.attribute.extend(node.attribute)
        return [one_hot,
                helper.make_node("Cast", [depth], [f"{name}_depth"], to=types[indices]),
                helper.make_node("Neg", [f"{name}_depth"], [f"{name}_low"]),
                helper.make_node("Less", [indices, f"{name}_low"], [f"{name}_below"]),
                helper.make_node("Less", [indices, f"{name}_depth"], [f"{name}_under"]),
                helper.make_node("Not", [f"{name}_below"], [f"{name}_above_low"]),
                helper.make_node("And", [f"{name}_above_low", f"{name}_under"], [f"{name}_in_range"]),
                helper.make_node("Unsqueeze", [f"{name}_in_range", f"{name}_axis"], [f"{name}_rows"]),
                helper.make_node("Gather", [values, f"{name}_off_index"], [f"{name}_off"]),
                helper.make_node("Where", [f"{name}_rows", f"{name}_hot", f"{name}_off"], [name])]

    replace_nodes(model, replace)
    return model


@rewrite
def gather_elements_of_a_vector(model):
    """MXNet (no GatherElements): GatherElements of a constant that varies along the gathered axis only (of size
    1 on every other), or of such a constant expanded (RoBERTa-style position ids: a buffer of positions
    expanded to the batch, gathered by each token's position), is a Gather of that constant as a vector: each
    output element is the constant at its index. A negative index counts from the end in both."""
    from onnx import helper, numpy_helper

    constants = constant_values(model)
    producers = {output: node for node in model.graph.node for output in node.output}

    def replace(node):
        if node.op_type != "GatherElements":
            return None
        data = node.input[0]
        if data not in constants and data in producers and producers[data].op_type == "Expand":
            data = producers[data].input[0]
        value = constants.get(data)
        if value is None or value.ndim == 0:
            return None
        axis = node_attributes(node).get("axis", 0) % value.ndim
        if any(size != 1 for a, size in enumerate(value.shape) if a != axis):
            return None
        vector = f"{node.output[0]}_vector"
        model.graph.initializer.append(numpy_helper.from_array(value.reshape(-1), vector))
        return [helper.make_node("Gather", [vector, node.input[1]], list(node.output), name=node.name, axis=0)]

    replace_nodes(model, replace)
    return remove_dead_nodes(model)


@rewrite
def gather_nd_as_gather(model):
    """MXNet (no GatherND): GatherND (batch_dims 0) of data whose sizes after its first axis are static, as a
    Gather of data with the k indexed axes flattened into one, by each index's flat position (the sum of its k
    parts times the axes' strides, each part a Gather along the indices' last axis, a negative one counted from
    the end of its axis where that size is static): the dynamo exporter's advanced indexing (x[rows, columns])."""
    from onnx import helper

    shapes, constants = static_shapes(model), constant_values(model)

    def replace(node):
        if node.op_type != "GatherND" or node_attributes(node).get("batch_dims", 0):
            return None
        data, indices = (shape_of(name, shapes, constants) for name in node.input[:2])
        if not data or not indices or indices[-1] is None or any(size is None for size in data[1:]):
            return None
        k, out, nodes = int(indices[-1]), node.output[0], []
        add_initializer(model, f"{out}_flat_shape", [-1] + data[k:])
        nodes.append(helper.make_node("Reshape", [node.input[0], f"{out}_flat_shape"], [f"{out}_flat"]))
        position = None
        for axis in range(k):
            stride = int(np.prod(data[axis + 1:k], dtype=np.int64))
            add_initializer(model, f"{out}_axis{axis}", axis)
            add_initializer(model, f"{out}_stride{axis}", stride)
            part = f"{out}_part{axis}"
            nodes.append(helper.make_node("Gather", [node.input[1], f"{out}_axis{axis}"], [part], axis=-1))
            if data[axis] is not None:  # a negative index counts from the end of its axis
                add_initializer(model, f"{out}_size{axis}", data[axis])
                add_initializer(model, f"{out}_zero{axis}", 0)
                nodes += [helper.make_node("Less", [part, f"{out}_zero{axis}"], [f"{part}_negative"]),
                          helper.make_node("Add", [part, f"{out}_size{axis}"], [f"{part}_wrapped"]),
                          helper.make_node("Where", [f"{part}_negative", f"{part}_wrapped", part], [f"{part}_index"])]
                part = f"{part}_index"
            nodes.append(helper.make_node("Mul", [part, f"{out}_stride{axis}"], [f"{out}_term{axis}"]))
            if position is not None:
                nodes.append(helper.make_node("Add", [position, f"{out}_term{axis}"], [f"{out}_position{axis}"]))
            position = f"{out}_term{axis}" if position is None else f"{out}_position{axis}"
        nodes.append(helper.make_node("Gather", [f"{out}_flat", position], [out], name=node.name, axis=0))
        return nodes

    replace_nodes(model, replace)
    return remove_dead_nodes(model)
