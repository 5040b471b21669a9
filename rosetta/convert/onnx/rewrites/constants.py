"""Constants: Constant nodes and their attribute forms, initializers, ConstantOfShape of a static shape, subgraphs
of constants folded, constant operands placed where importers look for them."""

from __future__ import annotations

import numpy as np

from rosetta.convert.onnx.rewrites.graph import remove_dead_nodes
from rosetta.convert.onnx.rewrites.registry import rewrite
from rosetta.frameworks.onnx_graph import (CONSTANT_ATTRIBUTE_FORMS, constant_values, fold_constants, node_attributes,
                                           onnx_slice, static_shapes)


# Constant's attribute forms other than a tensor, and the array each stands for (ONNX's Constant-12/13)


@rewrite
def constant_attributes_as_tensors(model):
    """onnx2tf (its Constant reads `value` only: "'float' object has no attribute 'shape'"), the constant folder
    and every importer that reads `value`: a Constant given as value_float(s) or value_int(s), as ONNX's function
    bodies write them (Elu, Selu, HardSigmoid, LeakyRelu expanded), becomes the same Constant with a `value`
    tensor of that dtype and rank."""
    from onnx import helper, numpy_helper

    for node in model.graph.node:
        if node.op_type != "Constant" or node.domain not in ("", "ai.onnx") or len(node.attribute) != 1:
            continue
        form = CONSTANT_ATTRIBUTE_FORMS.get(node.attribute[0].name)
        if form is None:
            continue
        dtype, field = form
        value = np.asarray(list(getattr(node.attribute[0], field)) if field in ("floats", "ints")
                           else getattr(node.attribute[0], field), dtype)
        del node.attribute[:]
        node.attribute.append(helper.make_attribute("value", numpy_helper.from_array(value)))
    return model


@rewrite
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


@rewrite
def constant_of_shape_as_initializers(model):
    """MXNet: ConstantOfShape, which its importer lacks, becomes the constant it makes where its output shape
    is static (a constant shape, or the Shape of a tensor of static shape): an initializer. Run after
    drop_zero_initial_states, which removes the zero initial states it builds with the batch size."""
    from onnx import numpy_helper

    shapes = static_shapes(model, data_prop=True)
    kept = []
    for node in model.graph.node:
        shape = shapes.get(node.output[0])
        if node.op_type != "ConstantOfShape" or shape is None or None in shape:
            kept.append(node)
            continue
        fill = next((numpy_helper.to_array(a.t) for a in node.attribute if a.name == "value"), np.zeros(1, np.float32))
        constant = np.full(shape, fill.ravel()[0], fill.dtype)
        model.graph.initializer.append(numpy_helper.from_array(constant, node.output[0]))
    del model.graph.node[:]
    model.graph.node.extend(kept)
    return remove_dead_nodes(model)


# Operators whose result ONNX Runtime computes bit for bit as NumPy does (IEEE-rounded arithmetic, casts, data
# movement): fold_constant_subgraphs may precompute them on floats too.
_EXACT_FOLD_OPS = ("Cast", "Sqrt", "Div", "Mul", "Add", "Sub", "Neg", "Reciprocal", "Identity", "Reshape",
                   "Squeeze", "Unsqueeze", "Concat", "Gather", "Slice", "Transpose")


@rewrite
def fold_constant_subgraphs(model):
    """onnx2tf: nodes computed from constants only become the initializer they compute (ONNX's reference
    implementation), where the result is integer (shape arithmetic, e.g. nn.MultiheadAttention's
    Mod -> Reshape of head counts) or the operator rounds as ONNX Runtime does (_EXACT_FOLD_OPS). onnx2tf
    leans on onnxsim for this, which rosetta does not let it run (to_tensorflow.ONNX2TF_FIXED_OPTIONS), and
    symbolic_reshape_shapes needs it to infer shapes."""
    from onnx import numpy_helper

    constants = constant_values(model)
    before = dict(constants)

    outputs = {value.name for value in model.graph.output}

    def keep(node, results) -> bool:  # Constant nodes stay (dead ones are removed below); inexact floats too; and
        # what computes a graph output (an output that is an initializer is no tensor of onnx2tf's model)
        return node.op_type == "Constant" or bool(outputs & set(node.output)) or not (
            all(r.dtype.kind in "iub" for r in results) or node.op_type in _EXACT_FOLD_OPS)

    kept = fold_constants(list(model.graph.node), constants, model.opset_import, keep)
    for name, value in constants.items():
        if name not in before:
            model.graph.initializer.append(numpy_helper.from_array(value, name))
    del model.graph.node[:]
    model.graph.node.extend(kept)
    return remove_dead_nodes(model)


