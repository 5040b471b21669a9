"""Resize and Upsample: sizes as scales, and the resizes importers compute otherwise as Gathers and MatMuls."""

from __future__ import annotations

import numpy as np

from rosetta.convert.onnx.rewrites.graph import FLOAT_TYPES, remove_dead_nodes, replace_nodes
from rosetta.convert.onnx.rewrites.registry import rewrite
from rosetta.frameworks.onnx_graph import (constant_values, default_opset, element_types, node_attributes,
                                           resize_axes, shape_tracer, static_shapes, text)


@rewrite
def resize_sizes_as_scales(model):
    """A Resize to `sizes` computed from its own input's shape (torchvision's F.interpolate(x, size=...):
    Concat(Shape(x)[0:2], [H, W])) given as the constant `scales` it means: 1 for the axes whose size it keeps
    (the batch, of unknown size), size / input size for the others, in float32 as ONNX Runtime computes the
    scale of `sizes` (and only where floor(input x scale), in float64, gives the size back: 5/3 in float32 times
    3 is 4.99999988). What then needs no run-time
    shape is written by every target's Resize rewrites; FCN's, DeepLabV3's and FPN's upsampling was CANNOT in
    tensorflow and MXNet ("scales or sizes computed at run time")."""
    from onnx import numpy_helper

    if not any(node.op_type == "Resize" and len(node.input) > 3 and node.input[3] for node in model.graph.node):
        return model  # no Resize to sizes: no shape inference
    elements, dim = shape_tracer(model, follow_equal_sizes=True)
    static = static_shapes(model)
    changed = False
    for node in model.graph.node:
        attributes = node_attributes(node)
        if node.op_type != "Resize" or len(node.input) < 4 or not node.input[3] or "axes" in attributes or \
                text(attributes.get("keep_aspect_ratio_policy", "stretch")) != "stretch":
            continue
        x, sizes, shape = node.input[0], elements(node.input[3]), static.get(node.input[0])
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
            model.graph.initializer.append(numpy_helper.from_array(np.array(scales, np.float32), name))
            node.input[2] = name
            del node.input[3]  # sizes: given as the scales
            changed = True
    return remove_dead_nodes(model) if changed else model


def _resize_plans(model):
    """(node -> its resize_axes plans, or None where the Resize cannot be known when converting; the element
    types; the static shapes) of a model."""
    shapes, constants, types, opset = static_shapes(model), constant_values(model), element_types(model), \
        default_opset(model)

    def plans(node):
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
