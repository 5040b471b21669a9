"""The graph as a whole: dead nodes, identities of initializers, graph inputs, node names, opsets, and the helpers the
other families share (`remove_dead_nodes`, `replace_nodes`, `add_initializer`)."""

from __future__ import annotations

import numpy as np

from rosetta.convert.onnx.rewrites.registry import rewrite
from rosetta.frameworks.onnx_graph import default_opset


@rewrite
def remove_dead_nodes(model):
    """Drop nodes whose outputs nothing uses (graph outputs count as used, and what a kept node's subgraphs read
    from the graph: SAM2's Hiera reads a Sub's output only inside an If's branch), and unused initializers."""
    from rosetta.frameworks.onnx_graph import outer_names_read

    needed = {output.name for output in model.graph.output}
    kept = []
    for node in reversed(list(model.graph.node)):
        if any(output in needed for output in node.output):
            kept.append(node)
            needed.update(name for name in node.input if name)
            needed.update(outer_names_read(node))
    del model.graph.node[:]
    model.graph.node.extend(reversed(kept))
    unused = [init for init in model.graph.initializer if init.name not in needed]
    for init in unused:
        model.graph.initializer.remove(init)
    return model


@rewrite
def drop_default_training_mode(model):
    """BatchNormalization's training_mode=0 attribute (opset 15+) is its default; importers written for
    older opsets (MXNet's) pass every attribute on and fail on this unknown one."""
    for node in model.graph.node:
        if node.op_type == "BatchNormalization":
            for attribute in [a for a in node.attribute if a.name == "training_mode" and a.i == 0]:
                node.attribute.remove(attribute)
    return model


@rewrite
def bypass_identity_of_initializers(model):
    """MXNet: Identity nodes that copy an initializer (torch.onnx emits them for weights used twice, e.g. a
    BatchNorm's) are bypassed: readers take the initializer itself, which MXNet needs as a Variable
    ("Mutation target can only be Variable")."""
    initializers = {init.name for init in model.graph.initializer}
    outputs = {output.name for output in model.graph.output}
    alias = {node.output[0]: node.input[0] for node in model.graph.node
             if node.op_type == "Identity" and node.input[0] in initializers and node.output[0] not in outputs}
    if not alias:
        return model
    kept = [node for node in model.graph.node if not (node.op_type == "Identity" and node.output[0] in alias)]
    for node in kept:
        for index, name in enumerate(node.input):
            if name in alias:
                node.input[index] = alias[name]
    del model.graph.node[:]
    model.graph.node.extend(kept)
    return model


@rewrite
def identity_of_initializers_as_initializers(model):
    """onnx2torch (its Conv and Gemm look their weight and bias up among the initializers: "KeyError:
    'stages.0.blocks.1.mlp.fc1.bias'"): an Identity that copies an initializer becomes an initializer of its own,
    the same data under the Identity's output name. torch.onnx merges initializers of equal values (two zero
    biases, as timm and transformers initialise them) and feeds every reader after the first through such an
    Identity. An Identity of such an Identity is done too (nodes are in order); one whose output is a graph output,
    or whose input is also a graph input (an initializer a caller may override), is left alone."""
    initializers = {init.name: init for init in model.graph.initializer}
    overridable = {value.name for value in model.graph.input}
    outputs = {output.name for output in model.graph.output}
    kept = []
    for node in model.graph.node:
        source = initializers.get(node.input[0]) if node.op_type == "Identity" and node.input else None
        if source is None or node.domain not in ("", "ai.onnx") or source.name in overridable \
                or node.output[0] in outputs:
            kept.append(node)
            continue
        copy = model.graph.initializer.add()
        copy.CopyFrom(source)
        copy.name = node.output[0]
        initializers[copy.name] = copy
    if len(kept) == len(model.graph.node):
        return model
    del model.graph.node[:]
    model.graph.node.extend(kept)
    return model


# the inputs onnx2torch reads among the initializers only: weights and biases, and Clip's bounds
WEIGHT_INPUTS = {"Conv": (1, 2), "ConvTranspose": (1, 2), "Gemm": (1, 2), "Clip": (1, 2)}


