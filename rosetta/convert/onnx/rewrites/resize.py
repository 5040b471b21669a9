"""Resize and Upsample: sizes as scales, and the resizes importers compute otherwise as Gathers and MatMuls."""

from __future__ import annotations

import numpy as np

from rosetta.convert.onnx.rewrites.graph import FLOAT_TYPES, add_initializer, remove_dead_nodes, replace_nodes
from rosetta.convert.onnx.rewrites.registry import rewrite
from rosetta.frameworks.onnx_graph import (constant_values, default_opset, element_types, node_attributes,
                                           resize_axes, shape_of, shape_tracer, static_shapes, text)


@rewrite
def resize_sizes_as_scales(model):
    """A Resize to `sizes` computed from its own input's shape (torchvision's F.interpolate(x, size=...):
    Concat(Shape(x)[0:2], [H, W])) given as the constant `scales` it means: 1 for the axes whose size it keeps
    (the batch, of unknown size), size / input size for the others, in float32 as ONNX Runtime computes the
    scale of `sizes` (and only where floor(input x scale), in float64, gives the size back: 5/3 in float32 times
    3 is 4.99999988). What then needs no run-time
    shape is written by every target's Resize rewrites; FCN's, DeepLabV3's and FPN's upsampling was CANNOT in
    tensorflow and MXNet ("scales or sizes computed at run time")."""
    if not any(node.op_type == "Resize" and len(node.input) > 3 and node.input[3] for node in model.graph.node):
        return model  # no Resize to sizes: no shape inference
    elements, dim = shape_tracer(model, follow_equal_sizes=True)
    static, constants = static_shapes(model), constant_values(model)
    changed = False
    for node in model.graph.node:
        attributes = node_attributes(node)
        if node.op_type != "Resize" or len(node.input) < 4 or not node.input[3] or "axes" in attributes or \
                text(attributes.get("keep_aspect_ratio_policy", "stretch")) != "stretch":
            continue
        x, sizes, shape = node.input[0], elements(node.input[3]), shape_of(node.input[0], static, constants)
        if sizes is None or shape is None or len(sizes) != len(shape):
            continue
        scales = []
        for axis, (size, have) in enumerate(zip(sizes, shape)):
            if size == dim(x, axis):
                scales.append(np.float32(1.0))
                continue
            if not isinstance(size, int) or not have:
                break
            scale = np.float32(size) / np.float32(have)
            if int(np.floor(float(have) * float(scale))) != size:  # as a runtime computes floor(in x scale)
                break
            scales.append(scale)
        else:
            name = f"{node.input[3]}_as_scales"
            add_initializer(model, name, scales, np.float32)
            node.input[2] = name
            del node.input[3]  # sizes: given as the scales
            changed = True
    return remove_dead_nodes(model) if changed else model


SHAPE_ONLY = ("Cast", "Unsqueeze", "Squeeze", "Identity", "Reshape", "Transpose", "Expand")  # same value, other shape


@rewrite
def resize_of_a_filled_tensor(model):
    """MXNet: a Resize to `sizes` of a tensor of one repeated value (a ConstantOfShape, through ops that change its
    shape or type only: DETR's pixel mask of ones, resized to each feature map) is that value at the new size,
    ConstantOfShape(sizes): resampling a constant gives it back in every mode (the weights of an output sum to
    1), but tf_crop_and_resize's extrapolation. Its sizes read at run time, the Resize was refused (MXNet reads
    the omitted roi and scales by name); ConstantOfShape of a traced shape it builds."""
    from onnx import helper, numpy_helper

    producers = {output: node for node in model.graph.node for output in node.output}

    def filled_value(name: str, depth: int = 0):
        node = producers.get(name)
        if node is None or depth > 8:
            return None
        if node.op_type == "ConstantOfShape":
            value = next((a.t for a in node.attribute if a.name == "value"), None)
            return numpy_helper.to_array(value) if value is not None else np.zeros(1, np.float32)
        if node.op_type not in SHAPE_ONLY:
            return None
        value = filled_value(node.input[0], depth + 1)
        if value is None or node.op_type != "Cast":
            return value
        return value.astype(helper.tensor_dtype_to_np_dtype(node_attributes(node)["to"]))

    def replace(node):
        attributes = node_attributes(node)
        if node.op_type != "Resize" or len(node.input) < 4 or not node.input[3] or "axes" in attributes or \
                text(attributes.get("keep_aspect_ratio_policy", "stretch")) != "stretch" or \
                text(attributes.get("coordinate_transformation_mode", "")) == "tf_crop_and_resize":
            return None
        value = filled_value(node.input[0])
        if value is None:
            return None
        return [helper.make_node("ConstantOfShape", [node.input[3]], list(node.output), name=node.name,
                                 value=numpy_helper.from_array(np.asarray(value).reshape(1)))]

    replace_nodes(model, replace)
    return remove_dead_nodes(model)