@rewrite
def constant_operands_second(model):
    """onnx2tf: Add and Mul whose first operand is a constant and second a computed tensor get their operands
    swapped (both commute, bit for bit). torch.onnx writes a Linear's bias first, Add(bias, MatMul); onnx2tf
    swaps the TF tensors but broadcasts by the unswapped ONNX shapes, and puts the bias on the wrong axis."""
    constants = constant_values(model)
    for node in model.graph.node:
        if node.op_type in ("Add", "Mul") and node.input[0] in constants and node.input[1] not in constants:
            node.input[0], node.input[1] = node.input[1], node.input[0]
    return model


@rewrite
def scalar_constants_as_vectors(model):
    """onnx2tf: a 0-d constant operand of Mul, Add, Sub or Div beside a tensor of rank 1 or more becomes a
    1-element vector (the same broadcast, the same values). onnx2tf's Mul takes a scalar constant after a MatMul
    for a value of its own and builds a model whose output is that Python float ("Output tensors of a
    Functional model must be the output of a TensorFlow Layer ... Found: 0.35355"): the attention scale of every
    Hugging Face transformer, 1/sqrt(head size)."""
    from onnx import numpy_helper

    scalars = {init.name for init in model.graph.initializer if not init.dims} | \
        {node.output[0] for node in model.graph.node if node.op_type == "Constant" and node.attribute
         and node.attribute[0].name == "value" and not node.attribute[0].t.dims}
    if not any(node.op_type in ("Mul", "Add", "Sub", "Div") and set(node.input) & scalars for node in model.graph.node):
        return model  # nothing to do: no weight copied, no shape inference
    constants = constant_values(model)
    ranks = {name: len(shape) for name, shape in static_shapes(model).items()}
    made: dict[str, str] = {}
    for node in model.graph.node:
        if node.op_type not in ("Mul", "Add", "Sub", "Div") or len(node.input) != 2:
            continue
        for position, other in ((0, 1), (1, 0)):
            name = node.input[position]
            value = constants.get(name)
            if value is None or value.ndim != 0 or node.input[other] in constants or ranks.get(node.input[other], 0) < 1:
                continue
            if name not in made:
                made[name] = f"{name}_as_vector"
                model.graph.initializer.append(numpy_helper.from_array(value.reshape(1), made[name]))
            node.input[position] = made[name]
    return remove_dead_nodes(model) if made else model


@rewrite
def static_shapes_as_constants(model):
    """MXNet (no op reads a shape from a tensor): Shape (and Size) of a tensor whose every size shape inference
    knows become the constant they compute, and the shape arithmetic on them is folded (fold_constant_subgraphs),
    so that a ConstantOfShape or Reshape of such a shape gets a constant one."""
    from onnx import numpy_helper

    shapes = static_shapes(model)
    kept = []
    for node in model.graph.node:
        shape = shapes.get(node.input[0]) if node.op_type in ("Shape", "Size") and node.input else None
        if shape is None or None in shape:
            kept.append(node)
            continue
        if node.op_type == "Size":
            value = np.array(int(np.prod(shape, dtype=np.int64)), np.int64)
        else:
            attributes = node_attributes(node)
            value = np.array(shape, np.int64)[onnx_slice(attributes.get("start", 0), attributes.get("end", len(shape)),
                                                         1, len(shape))]
        model.graph.initializer.append(numpy_helper.from_array(value, node.output[0]))
    del model.graph.node[:]
    model.graph.node.extend(kept)
    return fold_constant_subgraphs(model)