@rewrite
def constant_weights_as_initializers(model):
    """onnx2torch (its Conv, ConvTranspose and Gemm look their weight and bias up among the initializers:
    "KeyError: '/module/.../Constant_16_output_0'"; its Clip takes a bound that is no initializer for one computed
    at run time: "Dynamic value of min/max is not implemented", timm's SwinV2-CR): a Constant node that only gives
    such inputs becomes an initializer of the same name. The TorchScript exporter writes a constant made in a
    symbolic (rosetta's fold as a ConvTranspose: timm's VOLO) as a Constant node, not an initializer."""
    from onnx import numpy_helper

    readers: dict[str, list] = {}
    for node in model.graph.node:
        for index, name in enumerate(node.input):
            readers.setdefault(name, []).append((node.op_type, index))
    outputs = {output.name for output in model.graph.output}
    moved = []
    for node in model.graph.node:
        if node.op_type != "Constant" or node.domain not in ("", "ai.onnx") or len(node.attribute) != 1 or \
                node.attribute[0].name != "value" or node.output[0] in outputs:
            continue
        uses = readers.get(node.output[0], [])
        if uses and all(index in WEIGHT_INPUTS.get(op, ()) for op, index in uses):
            model.graph.initializer.append(numpy_helper.from_array(numpy_helper.to_array(node.attribute[0].t),
                                                                   node.output[0]))
            moved.append(node)
    for node in moved:
        model.graph.node.remove(node)
    return model


OLDEST_OPSET_KEPT, UPGRADED_OPSET = 11, 13


@rewrite
def old_opsets_upgraded(model):
    """onnx2tf: a model below opset 11 (torch.onnx's of 2018; ONNX's pytorch-converted tests are opset 6)
    brought to opset 13 by ONNX's version converter, which rewrites each op by its schema's adapters. onnx2tf
    reads several ops by their later schema only (Pad-2's `value` was ignored: ConstantPad2d FAILed by the pad
    value), and ONNX Runtime runs no AveragePool-1. Left as it is where the version converter cannot convert it."""
    from onnx import version_converter

    if not any(o.domain in ("", "ai.onnx") for o in model.opset_import) or default_opset(model) >= OLDEST_OPSET_KEPT:
        return model
    try:
        return version_converter.convert_version(model, UPGRADED_OPSET)
    except Exception:  # noqa: BLE001 - an op without an adapter, or a graph the converter cannot read
        return model


@rewrite
def initializers_as_inputs(model):
    """List every initializer as a graph input too (the pre-IR-4 convention MXNet's importer expects)."""
    import onnx

    listed = {value.name for value in model.graph.input}
    for init in model.graph.initializer:
        if init.name not in listed:
            model.graph.input.append(onnx.helper.make_tensor_value_info(init.name, init.data_type, list(init.dims)))
    return model


_SCOPE_NAME = r"^[A-Za-z0-9.][A-Za-z0-9_.\\/>-]*$"  # TensorFlow's root scope names


@rewrite
def scope_safe_node_names(model):
    """onnx2tf names TensorFlow's ops and variables after the ONNX nodes, and TensorFlow refuses a root scope name
    that starts with "/" ("'/stages/stages.0/blocks/blocks.0/conv_dw/Conv/kernel' is not a valid root scope
    name": torch.onnx's names of grouped convolutions, timm's ConvNeXt, RegNet, ResNeSt): node names, which
    compute nothing, are made valid and kept unique; tensor names are unchanged."""
    import re

    taken: set[str] = set()
    for index, node in enumerate(model.graph.node):
        name = node.name
        if not re.match(_SCOPE_NAME, name):
            name = re.sub(r"[^A-Za-z0-9_.\\/>-]", "_", name).lstrip("/") or f"node_{index}"
            name = name if re.match(r"^[A-Za-z0-9.]", name) else f"n{name}"
        base, suffix = name, 1
        while name in taken:
            name, suffix = f"{base}_{suffix}", suffix + 1
        taken.add(name)
        node.name = name
    return model


FLOAT_TYPES = {1: np.float32, 10: np.float16, 11: np.float64}  # onnx.TensorProto FLOAT, FLOAT16, DOUBLE


def add_initializer(model, name: str, values, dtype=np.int64) -> str:
    """`values` as an initializer named `name` (int64 unless said: the axes, shapes, starts and repeats that the
    rewrites' new nodes read); returns the name, for a node's inputs."""
    from onnx import numpy_helper

    model.graph.initializer.append(numpy_helper.from_array(np.asarray(values, dtype), name))
    return name


def replace_nodes(model, replace) -> None:
    """Each node through `replace(node) -> [nodes] or None` (None: kept as it is)."""
    nodes = []
    for node in model.graph.node:
        replacement = replace(node)
        nodes.extend([node] if replacement is None else replacement)
    del model.graph.node[:]
    model.graph.node.extend(nodes)


@rewrite
def unnamed_batch_of_5d_inputs(model):
    """onnx2tf: a 5-D graph input (a video clip, a volume) whose batch axis is named ("N") gets it unnamed (of
    unknown size all the same): onnx2tf passes that name to Keras as the batch size of its 5-D inputs, which fails
    ("not all arguments converted during string formatting"); it reads an unnamed axis as unknown."""
    for value in model.graph.input:
        dims = value.type.tensor_type.shape.dim
        if len(dims) == 5 and dims[0].HasField("dim_param"):
            dims[0].ClearField("dim_param")
    return model
