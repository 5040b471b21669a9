"""The walk over an ONNX graph that builds the Keras model: it knows no op. Constants are folded, the
exporters' multi-node patterns fused (patterns.py), every node's converter looked up by op type and the
model's opset (registry.py), and each node either evaluated at conversion time (its inputs are shapes
holding the batch size: symbolic.py) or handed to its converter, which adds Keras layers."""

from __future__ import annotations

import numpy as np

from rosetta.convert.onnx.to_keras.context import BatchDim, Filled, Mapped, MappingContext
from rosetta.convert.onnx.to_keras.layout import add, identity, materialize
from rosetta.convert.onnx.to_keras.patterns import fuse_patterns
from rosetta.convert.onnx.to_keras.registry import FUSED, converter_for
from rosetta.convert.onnx.to_keras.symbolic import evaluate_symbolic
from rosetta.errors import RosettaError
from rosetta.frameworks.onnx_graph import fold_constants, node_attributes, opset_versions


def _op_name(node) -> str:
    return node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}:{node.op_type}"


def _converter(context: MappingContext, node):
    return converter_for(node.domain, node.op_type, 1 if node.domain == FUSED else context.opset)


def build(context: MappingContext):
    """The Keras model of `context.model`, every tensor it computes recorded in `context.values`."""
    import onnx
    from onnx import numpy_helper

    keras, model = context.keras, context.model
    inferred = onnx.shape_inference.infer_shapes(model)
    for value in list(inferred.graph.value_info) + list(inferred.graph.input) + list(inferred.graph.output):
        dims = value.type.tensor_type.shape.dim
        context.shapes[value.name] = [d.dim_value if d.HasField("dim_value") else None for d in dims]
    context.constants = {init.name: numpy_helper.to_array(init) for init in model.graph.initializer}
    context.opsets = opset_versions(model)
    nodes = fold_constants(list(model.graph.node), context.constants, context.opsets)
    nodes = fuse_patterns(nodes, context.constants, context.shapes, {value.name for value in model.graph.output},
                          context.fused_from)
    unsupported = sorted({_op_name(node) for node in nodes if _converter(context, node) is None})
    if unsupported:
        raise RosettaError(f"ONNX op {', '.join(unsupported)} (opset {context.opset}) cannot be converted to keras: "
                           f"rosetta's Keras mapper has no converter for {'it' if len(unsupported) == 1 else 'them'}")
    for node in nodes:
        for name in node.input:
            context.consumers.setdefault(name, []).append(node.op_type)
    for value in model.graph.output:
        context.consumers.setdefault(value.name, []).append("graph output")
    inputs = []
    for value in model.graph.input:
        if value.name in context.constants:
            continue
        shape = context.static_shape(value.name)
        if not shape:
            raise RosettaError(f"keras mapper: input {value.name!r} is a scalar; a Keras input has a batch axis")
        dtype = onnx.helper.tensor_dtype_to_np_dtype(value.type.tensor_type.elem_type).name
        # a first axis of static size stays that size: ops may then act on it as on any other axis
        tensor = keras.Input(shape=tuple(shape[1:]), batch_size=shape[0], dtype=dtype, name=value.name)
        inputs.append(tensor)
        context.values[value.name] = Mapped(tensor, identity(len(shape)), batch_multiple=1)
    for node in nodes:
        attributes = node_attributes(node)
        names = [name for name in node.input if name]
        if names and all(name in context.constants for name in names) and \
                not fold_constants([node], context.constants, context.opsets):
            continue  # its inputs became constants once the shapes they were computed from were known
        converter = _converter(context, node)
        if any(name in context.symbolic for name in names):
            if not any(name in context.values for name in names):
                try:
                    results = evaluate_symbolic(context, node, attributes)
                except RosettaError:
                    # a node on a filled tensor that cannot be followed here (a range along its batch axis:
                    # DAB-DETR's query positions) computes on the tensor made from it, the batch from the first input
                    filled = [name for name in names if isinstance(context.symbolic.get(name), Filled)]
                    if not filled or not context.values:
                        raise
                    _filled_as_tensors(context, node.op_type, [_first_input(context, model)] + filled)
                else:
                    for name, value in zip(node.output, results):
                        if name:
                            context.store_symbolic(name, value)
                    continue
            elif not converter.reads_symbolic:
                _filled_as_tensors(context, node.op_type, names)
        tensors = [context.values[name] for name in names if name in context.values]
        for name, mapped in zip(node.output, converter.function(context, node, attributes)):
            if name:
                context.define(name, mapped, tensors)
    outputs = []
    for value in model.graph.output:
        if value.name not in context.values and isinstance(context.symbolic.get(value.name), Filled) and inputs:
            # a constant repeated along the batch (DETR's query reference points): made from the first input
            _filled_as_tensors(context, f"output {value.name!r}", [_first_input(context, model), value.name])
        if value.name not in context.values:
            outputs.append(_constant_output(context, value.name, inputs))
            continue
        mapped = context.values[value.name]
        if mapped.feature_order is not None:
            raise RosettaError(f"keras mapper: output {value.name!r} is a channels-last flattened tensor")
        outputs.append(materialize(context, mapped, identity(len(mapped.axes))).tensor)  # virtual axes made real
    return keras.Model(inputs=inputs, outputs=outputs if len(outputs) > 1 else outputs[0], name="rosetta")


