"""Convolutions and pooling: auto_pad as explicit pads, a ConvTranspose that is a DepthToSpace."""

from __future__ import annotations

import numpy as np

from rosetta.convert.onnx.rewrites.graph import add_initializer, remove_dead_nodes
from rosetta.convert.onnx.rewrites.registry import rewrite
from rosetta.frameworks.onnx_graph import constant_values, node_attributes, static_shapes, text


@rewrite
def conv_transpose_as_depth_to_space(model):
    """onnx2tf: a 2-D ConvTranspose whose kernel equals its stride (no overlap: U-Net's 2x2, stride-2
    upsampling), without padding, dilation or groups, written as a 1x1 Conv to s*s*C_out channels and
    DepthToSpace(DCR): output pixel (s*h + a, s*w + b) of channel o is the same sum over input channels, of
    W[:, o, a, b]. onnx2tf gives conv2d_transpose the ONNX output shape, whose symbolic batch size TF refuses."""
    from onnx import helper, numpy_helper

    constants = {init.name: numpy_helper.to_array(init) for init in model.graph.initializer}
    nodes = []
    for node in model.graph.node:
        attributes = node_attributes(node)
        weight = constants.get(node.input[1]) if node.op_type == "ConvTranspose" else None
        has_bias = len(node.input) > 2 and bool(node.input[2])
        bias = constants.get(node.input[2]) if has_bias else None
        stride = weight.shape[2] if weight is not None and weight.ndim == 4 else None
        if (stride is None or (has_bias and bias is None) or weight.shape[3] != stride
                or list(attributes.get("strides", [1, 1])) != [stride, stride]
                or any(attributes.get("pads", [0])) or any(attributes.get("output_padding", [0]))
                or any(d != 1 for d in attributes.get("dilations", [1])) or attributes.get("group", 1) != 1
                or "output_shape" in attributes or attributes.get("auto_pad", b"NOTSET") not in (b"NOTSET", b"VALID")):
            nodes.append(node)
            continue
        channels_in, channels_out = weight.shape[:2]
        name = node.output[0]
        kernel = weight.transpose(2, 3, 1, 0).reshape(stride * stride * channels_out, channels_in, 1, 1)
        model.graph.initializer.append(numpy_helper.from_array(np.ascontiguousarray(kernel), f"{name}_pointwise_weight"))
        inputs = [node.input[0], f"{name}_pointwise_weight"]
        if has_bias:
            model.graph.initializer.append(numpy_helper.from_array(np.tile(bias, stride * stride), f"{name}_pointwise_bias"))
            inputs.append(f"{name}_pointwise_bias")
        nodes.append(helper.make_node("Conv", inputs, [f"{name}_pointwise"], kernel_shape=[1, 1]))
        nodes.append(helper.make_node("DepthToSpace", [f"{name}_pointwise"], [name], blocksize=int(stride), mode="DCR"))
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    return remove_dead_nodes(model)


_POOLS = ("Conv", "MaxPool", "AveragePool", "LpPool")


@rewrite
def explicit_pads(model):
    """MXNet (which ignores auto_pad: a silently smaller output), onnx2tf (no SAME_LOWER), onnx2torch (no SAME_*)
    and the Keras mapper: Conv and pooling with auto_pad SAME_UPPER, SAME_LOWER or VALID get the pads that mean,
    from the static spatial sizes of the input: the total a window needs to give ceil(size / stride) outputs, its
    odd element at the end (SAME_UPPER) or the start (SAME_LOWER)."""
    from onnx import helper

    shapes, constants = static_shapes(model), constant_values(model)
    for node in model.graph.node:
        attributes = node_attributes(node)
        mode = text(attributes.get("auto_pad", "NOTSET"))
        shape = shapes.get(node.input[0]) if node.op_type in _POOLS else None
        if mode == "NOTSET" or shape is None or None in shape[2:]:
            continue
        spatial = len(shape) - 2
        if node.op_type == "Conv":
            if node.input[1] not in constants and None in (shapes.get(node.input[1]) or [None]):
                continue
            kernel = list(attributes.get("kernel_shape") or (constants[node.input[1]].shape if node.input[1] in constants
                                                              else shapes[node.input[1]])[2:])
        else:
            kernel = list(attributes["kernel_shape"])
        strides = list(attributes.get("strides", [1] * spatial))
        dilations = list(attributes.get("dilations", [1] * spatial))
        begins, ends = [0] * spatial, [0] * spatial
        if mode != "VALID":
            for axis, (size, k, stride, dilation) in enumerate(zip(shape[2:], kernel, strides, dilations)):
                total = max((-(-size // stride) - 1) * stride + (k - 1) * dilation + 1 - size, 0)
                small, large = total // 2, total - total // 2
                begins[axis], ends[axis] = (small, large) if mode == "SAME_UPPER" else (large, small)
        for attribute in [a for a in node.attribute if a.name in ("auto_pad", "pads")]:
            node.attribute.remove(attribute)
        node.attribute.append(helper.make_attribute("pads", begins + ends))
    return model


@rewrite
def counted_pads_as_pad(model):
    """onnx2tf: an AveragePool that counts its pads (count_include_pad=1) averages over the real elements alone
    where the map is smaller than the window (timm's Inception-v3 at a 96-pixel input: a 3x3 pool, pad 1, on
    1x1 maps gives 9x the mean, measured): the pads as a zero Pad before it and the pool without pads, which is
    the same average (every window then holds kernel-size elements, zeros counted). A pool with ceil_mode, whose
    last window may reach past the pads, is left as it is, as is a model below opset 11 (Pad's pads an attribute)."""
    from onnx import helper

    if next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0) < 11:
        return model
    nodes = []
    for node in model.graph.node:
        attributes = node_attributes(node)
        pads = list(attributes.get("pads", []))
        if (node.op_type != "AveragePool" or not attributes.get("count_include_pad", 0) or not any(pads)
                or attributes.get("ceil_mode", 0) or text(attributes.get("auto_pad", "NOTSET")) != "NOTSET"):
            nodes.append(node)
            continue
        spatial, name = len(pads) // 2, node.output[0]
        add_initializer(model, f"{name}_counted_pads", [0, 0, *pads[:spatial], 0, 0, *pads[spatial:]])
        nodes.append(helper.make_node("Pad", [node.input[0], f"{name}_counted_pads"], [f"{name}_padded"],
                                      mode="constant"))
        for attribute in [a for a in node.attribute if a.name in ("pads", "count_include_pad")]:
            node.attribute.remove(attribute)
        node.input[0] = f"{name}_padded"
        nodes.append(node)
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    return model
