"""Semantics-preserving ONNX graph rewrites that let older or partial importers read rosetta's exports.

Each rewrite takes and returns a ModelProto, changes nothing the ONNX spec would compute differently, and
says which importer needs it. Paths pick the rewrites they need (`rewrite_for_mxnet`, ...), and tests run
the rewritten graph in ONNX Runtime to show it still computes the same function.
"""

from __future__ import annotations

import numpy as np


def _constants(model) -> dict[str, np.ndarray]:
    from onnx import numpy_helper

    values = {init.name: numpy_helper.to_array(init) for init in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "Constant":
            attribute = node.attribute[0]
            if attribute.name == "value":
                values[node.output[0]] = numpy_helper.to_array(attribute.t)
    return values


def remove_dead_nodes(model):
    """Drop nodes whose outputs nothing uses (graph outputs count as used), and unused initializers."""
    needed = {output.name for output in model.graph.output}
    kept = []
    for node in reversed(list(model.graph.node)):
        if any(output in needed for output in node.output):
            kept.append(node)
            needed.update(name for name in node.input if name)
    del model.graph.node[:]
    model.graph.node.extend(reversed(kept))
    unused = [init for init in model.graph.initializer if init.name not in needed]
    for init in unused:
        model.graph.initializer.remove(init)
    return model


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


def drop_default_training_mode(model):
    """BatchNormalization's training_mode=0 attribute (opset 15+) is its default; importers written for
    older opsets (MXNet's) pass every attribute on and fail on this unknown one."""
    for node in model.graph.node:
        if node.op_type == "BatchNormalization":
            for attribute in [a for a in node.attribute if a.name == "training_mode" and a.i == 0]:
                node.attribute.remove(attribute)
    return model


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


def constants_to_initializers(model):
    """Constant nodes become initializers (MXNet's importer has no Constant operator)."""
    from onnx import numpy_helper

    for node in [n for n in model.graph.node if n.op_type == "Constant"]:
        attribute = node.attribute[0]
        if attribute.name != "value":
            continue
        model.graph.initializer.append(numpy_helper.from_array(numpy_helper.to_array(attribute.t), node.output[0]))
        model.graph.node.remove(node)
    return model


def axes_inputs_to_attributes(model):
    """Squeeze/Unsqueeze/Reduce* take `axes` as a constant input since opset 13/18; importers written for
    older opsets (MXNet's) read only the attribute. Moves constant axes back into the attribute."""
    import onnx

    constants = _constants(model)
    for node in model.graph.node:
        if node.op_type in ("Squeeze", "Unsqueeze") or node.op_type.startswith("Reduce"):
            if len(node.input) > 1 and node.input[1] in constants:
                axes = [int(a) for a in np.atleast_1d(constants[node.input[1]])]
                del node.input[1:]
                node.attribute.append(onnx.helper.make_attribute("axes", axes))
    return remove_dead_nodes(model)


def positive_gather_indices(model):
    """Negative constant Gather indices made positive from the static size of the gathered axis. MXNet maps
    Gather to `take`, whose default mode clips -1 to 0: silently the first time step instead of the last."""
    from onnx import numpy_helper, shape_inference

    inferred = shape_inference.infer_shapes(model)
    shapes = {}
    for value in list(inferred.graph.value_info) + list(inferred.graph.input) + list(inferred.graph.output):
        dims = value.type.tensor_type.shape.dim
        shapes[value.name] = [d.dim_value if d.HasField("dim_value") else None for d in dims]
    constants = _constants(model)
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


def initializers_as_inputs(model):
    """List every initializer as a graph input too (the pre-IR-4 convention MXNet's importer expects)."""
    import onnx

    listed = {value.name for value in model.graph.input}
    for init in model.graph.initializer:
        if init.name not in listed:
            model.graph.input.append(onnx.helper.make_tensor_value_info(init.name, init.data_type, list(init.dims)))
    return model


_SAME_SHAPE_OPS = ("Relu", "Identity", "Cast", "BatchNormalization", "Sigmoid", "Tanh", "Dropout", "LeakyRelu")


def constant_reshape_shapes(model):
    """MXNet and the Keras mapper: a Reshape whose target shape is computed at run time from the shape of its
    own input (how tf2onnx writes Keras' Flatten: Shape -> Gather -> Slice -> Concat -> Reshape) gets that
    shape as a constant, with 0 where it keeps an input axis of unknown size (ONNX Reshape copies the input's
    size for 0). Only rewritten when every element is a known size or provably that same input axis."""
    import onnx
    from onnx import numpy_helper

    inferred = onnx.shape_inference.infer_shapes(model)
    static = {}
    for value in list(inferred.graph.value_info) + list(inferred.graph.input) + list(inferred.graph.output):
        if value.type.tensor_type.HasField("shape"):
            static[value.name] = [d.dim_value if d.HasField("dim_value") else None
                                  for d in value.type.tensor_type.shape.dim]
    producers = {output: node for node in model.graph.node for output in node.output}
    constants = _constants(model)
    attributes = lambda node: {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}  # noqa: E731

    def dim(tensor: str, axis: int):
        """The size of `tensor` on `axis`: an int when known, else the (tensor, axis) it is provably equal to."""
        shape = static.get(tensor)
        if shape and axis < len(shape) and shape[axis]:
            return shape[axis]
        node = producers.get(tensor)
        if node is not None and node.op_type == "Transpose":
            return dim(node.input[0], attributes(node)["perm"][axis])
        if node is not None and node.op_type in _SAME_SHAPE_OPS:
            return dim(node.input[0], axis)
        return (tensor, axis)

    def elements(tensor: str):
        """The elements of a small 1-D integer tensor (ints or dim symbols), or None when unknown."""
        if tensor in constants:
            array = constants[tensor]
            return [int(v) for v in array.ravel()] if array.ndim <= 1 else None
        node = producers.get(tensor)
        if node is None:
            return None
        if node.op_type == "Shape" and not node.attribute and static.get(node.input[0]) is not None:
            return [dim(node.input[0], axis) for axis in range(len(static[node.input[0]]))]
        if node.op_type in ("Cast", "Squeeze", "Unsqueeze"):
            return elements(node.input[0])
        if node.op_type == "Gather" and node.input[1] in constants and not attributes(node).get("axis", 0):
            data = elements(node.input[0])
            return None if data is None else [data[int(i)] for i in constants[node.input[1]].ravel()]
        if node.op_type == "Slice" and all(name in constants for name in node.input[1:] if name):
            data = elements(node.input[0])
            starts, ends = (int(constants[name].ravel()[0]) for name in node.input[1:3])
            steps = int(constants[node.input[4]].ravel()[0]) if len(node.input) > 4 and node.input[4] else 1
            return None if data is None else data[starts:ends:steps]
        if node.op_type == "Concat":
            parts = [elements(name) for name in node.input]
            return None if any(p is None for p in parts) else [e for p in parts for e in p]
        return None

    for node in model.graph.node:
        if node.op_type != "Reshape" or node.input[1] in constants or attributes(node).get("allowzero", 0):
            continue
        shape = elements(node.input[1])
        if shape is None:
            continue
        fixed = []
        for axis, element in enumerate(shape):
            if isinstance(element, int):
                fixed.append(element)
            elif element == dim(node.input[0], axis):
                fixed.append(0)
            else:
                break
        if len(fixed) != len(shape):
            continue
        name = f"{node.output[0]}_constant_shape"
        model.graph.initializer.append(numpy_helper.from_array(np.array(fixed, dtype=np.int64), name))
        node.input[1] = name
    return remove_dead_nodes(model)
