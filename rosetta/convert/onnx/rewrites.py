"""Semantics-preserving ONNX graph rewrites that let older or partial importers read rosetta's exports.

Each rewrite takes and returns a ModelProto, changes nothing the ONNX spec would compute differently, and
says which importer needs it. Each target lists the rewrites it needs, in order, as a pipeline (REWRITES in
to_mxnet, to_tensorflow, to_keras) that `apply` runs and its manifest records by `names`; tests run the
rewritten graph in ONNX Runtime to show it still computes the same function.
"""

from __future__ import annotations

import numpy as np

from rosetta.frameworks.onnx_graph import (constant_values, default_opset, element_types, fold_constants,
                                           node_attributes, onnx_slice, resize_axes, shape_tracer, static_shapes,
                                           text)


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


OLDEST_OPSET_KEPT, UPGRADED_OPSET = 11, 13


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


# Constant's attribute forms other than a tensor, and the array each stands for (ONNX's Constant-12/13)
_CONSTANT_FORMS = {"value_float": (np.float32, "f"), "value_floats": (np.float32, "floats"),
                   "value_int": (np.int64, "i"), "value_ints": (np.int64, "ints")}


def constant_attributes_as_tensors(model):
    """onnx2tf (its Constant reads `value` only: "'float' object has no attribute 'shape'"), the constant folder
    and every importer that reads `value`: a Constant given as value_float(s) or value_int(s), as ONNX's function
    bodies write them (Elu, Selu, HardSigmoid, LeakyRelu expanded), becomes the same Constant with a `value`
    tensor of that dtype and rank."""
    from onnx import helper, numpy_helper

    for node in model.graph.node:
        if node.op_type != "Constant" or node.domain not in ("", "ai.onnx") or len(node.attribute) != 1:
            continue
        form = _CONSTANT_FORMS.get(node.attribute[0].name)
        if form is None:
            continue
        dtype, field = form
        value = np.asarray(list(getattr(node.attribute[0], field)) if field in ("floats", "ints")
                           else getattr(node.attribute[0], field), dtype)
        del node.attribute[:]
        node.attribute.append(helper.make_attribute("value", numpy_helper.from_array(value)))
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

    constants = constant_values(model)
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


def initializers_as_inputs(model):
    """List every initializer as a graph input too (the pre-IR-4 convention MXNet's importer expects)."""
    import onnx

    listed = {value.name for value in model.graph.input}
    for init in model.graph.initializer:
        if init.name not in listed:
            model.graph.input.append(onnx.helper.make_tensor_value_info(init.name, init.data_type, list(init.dims)))
    return model


def constant_reshape_shapes(model):
    """MXNet and the Keras mapper: a Reshape whose target shape is computed at run time from the shape of its
    own input (how tf2onnx writes Keras' Flatten: Shape -> Gather -> Slice -> Concat -> Reshape) gets that
    shape as a constant, with 0 where it keeps an input axis of unknown size (ONNX Reshape copies the input's
    size for 0). Only rewritten when every element is a known size or provably that same input axis."""
    from onnx import numpy_helper

    constants = constant_values(model)
    elements, dim = shape_tracer(model, follow_equal_sizes=True)
    for node in model.graph.node:
        allowzero = node_attributes(node).get("allowzero", 0)
        if node.op_type != "Reshape" or node.input[1] in constants or allowzero:
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


def decompose_layer_normalization(model):
    """MXNet: LayerNormalization (opset 17), which its importer lacks, written as the function the ONNX spec
    defines it by, in primitives the importer reads: over the axes from `axis` on, computed in `stash_type`,
    Y = (X - mean) / sqrt(mean((X - mean)^2) + epsilon) * Scale + B; its optional Mean and InvStdDev outputs
    kept. Left as it is where `axis` >= 0 and the rank of X is unknown."""
    return _decompose_layer_normalizations(model, lambda node: True)


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


def bounded_slices(model):
    """MXNet: the constant starts and ends of Slice brought within the axis, so that the Slice converter of
    to_mxnet can pass them to MXNet's `slice` as int32: "to the end" is INT64_MAX. Each becomes the index
    ONNX clamps it to where the axis' size is static, else a value within +-SLICE_BOUND; negative axes
    become positive where the rank is known. Every parameter is written out, steps included."""
    from onnx import numpy_helper

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
            model.graph.initializer.append(numpy_helper.from_array(np.asarray(values, np.int64), parameters[position]))
        del node.input[:]
        node.input.extend(parameters)
    return remove_dead_nodes(model)