def _constant_output(context: MappingContext, name: str, inputs: list):
    """A graph output known when converting (a shape, folded arithmetic) as a tensor of the Keras model: its
    value added to zeros made from the first input (zeros_like reads no value, so NaN or Inf there does not
    spread), since a functional model's outputs are computed from its inputs."""
    value = context.constants.get(name)
    if value is None or not inputs:
        raise RosettaError(f"keras mapper: output {name!r} is computed from the run-time batch size, which the "
                           f"mapper follows only into shapes")
    ops = context.keras.ops
    zero = ops.sum(ops.zeros_like(ops.cast(inputs[0], "float32")))
    if value.dtype == bool:
        return ops.logical_or(ops.cast(zero, "bool"), value)
    return add(ops, ops.cast(zero, str(value.dtype)), value)


def tensor_map(context: MappingContext) -> dict[str, dict]:
    """{ONNX tensor: where the Keras model computes it}: the layer whose output it is, which of that layer's
    outputs, and how its axes (and a 2-D tensor's features) are ordered there. Recorded in the artifact's
    manifest (converter "tensors"), so that the converted model's intermediate values can be read in ONNX's
    layout (rosetta verify --locate). Tensors a layer does not output as they are (a constant, a batch merged
    into another axis) are left out."""
    found = {}
    for name, mapped in context.values.items():
        history = getattr(mapped.tensor, "_keras_history", None)
        if history is None or mapped.batch_multiple not in (None, 1) or name in context.constants:
            continue
        layer, _, index = history
        found[name] = {"layer": layer.name, "output": int(index), "axes": list(mapped.axes),
                       **({"feature_order": [int(i) for i in mapped.feature_order]}
                          if mapped.feature_order is not None else {})}
    return found


def _first_input(context: MappingContext, model) -> str:
    """The first graph input the model maps (a filled value's batch is made from it)."""
    return next(graph_input.name for graph_input in model.graph.input if graph_input.name in context.values)


def _filled_as_tensors(context: MappingContext, what: str, names: list) -> None:
    """The filled values (symbolic.Filled) an op that adds layers reads, made Keras tensors: the value times
    ones along the batch axis, the ones taken from the op's first tensor input (ViT's class token concatenated
    with the patches). Other symbolic values are refused."""
    ops = context.keras.ops
    reference = next(context.values[name] for name in names if name in context.values)
    for name in names:
        filled = context.symbolic.get(name)
        if filled is None:
            continue
        batch = [k for k, d in enumerate(filled.shape) if isinstance(d, BatchDim)]
        unknown = [k for k, d in enumerate(reference.tensor.shape) if d is None]
        if not isinstance(filled, Filled) or len(batch) != 1 or len(unknown) != 1 or \
                filled.shape[batch[0]] != BatchDim(reference.batch_multiple or 1):
            raise RosettaError(f"keras mapper: {what} of a tensor and a value computed from the "
                               f"run-time shape is not supported")
        static = [1 if isinstance(d, BatchDim) else int(d) for d in filled.shape]
        value = np.broadcast_to(filled.value, static).astype(filled.value.dtype)
        ones = ops.max(ops.ones_like(reference.tensor, dtype="float32"),
                       axis=tuple(k for k in range(len(reference.tensor.shape)) if k not in unknown))
        along = [1] * len(static)
        along[batch[0]] = -1
        ones = ops.cast(ops.reshape(ones, along), str(value.dtype))
        tensor = ops.logical_and(ones, value) if value.dtype == bool else ops.multiply(ones, value)
        context.values[name] = Mapped(tensor, identity(len(static)), batch_multiple=reference.batch_multiple or 1)
        del context.symbolic[name]