def _resize_plans(model):
    """(node -> its resize_axes plans, or None where the Resize cannot be known when converting; the element
    types; the static shapes) of a model."""
    shapes, constants, types, opset = static_shapes(model), constant_values(model), element_types(model), \
        default_opset(model)
    shapes.update({name: list(value.shape) for name, value in constants.items() if name not in shapes})

    def plans(node):  # a constant's resize too (DINOv2's position embeddings, resized to sizes made constant)
        dtype = FLOAT_TYPES.get(types.get(node.input[0] if node.input else ""))
        shape = shapes.get(node.input[0]) if node.op_type in ("Resize", "Upsample") else None
        return resize_axes(node, shape, constants, opset) if shape is not None and dtype is not None else None
    return plans, types, shapes


def resize_plans(model):
    """node -> its resize_axes plans (None where the Resize cannot be known when converting)."""
    return _resize_plans(model)[0]


def resize_is_upsampling(node, plans) -> bool:
    """Whether a Resize scales its axes up by integer factors, nearest that repeats each input (output i reads
    input i // factor) or linear: U-Net's, a feature pyramid's upsampling, which onnx2tf makes an UpSampling or
    resize layer of and gets right in real models."""
    if plans is None:
        return False
    if text(node_attributes(node).get("mode", "nearest")) == "linear":
        return all(plan.matrix is not None and plan.matrix.shape[1] % plan.matrix.shape[0] == 0 for plan in plans)
    return all(plan.indices is not None and len(plan.indices) % (plan.indices.max() + 1) == 0
               and np.array_equal(plan.indices, np.arange(len(plan.indices)) //
                                  (len(plan.indices) // (plan.indices.max() + 1))) for plan in plans)


@rewrite
def resize_as_gathers_and_matmuls(model):
    """MXNet, onnx2torch, onnx2tf: Resize and Upsample of a float tensor whose resized axes have static sizes
    and whose scales or sizes are constants, written axis by axis as what ONNX's reference Resize computes on
    them (onnx_graph.resize_axes): a Gather by constant indices where each output copies one input (nearest),
    else a MatMul by the constant interpolation matrix between Transposes that bring that axis last (linear,
    cubic, antialias, with an Add of tf_crop_and_resize's extrapolation). MXNet's importer has no opset-11+
    Resize, onnx2torch none from opset 18 and an opset-11/13 one that only warns on the modes torch computes
    otherwise, onnx2tf gets 29 of the suite's Resize cases wrong; all of them read Gather, MatMul, Transpose."""
    return _resize_as_gathers_and_matmuls(model, keep=lambda node, plans: False)


@rewrite
def resize_except_upsampling_as_gathers_and_matmuls(model):
    """onnx2tf: resize_as_gathers_and_matmuls, except the upsampling by integer factors real models use
    (resize_is_upsampling), which onnx2tf gets right there: its layout inference took a U-Net apart where that
    Resize was written as Gathers or MatMuls."""
    return _resize_as_gathers_and_matmuls(model, keep=resize_is_upsampling)


def _resize_as_gathers_and_matmuls(model, keep):
    from onnx import helper, numpy_helper

    plans_of, types, shapes = _resize_plans(model)

    def replace(node):
        plans = plans_of(node)
        if plans is None or keep(node, plans):
            return None
        dtype = FLOAT_TYPES[types[node.input[0]]]
        nodes, current, rank, name = [], node.input[0], len(shapes[node.input[0]]), node.output[0]
        for step, plan in enumerate(plans):
            out = name if step == len(plans) - 1 else f"{name}_axis{plan.axis}"
            prefix = f"{name}_axis{plan.axis}"
            if plan.indices is not None:
                model.graph.initializer.append(numpy_helper.from_array(plan.indices, f"{prefix}_indices"))
                nodes.append(helper.make_node("Gather", [current, f"{prefix}_indices"], [out], axis=plan.axis))
            else:
                model.graph.initializer.append(numpy_helper.from_array(plan.matrix.astype(dtype), f"{prefix}_matrix"))
                perm = [a for a in range(rank) if a != plan.axis] + [plan.axis]
                moved = current
                if plan.axis != rank - 1:
                    moved = f"{prefix}_last"
                    nodes.append(helper.make_node("Transpose", [current], [moved], perm=perm))
                product = f"{prefix}_product" if plan.offset is not None or plan.axis != rank - 1 else out
                nodes.append(helper.make_node("MatMul", [moved, f"{prefix}_matrix"], [product]))
                if plan.offset is not None:
                    model.graph.initializer.append(numpy_helper.from_array(plan.offset.astype(dtype), f"{prefix}_offset"))
                    shifted = out if plan.axis == rank - 1 else f"{prefix}_shifted"
                    nodes.append(helper.make_node("Add", [product, f"{prefix}_offset"], [shifted]))
                    product = shifted
                if plan.axis != rank - 1:
                    nodes.append(helper.make_node("Transpose", [product], [out], perm=list(np.argsort(perm))))
            current = out
        return nodes or [helper.make_node("Identity", [node.input[0]], [name])]

    replace_nodes(model, replace)
    return remove_dead_nodes(model)