# Operators whose result ONNX Runtime computes bit for bit as NumPy does (IEEE-rounded arithmetic, casts, data
# movement): fold_constant_subgraphs may precompute them on floats too.
_EXACT_FOLD_OPS = ("Cast", "Sqrt", "Div", "Mul", "Add", "Sub", "Neg", "Reciprocal", "Identity", "Reshape",
                   "Squeeze", "Unsqueeze", "Concat", "Gather", "Slice", "Transpose")


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


def _symbolic_shapes(model) -> dict[str, list] | None:
    """Each tensor's shape from ONNX Runtime's symbolic shape inference (sympy: it follows Mul, Div, Cast of
    sizes, which ONNX's own inference drops), None for an axis of unknown or symbolic size; None when that
    inference fails on the graph."""
    import contextlib
    import copy
    import tempfile

    from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference

    # where inference stops short, ONNX Runtime saves the graph to sym_shape_infer_temp.onnx (+ data files) in
    # the current folder: a folder of our own, removed after
    with tempfile.TemporaryDirectory(prefix="rosetta-shapes-") as scratch, contextlib.chdir(scratch):
        try:
            inferred = SymbolicShapeInference.infer_shapes(copy.deepcopy(model), auto_merge=False,
                                                           guess_output_rank=False)
        except Exception:
            return None
    if inferred is None:  # it declines graphs below opset 7 (returning None, with a message on stdout)
        return None
    values = list(inferred.graph.value_info) + list(inferred.graph.output) + list(inferred.graph.input)
    return {value.name: [d.dim_value if d.HasField("dim_value") else None for d in value.type.tensor_type.shape.dim]
            for value in values if value.type.tensor_type.HasField("shape")}


def static_shape_parts(model):
    """onnx2tf: Shape -> Gather/Slice with constant indices that pick only axes of static size become that
    constant (attention's head size: Shape -> Slice[-1:] -> Cast -> Sqrt), as onnxsim would fold them.
    onnx2tf otherwise broadcasts the size vector it builds at run time onto the wrong axis."""
    from onnx import numpy_helper

    shapes, constants = _symbolic_shapes(model), constant_values(model)
    if shapes is None:
        return model
    outputs = {value.name for value in model.graph.output}  # kept computed: onnx2tf's model outputs tensors only
    producers = {output: node for node in model.graph.node for output in node.output}
    kept = []
    for node in model.graph.node:
        source = producers.get(node.input[0]) if node.input else None
        value = None
        if (source is not None and source.op_type == "Shape" and not source.attribute
                and shapes.get(source.input[0]) is not None):
            dims = np.array([-1 if d is None else d for d in shapes[source.input[0]]], np.int64)
            if node.op_type == "Gather" and node.input[1] in constants:
                value = dims[constants[node.input[1]].astype(np.int64)]
            elif node.op_type == "Slice" and all(name in constants for name in node.input[1:] if name) \
                    and (len(node.input) < 4 or not node.input[3] or int(constants[node.input[3]].ravel()[0]) in (0, -1)):
                starts, ends = (int(constants[name].ravel()[0]) for name in node.input[1:3])
                steps = int(constants[node.input[4]].ravel()[0]) if len(node.input) > 4 and node.input[4] else 1
                value = dims[starts:ends:steps]
        if value is None or np.any(value < 0) or node.output[0] in outputs:
            kept.append(node)
            continue
        model.graph.initializer.append(numpy_helper.from_array(value, node.output[0]))
    del model.graph.node[:]
    model.graph.node.extend(kept)
    return remove_dead_nodes(model)


def symbolic_reshape_shapes(model):
    """onnx2tf: a Reshape whose output shape symbolic inference knows up to at most one axis gets that shape
    as a constant, -1 on the unknown axis (ONNX infers it from the element count, so every input the original
    accepts gives the same result). onnx2tf otherwise computes the shape at run time and its TF tensor loses
    static sizes, which its LSTM (input_size), LayerNormalization (parameter shape) and attention reshapes
    cannot take. Reshapes to an empty axis (0) are left as they are."""
    from onnx import numpy_helper

    shapes = _symbolic_shapes(model)
    if shapes is None:
        return model
    for node in model.graph.node:
        output = shapes.get(node.output[0]) if node.op_type == "Reshape" else None
        if output is None or sum(d is None for d in output) > 1 or 0 in output:
            continue
        name = f"{node.output[0]}_static_shape"
        model.graph.initializer.append(numpy_helper.from_array(np.array([-1 if d is None else d for d in output], np.int64), name))
        node.input[1] = name
    return remove_dead_nodes(model)


def constant_operands_second(model):
    """onnx2tf: Add and Mul whose first operand is a constant and second a computed tensor get their operands
    swapped (both commute, bit for bit). torch.onnx writes a Linear's bias first, Add(bias, MatMul); onnx2tf
    swaps the TF tensors but broadcasts by the unswapped ONNX shapes, and puts the bias on the wrong axis."""
    constants = constant_values(model)
    for node in model.graph.node:
        if node.op_type in ("Add", "Mul") and node.input[0] in constants and node.input[1] not in constants:
            node.input[0], node.input[1] = node.input[1], node.input[0]
    return model


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


_SCOPE_NAME = r"^[A-Za-z0-9.][A-Za-z0-9_.\\/>-]*$"  # TensorFlow's root scope names


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


# ---- pipelines: each target's rewrites, a list of named functions run in order -------------------------------
def apply(pipeline, model):
    """The model after each rewrite of `pipeline` in turn."""
    for rewrite in pipeline:
        model = rewrite(model)
    return model


def names(pipeline) -> list[str]:
    """A pipeline as its manifest records it: the rewrites' names, in order."""
    return [rewrite.__name__ for rewrite in pipeline]


# ---- ops some importers lack, written in the primitives every importer reads ---------------------------------
_FLOAT_TYPES = {1: np.float32, 10: np.float16, 11: np.float64}  # onnx.TensorProto FLOAT, FLOAT16, DOUBLE


def _replace_nodes(model, replace) -> None:
    """Each node through `replace(node) -> [nodes] or None` (None: kept as it is)."""
    nodes = []
    for node in model.graph.node:
        replacement = replace(node)
        nodes.extend([node] if replacement is None else replacement)
    del model.graph.node[:]
    model.graph.node.extend(nodes)


def _resize_plans(model):
    """(node -> its resize_axes plans, or None where the Resize cannot be known when converting; the element
    types; the static shapes) of a model."""
    shapes, constants, types, opset = static_shapes(model), constant_values(model), element_types(model), \
        default_opset(model)

    def plans(node):
        dtype = _FLOAT_TYPES.get(types.get(node.input[0] if node.input else ""))
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


def resize_as_gathers_and_matmuls(model):
    """MXNet, onnx2torch, onnx2tf: Resize and Upsample of a float tensor whose resized axes have static sizes
    and whose scales or sizes are constants, written axis by axis as what ONNX's reference Resize computes on
    them (onnx_graph.resize_axes): a Gather by constant indices where each output copies one input (nearest),
    else a MatMul by the constant interpolation matrix between Transposes that bring that axis last (linear,
    cubic, antialias, with an Add of tf_crop_and_resize's extrapolation). MXNet's importer has no opset-11+
    Resize, onnx2torch none from opset 18 and an opset-11/13 one that only warns on the modes torch computes
    otherwise, onnx2tf gets 29 of the suite's Resize cases wrong; all of them read Gather, MatMul, Transpose."""
    return _resize_as_gathers_and_matmuls(model, keep=lambda node, plans: False)


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
        dtype = _FLOAT_TYPES[types[node.input[0]]]
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

    _replace_nodes(model, replace)
    return remove_dead_nodes(model)


def trilu_as_where(model):
    """MXNet (no Trilu), onnx2torch (none), onnx2tf (wrong for a k below the last row): Trilu of a tensor whose
    last two axes have static sizes, with a constant k, as Where(mask, x, 0): the constant mask of the kept
    triangle (j - i >= k for upper, <= k for lower), so every kept element is x's own and the rest are 0."""
    from onnx import helper, numpy_helper

    shapes, constants, types = static_shapes(model), constant_values(model), element_types(model)

    def replace(node):
        shape = shapes.get(node.input[0]) if node.op_type == "Trilu" else None
        k_name = node.input[1] if len(node.input) > 1 else ""
        if shape is None or len(shape) < 2 or None in shape[-2:] or (k_name and k_name not in constants) \
                or node.input[0] not in types:
            return None
        k = int(np.ravel(constants[k_name])[0]) if k_name else 0
        rows, columns = np.meshgrid(np.arange(shape[-2]), np.arange(shape[-1]), indexing="ij")
        upper = node_attributes(node).get("upper", 1)
        mask = (columns - rows >= k) if upper else (columns - rows <= k)
        name = node.output[0]
        zero = np.zeros((), helper.tensor_dtype_to_np_dtype(types[node.input[0]]))
        model.graph.initializer.extend([numpy_helper.from_array(mask, f"{name}_mask"),
                                        numpy_helper.from_array(zero, f"{name}_zero")])
        return [helper.make_node("Where", [f"{name}_mask", node.input[0], f"{name}_zero"], [name])]

    _replace_nodes(model, replace)
    return remove_dead_nodes(model)


def depth_to_space_as_reshapes(model):
    """DepthToSpace (DCR and CRD) and SpaceToDepth of an (N, C, H, W) tensor of static C, H, W as the
    Reshape -> Transpose -> Reshape their spec defines them by (the batch copied, Reshape's 0): MXNet's importer
    and onnx2torch get CRD or the opset-13 forms wrong or lack them, onnx2tf misorders SpaceToDepth's channels."""
    from onnx import helper, numpy_helper

    shapes = static_shapes(model)

    def replace(node):
        shape = shapes.get(node.input[0]) if node.op_type in ("DepthToSpace", "SpaceToDepth") else None
        if shape is None or len(shape) != 4 or None in shape[1:]:
            return None
        _, c, h, w = shape
        b, name = node_attributes(node)["blocksize"], node.output[0]
        mode = text(node_attributes(node).get("mode", "DCR"))
        if node.op_type == "SpaceToDepth":  # its channels ordered (row, column, channel), or in CRD mode (opset 24)
            if h % b or w % b:  # (channel, row, column)
                return None
            perm = [0, 3, 5, 1, 2, 4] if mode == "DCR" else [0, 1, 3, 5, 2, 4]
            first, last = [0, c, h // b, b, w // b, b], [0, c * b * b, h // b, w // b]
        elif c % (b * b):
            return None
        elif mode == "DCR":
            first, perm, last = [0, b, b, c // (b * b), h, w], [0, 3, 4, 1, 5, 2], [0, c // (b * b), h * b, w * b]
        else:
            first, perm, last = [0, c // (b * b), b, b, h, w], [0, 1, 4, 2, 5, 3], [0, c // (b * b), h * b, w * b]
        model.graph.initializer.extend([numpy_helper.from_array(np.array(first, np.int64), f"{name}_blocks"),
                                        numpy_helper.from_array(np.array(last, np.int64), f"{name}_shape")])
        return [helper.make_node("Reshape", [node.input[0], f"{name}_blocks"], [f"{name}_split"]),
                helper.make_node("Transpose", [f"{name}_split"], [f"{name}_moved"], perm=perm),
                helper.make_node("Reshape", [f"{name}_moved", f"{name}_shape"], [name])]

    _replace_nodes(model, replace)
    return remove_dead_nodes(model)


_POOLS = ("Conv", "MaxPool", "AveragePool", "LpPool")


def explicit_pads(model):
    """MXNet (which ignores auto_pad: a silently smaller output), onnx2tf (no SAME_LOWER) and the Keras mapper:
    Conv and pooling with auto_pad SAME_UPPER, SAME_LOWER or VALID get the pads that mean, from the static
    spatial sizes of the input: the total a window needs to give ceil(size / stride) outputs, its odd element
    at the end (SAME_UPPER) or the start (SAME_LOWER)."""
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


def shape_bounds_as_slice(model):
    """MXNet and onnx2tf: Shape with `start` or `end` (opset 15), which both ignore (all the sizes: a silently
    longer shape), as Shape then a Slice of those bounds."""
    from onnx import helper, numpy_helper

    shapes = static_shapes(model)
    nodes = []
    for node in model.graph.node:
        attributes = node_attributes(node)
        if node.op_type != "Shape" or not ({"start", "end"} & set(attributes)):
            nodes.append(node)
            continue
        name = node.output[0]
        start, end = attributes.get("start", 0), attributes.get("end", 2 ** 62)
        if shapes.get(node.input[0]) is not None:  # bounds within the rank, as Shape-15 clamps them (onnx2tf
            rank = len(shapes[node.input[0]])  # read a negative end as none)
            start, end = (min(max(bound + rank if bound < 0 else bound, 0), rank) for bound in (start, end))
        model.graph.initializer.extend([
            numpy_helper.from_array(np.array([start], np.int64), f"{name}_start"),
            numpy_helper.from_array(np.array([end], np.int64), f"{name}_end")])
        nodes += [helper.make_node("Shape", [node.input[0]], [f"{name}_all"]),
                  helper.make_node("Slice", [f"{name}_all", f"{name}_start", f"{name}_end"], [name])]
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    return model


def unnamed_batch_of_5d_inputs(model):
    """onnx2tf: a 5-D graph input (a video clip, a volume) whose batch axis is named ("N") gets it unnamed (of
    unknown size all the same): onnx2tf passes that name to Keras as the batch size of its 5-D inputs, which fails
    ("not all arguments converted during string formatting"); it reads an unnamed axis as unknown."""
    for value in model.graph.input:
        dims = value.type.tensor_type.shape.dim
        if len(dims) == 5 and dims[0].HasField("dim_param"):
            dims[0].ClearField("dim_param")
    return model


def clip_bounds_as_max_min(model):
    """onnx2tf: Clip (opset 11+) whose bounds are computed at run time, omitted before a given one, or constants
    with min > max, as Min(Max(x, min), max), which is ONNX's definition (max wherever min > max). onnx2tf reads
    such bounds by guesses (a bound of unknown shape taken as none: test_clip's FAIL by 1.55) and clips to min
    where min > max. Clips with constant bounds in order (ReLU6) are left to onnx2tf, which recognises them."""
    from onnx import helper

    constants = constant_values(model)

    def replace(node):
        bounds = list(node.input[1:3])
        if node.op_type != "Clip" or len(node.input) < 2:
            return None
        given = [name for name in bounds if name]
        if not given:  # both omitted: no bound
            return [helper.make_node("Identity", [node.input[0]], [node.output[0]], name=node.name)]
        if all(name in constants for name in given) and bounds[-1] and (len(given) < 2 or np.all(
                constants[bounds[0]] <= constants[bounds[1]])):
            return None
        nodes, current = [], node.input[0]
        for index, (name, op_type) in enumerate(zip(bounds, ("Max", "Min"))):
            if not name:
                continue
            last = index == len(bounds) - 1 or not bounds[index + 1]
            output = node.output[0] if last else f"{node.output[0]}_{op_type.lower()}"
            nodes.append(helper.make_node(op_type, [current, name], [output], name=f"{node.name or output}_{op_type}"))
            current = output
        return nodes

    _replace_nodes(model, replace)
    return model


REDUCTIONS = ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
              "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare")


def empty_axes_as_every_axis(model):
    """onnx2tf: a reduction whose axes are computed at run time (ReduceSum from opset 13, the others from 18) and
    are known to be empty (a 1-D tensor of size 0) reduces every axis, as ONNX says (noop_with_empty_axes=0);
    onnx2tf reduced none (ReduceSum_default_axes_keepdims FAILed by its shape). The axes become Concat(axes,
    0..rank-1), so the run-time tensor is still read. Axes of unknown count are left for refuse_unknown_axes."""
    from onnx import helper, numpy_helper

    constants, shapes = constant_values(model), static_shapes(model)

    def replace(node):
        if node.op_type not in REDUCTIONS or len(node.input) < 2 or not node.input[1] or node.input[1] in constants \
                or node_attributes(node).get("noop_with_empty_axes", 0) or shapes.get(node.input[1]) != [0] \
                or shapes.get(node.input[0]) is None:
            return None
        every = f"{node.output[0]}_every_axis"
        model.graph.initializer.append(numpy_helper.from_array(np.arange(len(shapes[node.input[0]]), dtype=np.int64), every))
        concat = helper.make_node("Concat", [node.input[1], every], [f"{every}s"], axis=0)
        node.input[1] = f"{every}s"
        return [concat, node]

    _replace_nodes(model, replace)
    return model


def run_time_axes_of_unknown_count(model) -> list[str]:
    """The reductions whose axes are computed at run time and may be empty (their count is unknown): what
    empty_axes_as_every_axis cannot decide."""
    constants, shapes = constant_values(model), static_shapes(model)
    return [node.op_type for node in model.graph.node
            if node.op_type in REDUCTIONS and len(node.input) > 1 and node.input[1] and node.input[1] not in constants
            and not node_attributes(node).get("noop_with_empty_axes", 0)
            and (shapes.get(node.input[1]) is None or shapes[node.input[1]][0] is None)]


def shifts_out_of_range_as_where(model):
    """onnx2tf (TensorFlow's shifts, like C's, mask or wrap a shift amount): BitShift with ONNX's result where the
    amount is negative or at least the width, 0, or for a right shift of a negative signed value -1, and the
    shift itself by an amount brought in range elsewhere: Where(out of range, fill, BitShift(x, amount or 0))."""
    from onnx import helper, numpy_helper

    types = element_types(model)

    def replace(node):
        if node.op_type != "BitShift" or node.input[0] not in types or node.input[1] not in types:
            return None
        x, amount, name = node.input[0], node.input[1], node.output[0]
        x_dtype = helper.tensor_dtype_to_np_dtype(types[x])
        amount_dtype = helper.tensor_dtype_to_np_dtype(types[amount])
        for suffix, value, dtype in (("zero", 0, amount_dtype), ("width", 8 * x_dtype.itemsize, amount_dtype),
                                     ("x_zero", 0, x_dtype), ("x_minus_one", -1 if x_dtype.kind == "i" else 0, x_dtype)):
            model.graph.initializer.append(numpy_helper.from_array(np.array(value, dtype), f"{name}_{suffix}"))
        right_signed = text(node_attributes(node).get("direction", "")) == "RIGHT" and x_dtype.kind == "i"
        fill = [helper.make_node("Less", [x, f"{name}_x_zero"], [f"{name}_negative"]),
                helper.make_node("Where", [f"{name}_negative", f"{name}_x_minus_one", f"{name}_x_zero"],
                                 [f"{name}_fill"])] if right_signed else \
            [helper.make_node("Identity", [f"{name}_x_zero"], [f"{name}_fill"])]
        shift = helper.make_node("BitShift", [x, f"{name}_amount"], [f"{name}_shifted"], name=node.name)
        shift.attribute.extend(node.attribute)
        return [helper.make_node("Less", [amount, f"{name}_zero"], [f"{name}_below"]),
                helper.make_node("Less", [amount, f"{name}_width"], [f"{name}_within"]),
                helper.make_node("Not", [f"{name}_within"], [f"{name}_above"]),
                helper.make_node("Or", [f"{name}_below", f"{name}_above"], [f"{name}_out"]),
                helper.make_node("Where", [f"{name}_out", f"{name}_zero", amount], [f"{name}_amount"]),
                shift, *fill,
                helper.make_node("Where", [f"{name}_out", f"{name}_fill", f"{name}_shifted"], [name])]

    _replace_nodes(model, replace)
    return model


def unsigned_divisions_as_int64(model):
    """onnx2tf (which divides unsigned integers as floats and returns the quotient as floats: test_div_uint8
    FAILed by 0.93): Div of uint8, uint16 or uint32 computed in int64, which holds every such value, and cast
    back; the quotient of non-negative integers truncates either way."""
    from onnx import TensorProto, helper

    types = element_types(model)

    def replace(node):
        kind = types.get(node.input[0]) if node.op_type == "Div" else None
        if kind not in (TensorProto.UINT8, TensorProto.UINT16, TensorProto.UINT32):
            return None
        name = node.output[0]
        return [helper.make_node("Cast", [node.input[0]], [f"{name}_a64"], to=TensorProto.INT64),
                helper.make_node("Cast", [node.input[1]], [f"{name}_b64"], to=TensorProto.INT64),
                helper.make_node("Div", [f"{name}_a64", f"{name}_b64"], [f"{name}_q64"], name=node.name),
                helper.make_node("Cast", [f"{name}_q64"], [name], to=kind)]

    _replace_nodes(model, replace)
    return model


def integer_fmod_as_magnitudes(model):
    """onnx2tf (which computes every Mod as Python's remainder, with the divisor's sign, and ignores fmod): an
    integer Mod with fmod=1 (C's, with the dividend's sign) as Sign(a) x Mod(|a|, |b|), its fmod=0 remainder of
    the magnitudes, equal to fmod's there. Floats with fmod=1 are refused (onnx2tf_refusals)."""
    from onnx import helper

    types = element_types(model)

    def replace(node):
        if node.op_type != "Mod" or not node_attributes(node).get("fmod", 0) or types.get(node.input[0]) in _FLOAT_TYPES \
                or node.input[0] not in types:
            return None
        a, b, name = node.input[0], node.input[1], node.output[0]
        return [helper.make_node("Abs", [a], [f"{name}_abs_a"]), helper.make_node("Abs", [b], [f"{name}_abs_b"]),
                helper.make_node("Mod", [f"{name}_abs_a", f"{name}_abs_b"], [f"{name}_magnitude"], fmod=0),
                helper.make_node("Sign", [a], [f"{name}_sign"]),
                helper.make_node("Mul", [f"{name}_sign", f"{name}_magnitude"], [name])]

    _replace_nodes(model, replace)
    return model


def one_hot_out_of_range_as_off(model):
    """onnx2tf (which wraps every index into the depth, as Python's modulo: an index of 5 in a depth of 5 became
    hot at 0, test_onehot_out_of_range_indices FAILed): OneHot's rows of indices outside [-depth, depth), which
    ONNX leaves all off, made the off value after it: Where(in range, along the one-hot axis, OneHot, off)."""
    from onnx import TensorProto, helper, numpy_helper

    types, shapes, opset = element_types(model), static_shapes(model), default_opset(model)

    def replace(node):
        if node.op_type != "OneHot" or node.input[0] not in types or shapes.get(node.input[0]) is None or opset < 13:
            return None
        indices, depth, values, name = node.input[0], node.input[1], node.input[2], node.output[0]
        rank = len(shapes[indices]) + 1
        axis = int(node_attributes(node).get("axis", -1)) % rank
        model.graph.initializer.extend([numpy_helper.from_array(np.array([axis], np.int64), f"{name}_axis"),
                                        numpy_helper.from_array(np.array(0, np.int64), f"{name}_off_index")])
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

    _replace_nodes(model, replace)
    return model


def lp_normalization_as_primitives(model):
    """onnx2tf and MXNet's importer: LpNormalization as x / norm, with a norm of 0 taken as 1, as ONNX's reference
    computes it (a vector of zeros stays zeros; both divided by 0 and gave NaN: test_l2normalization_axis_0)."""
    from onnx import helper, numpy_helper

    types = element_types(model)
    opset = default_opset(model)

    def replace(node):
        dtype = _FLOAT_TYPES.get(types.get(node.input[0] if node.input else ""))
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
            model.graph.initializer.append(numpy_helper.from_array(np.array([axis], np.int64), f"{name}_axes"))
            nodes.append(helper.make_node("ReduceSum", [f"{name}_magnitude", f"{name}_axes"], [summed], keepdims=1))
        else:
            nodes.append(helper.make_node("ReduceSum", [f"{name}_magnitude"], [summed], axes=[axis], keepdims=1))
        if p != 1:
            nodes.append(helper.make_node("Sqrt", [summed], [f"{name}_norm"]))
        for suffix, value in (("zero", 0), ("one", 1)):
            model.graph.initializer.append(numpy_helper.from_array(np.array(value, dtype), f"{name}_{suffix}"))
        return [*nodes,
                helper.make_node("Equal", [f"{name}_norm", f"{name}_zero"], [f"{name}_is_zero"]),
                helper.make_node("Where", [f"{name}_is_zero", f"{name}_one", f"{name}_norm"], [f"{name}_divisor"]),
                helper.make_node("Div", [x, f"{name}_divisor"], [name])]

    _replace_nodes(model, replace)
    return model


def group_normalization_as_instance_normalization(model):
    """MXNet and onnx2tf (no GroupNormalization): GroupNormalization of an (N, C, ...) tensor of static C and
    spatial sizes, with constant scale and bias, as torch exports nn.GroupNorm: Reshape to (N, G, -1),
    InstanceNormalization with unit scale and zero bias (the statistics of each group), Reshape back, Mul by
    the scale and Add the bias per channel (opset 18 gives them per group: each repeated over its channels)."""
    from onnx import helper, numpy_helper

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
        model.graph.initializer.extend([
            numpy_helper.from_array(np.array([0, groups, -1], np.int64), f"{name}_groups"),
            numpy_helper.from_array(np.array([0] + list(shape[1:]), np.int64), f"{name}_shape"),
            numpy_helper.from_array(np.ones(groups, np.float32), f"{name}_ones"),
            numpy_helper.from_array(np.zeros(groups, np.float32), f"{name}_zeros"),
            numpy_helper.from_array(scale.reshape(per_channel), f"{name}_scale"),
            numpy_helper.from_array(bias.reshape(per_channel), f"{name}_bias")])
        return [helper.make_node("Reshape", [node.input[0], f"{name}_groups"], [f"{name}_grouped"]),
                helper.make_node("InstanceNormalization", [f"{name}_grouped", f"{name}_ones", f"{name}_zeros"],
                                 [f"{name}_normalized"], epsilon=attributes.get("epsilon", 1e-5)),
                helper.make_node("Reshape", [f"{name}_normalized", f"{name}_shape"], [f"{name}_ungrouped"]),
                helper.make_node("Mul", [f"{name}_ungrouped", f"{name}_scale"], [f"{name}_scaled"]),
                helper.make_node("Add", [f"{name}_scaled", f"{name}_bias"], [name])]

    _replace_nodes(model, replace)
    return remove_dead_nodes(model)


def cast_like_as_cast(model):
    """MXNet and onnx2torch (no CastLike): CastLike as the Cast to its second input's element type, where shape
    inference knows it."""
    from onnx import helper

    types = element_types(model)

    def replace(node):
        if node.op_type != "CastLike" or node.input[1] not in types:
            return None
        saturate = node_attributes(node).get("saturate")
        extra = {"saturate": saturate} if saturate is not None and default_opset(model) >= 19 else {}
        return [helper.make_node("Cast", [node.input[0]], list(node.output), to=types[node.input[1]], **extra)]

    _replace_nodes(model, replace)
    return model


def gelu_as_primitives(model):
    """MXNet and onnx2torch (no Gelu): Gelu (opset 20) as the function ONNX defines it by: exact,
    x * 0.5 * (1 + erf(x / sqrt(2))), or approximate='tanh', x * 0.5 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715
    x^3)))."""
    from onnx import helper, numpy_helper

    types = element_types(model)

    def replace(node):
        dtype = _FLOAT_TYPES.get(types.get(node.input[0] if node.input else ""))
        if node.op_type != "Gelu" or dtype is None:
            return None
        name, x = node.output[0], node.input[0]
        constants = {"half": 0.5, "one": 1.0, "scale": 1 / np.sqrt(2), "cube": 0.044715, "tanh_scale": np.sqrt(2 / np.pi)}
        model.graph.initializer.extend(numpy_helper.from_array(np.array(v, dtype), f"{name}_{k}") for k, v in constants.items())
        nodes = [helper.make_node("Mul", [x, f"{name}_half"], [f"{name}_halved"])]
        if text(node_attributes(node).get("approximate", "none")) == "tanh":
            nodes += [helper.make_node("Mul", [x, x], [f"{name}_square"]),
                      helper.make_node("Mul", [f"{name}_square", x], [f"{name}_cubed"]),
                      helper.make_node("Mul", [f"{name}_cubed", f"{name}_cube"], [f"{name}_cubic"]),
                      helper.make_node("Add", [x, f"{name}_cubic"], [f"{name}_inner"]),
                      helper.make_node("Mul", [f"{name}_inner", f"{name}_tanh_scale"], [f"{name}_scaled"]),
                      helper.make_node("Tanh", [f"{name}_scaled"], [f"{name}_curve"])]
        else:
            nodes += [helper.make_node("Mul", [x, f"{name}_scale"], [f"{name}_scaled"]),
                      helper.make_node("Erf", [f"{name}_scaled"], [f"{name}_curve"])]
        nodes += [helper.make_node("Add", [f"{name}_curve", f"{name}_one"], [f"{name}_gate"]),
                  helper.make_node("Mul", [f"{name}_halved", f"{name}_gate"], [name])]
        return nodes

    _replace_nodes(model, replace)
    return remove_dead_nodes(model)


def flatten_as_reshape(model):
    """MXNet (its Flatten flattens at axis 1 only): Flatten at another axis of a tensor of known rank as a
    Reshape to the two products, the one holding the sizes unknown when converting as -1."""
    from onnx import helper, numpy_helper

    shapes = static_shapes(model)

    def replace(node):
        shape = shapes.get(node.input[0]) if node.op_type == "Flatten" else None
        axis = node_attributes(node).get("axis", 1) if shape is not None else 1
        axis = axis + len(shape) if shape is not None and axis < 0 else axis
        if shape is None or axis == 1:
            return None
        before, after = shape[:axis], shape[axis:]
        if None in before and None in after:
            return None
        target = [-1 if None in before else int(np.prod(before)), -1 if None in after else int(np.prod(after))]
        model.graph.initializer.append(numpy_helper.from_array(np.array(target, np.int64), f"{node.output[0]}_shape"))
        return [helper.make_node("Reshape", [node.input[0], f"{node.output[0]}_shape"], list(node.output))]

    _replace_nodes(model, replace)
    return model


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
