"""ONNX -> MXNet 1.9.1 with MXNet's own importer (mx.contrib.onnx.import_model), bridged where it stops short.

Graph fixes (rosetta.convert.onnx.rewrites), each semantics-preserving: zero initial GRU states built at run
time are omitted (MXNet cannot express the Shape -> ConstantOfShape chain); Constant nodes become
initializers and every initializer is also a graph input (the importer's expectations); Squeeze/Unsqueeze
axes move back from inputs to attributes and BatchNormalization's default training_mode=0 attribute is
dropped (it reads opset-11 style and passes unknown attributes on); negative constant Gather indices become
positive (it maps Gather to `take`, whose clip mode would read -1 as 0: silently the wrong time step);
LayerNormalization and ConstantOfShape, which it lacks, become the primitives LayerNormalization is defined by
and (for a static shape) the constant ConstantOfShape makes; Slice bounds are brought within the axis.

Slice: the importer's own converter fails on every opset-10+ Slice (it reads starts and ends as float32 and
writes "1.0", or "nan" for an end past the axis, into slice_axis), so `_slice` replaces it in the operator
table: the bounds, made int32 by the rewrite, go to MXNet's `slice`, which clamps them as ONNX does.

Erf: MXNet has `erf`, its importer no entry; `_erf` is one (the exact GELU of transformers and mixers).
MatMul: the importer's `linalg_gemm2` needs operands of equal rank; `_matmul` sends a MatMul by a 2-D weight
to `dot` (nn.Linear on (N, tokens, C) in mixers and transformers).

GRU: the importer has none. `_gru` is added to the importer's operator table (`_convert_map`, its extension
point): the ONNX weights are packed into the flat parameter vector of MXNet's fused RNN operator, gates
reordered from ONNX's z, r, h to MXNet's r, z, n, input and recurrent biases kept apart (MXNet's GRU is the
linear_before_reset=1 formulation). `_lstm` does the same for LSTM (gates i, o, f, c to MXNet's i, f, c, o,
one or two directions).

Omitted optional inputs: the importer looks every input up by name, "" included. `name_omitted_inputs` names
those of GRU and LSTM OMITTED (an unused initializer), which their converters read as omitted; any
other op with one is refused before the import.

Integers: MXNet carries them as float32 (the importer loads every initializer as float32, the runner feeds
integer inputs as float32), so `_cast` keeps the dtype where ONNX casts to an integer type or to float32: to an
integer it truncates toward zero (ONNX's float -> int), to bool it compares with 0. An int32 Cast among float32
operands was a type error (tf2onnx's Embedding index wrap: Less / Not / Cast / Mul on the token ids).
Mod: `broadcast_mod` follows the divisor's sign (fmod=0); fmod=1 (C's fmod, the dividend's sign) is the
magnitude's remainder given the dividend's sign.

Expand and ConstantOfShape with a shape computed at run time (Keras' and torch's zero LSTM states, from
Shape(x)): MXNet has no op that reads a shape from a tensor. `shapes_as_references` traces the shape to
constants and axes of graph tensors (Shape -> Cast / Gather / Slice / Concat ...) and writes the node as
RosettaExpand(x, tensors...): x times ones of that shape (numpy-style, both ways, as ONNX Expand; x * 1 is x
exactly), the ones built from the tensors with broadcast_like. ConstantOfShape is Expand of its value.
Gather by a scalar constant: the importer loads the scalar as shape (1,), so `scalar_gather_indices` writes
it as a Gather by [index] and a Squeeze. GlobalMaxPool: `_global_max_pool` reduces any rank (the importer's
2-D Pooling fails on tf2onnx's GlobalMaxPooling1D).

Speed (rosetta bench --baseline native): the importer writes Relu as `relu` and every Add as `broadcast_add`,
operators MXNet's oneDNN backend does not run, where a Gluon model has Activation and elemwise_add; the
converted ResNet-50 took 2.02x the native Gluon model's time. `_relu` writes Activation(relu), Adds whose
operands have the same shape (`same_shape_adds`) become elemwise_add, and `_max_pool` puts symmetric padding
inside Pooling instead of an edge-mode Pad before it: 1.07x.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from rosetta.convert.onnx import rewrites as rw
from rosetta.errors import RosettaError
from rosetta.manifest import Manifest, sha256_of

ARTIFACT = "model"


def _reorder(gates: np.ndarray) -> np.ndarray:
    z, r, h = np.split(gates, 3, axis=0)
    return np.concatenate([r, z, h], axis=0)


def _gru(attrs, inputs, importer):
    """ONNX GRU -> mx.sym.RNN(mode='gru'); returns the Group (Y, Y_h) the importer indexes by output."""
    from rosetta.frameworks.mxnet import import_mxnet

    mx = import_mxnet()
    if attrs.get("linear_before_reset", 0) != 1:
        raise RosettaError("GRU with linear_before_reset=0 has no MXNet equivalent (MXNet computes linear_before_reset=1)")
    if attrs.get("direction", b"forward") not in (b"forward", "forward"):
        raise RosettaError(f"GRU direction={attrs.get('direction')!r} is not supported by rosetta's MXNet GRU converter")
    _refuse_sequence_lens("GRU", inputs)
    data, w_sym, r_sym = inputs[:3]
    w = importer._params[w_sym.name].asnumpy()[0]
    r = importer._params[r_sym.name].asnumpy()[0]
    hidden = int(attrs["hidden_size"])
    b = importer._params[inputs[3].name].asnumpy()[0] if _given(inputs, 3) else np.zeros(6 * hidden, np.float32)
    flat = np.concatenate([_reorder(w).ravel(), _reorder(r).ravel(),
                           _reorder(b[: 3 * hidden]).ravel(), _reorder(b[3 * hidden:]).ravel()]).astype(np.float32)
    name = f"{w_sym.name}_mxnet_gru_parameters"
    importer._params[name] = mx.nd.array(flat)
    parameters = mx.sym.Variable(name, shape=flat.shape)
    state = inputs[5] if _given(inputs, 5) else _zero_state(data, 1, hidden)
    rnn = mx.sym.RNN(data=data, parameters=parameters, state=state, state_size=hidden, num_layers=1,
                     mode="gru", state_outputs=True)
    return mx.sym.Group([mx.sym.expand_dims(rnn[0], axis=1), rnn[1]]), attrs, inputs


OMITTED = "rosetta_omitted_input"  # the name an omitted optional input is given (name_omitted_inputs)


def _given(inputs, index: int) -> bool:
    """Whether the optional input at `index` is given (neither past the end nor named OMITTED)."""
    return index < len(inputs) and inputs[index].name != OMITTED


def _refuse_sequence_lens(op: str, inputs) -> None:
    if _given(inputs, 4):
        raise RosettaError(f"{op} with sequence_lens cannot be converted to mxnet: MXNet's RNN operator reads "
                           "whole sequences")


def _zero_state(data, directions: int, hidden: int):
    """Zeros of shape (directions, batch, hidden) in the data's dtype: an omitted initial state, from the
    batch size of time-major data (T, N, I)."""
    from rosetta.frameworks.mxnet import import_mxnet

    mx = import_mxnet()
    column = mx.sym.slice_axis(mx.sym.slice_axis(data, axis=0, begin=0, end=1), axis=2, begin=0, end=1)
    return mx.sym.broadcast_axis(mx.sym.zeros_like(column), axis=(0, 2), size=(directions, hidden))


def _lstm(attrs, inputs, importer):
    """ONNX LSTM -> mx.sym.RNN(mode='lstm'), forward or bidirectional; returns the Group (Y, Y_h, Y_c).
    The parameter vector is every direction's W and R, then every direction's input and recurrent biases."""
    from rosetta.frameworks.mxnet import import_mxnet

    mx = import_mxnet()
    problems = [name for name, bad in (
        ("layout=1", attrs.get("layout", 0) != 0), ("clip", "clip" in attrs), ("input_forget", attrs.get("input_forget", 0)),
        ("direction=reverse", attrs.get("direction", "forward") not in ("forward", "bidirectional")),
        ("activations", [a.decode().lower() if isinstance(a, bytes) else a.lower() for a in attrs.get("activations", ())]
         not in ([], ["sigmoid", "tanh", "tanh"], ["sigmoid", "tanh", "tanh"] * 2)),
        ("peepholes (input P)", _given(inputs, 7) and (inputs[7].name not in importer._params
                                                      or importer._params[inputs[7].name].asnumpy().any())),
        ("weights computed at run time", any(i.name not in importer._params for i in inputs[1:4] if i.name != OMITTED)),
    ) if bad]
    if problems:
        raise RosettaError(f"LSTM with {', '.join(problems)} cannot be converted to mxnet by rosetta's LSTM converter")
    _refuse_sequence_lens("LSTM", inputs)
    data, w_sym, r_sym = inputs[:3]
    w, r = importer._params[w_sym.name].asnumpy(), importer._params[r_sym.name].asnumpy()
    directions, hidden = w.shape[0], int(attrs["hidden_size"])
    b = importer._params[inputs[3].name].asnumpy() if _given(inputs, 3) else np.zeros((directions, 8 * hidden), np.float32)

    def reorder(gates):  # ONNX i, o, f, c -> MXNet i, f, c, o
        i, o, f, c = np.split(gates, 4, axis=0)
        return np.concatenate([i, f, c, o], axis=0).ravel()

    flat = np.concatenate([reorder(m[d]) for d in range(directions) for m in (w, r)]
                          + [reorder(part) for d in range(directions) for part in np.split(b[d], 2)]).astype(np.float32)
    name = f"{w_sym.name}_mxnet_lstm_parameters"
    importer._params[name] = mx.nd.array(flat)
    parameters = mx.sym.Variable(name, shape=flat.shape)
    h = inputs[5] if _given(inputs, 5) else None
    c = inputs[6] if _given(inputs, 6) else None
    h = h if h is not None else (mx.sym.zeros_like(c) if c is not None else _zero_state(data, directions, hidden))
    c = c if c is not None else mx.sym.zeros_like(h)
    rnn = mx.sym.RNN(data=data, parameters=parameters, state=h, state_cell=c, state_size=hidden, num_layers=1,
                     mode="lstm", bidirectional=directions == 2, state_outputs=True)
    # MXNet's output (T, N, D * H) -> ONNX Y (T, D, N, H)
    y = mx.sym.transpose(mx.sym.reshape(rnn[0], shape=(0, 0, directions, hidden)), axes=(0, 2, 1, 3))
    return mx.sym.Group([y, rnn[1], rnn[2]]), attrs, inputs


def _cast(attrs, inputs, importer):
    """ONNX Cast in MXNet's float32 world (module docstring): to an integer type, truncation toward zero in
    the input's dtype; to bool, x != 0; to float32, the input itself; to another float type, that type."""
    from mxnet.contrib.onnx.onnx2mx import _op_translations
    from onnx import TensorProto

    from rosetta.frameworks.mxnet import import_mxnet

    mx = import_mxnet()
    to = int(attrs["to"])
    if to == TensorProto.FLOAT:
        return mx.sym.identity(inputs[0]), attrs, inputs
    if to == TensorProto.BOOL:
        return inputs[0] != 0, attrs, inputs
    if to in (TensorProto.INT8, TensorProto.INT16, TensorProto.INT32, TensorProto.INT64, TensorProto.UINT8,
              TensorProto.UINT16, TensorProto.UINT32, TensorProto.UINT64):
        return mx.sym.trunc(inputs[0]), attrs, inputs
    return _op_translations.cast(attrs, inputs, importer)


def _mod(attrs, inputs, importer):
    """ONNX Mod: fmod=0 (integers) takes the divisor's sign, as MXNet's broadcast_mod; fmod=1 is C's fmod,
    the remainder of the magnitudes with the dividend's sign, and NaN for a zero divisor (MXNet's mod gives 0;
    0 / 0 adds the NaN, 0 / b a zero elsewhere)."""
    from rosetta.frameworks.mxnet import import_mxnet

    mx = import_mxnet()
    a, b = inputs
    if not attrs.get("fmod", 0):
        return mx.sym.broadcast_mod(a, b), attrs, inputs
    remainder = mx.sym.broadcast_mod(mx.sym.abs(a), mx.sym.abs(b))
    signed = mx.sym.broadcast_mul(1 - 2 * (a < 0), remainder)
    return mx.sym.broadcast_add(signed, mx.sym.zeros_like(b) / b), attrs, inputs


def _expand_to_references(attrs, inputs, importer):
    """RosettaExpand(x, tensors...) (shapes_as_references): x * ones of the traced shape, whose axis k is
    sizes[k], or where that is -1 the size of axis axes[k] of tensors[references[k]]."""
    from rosetta.frameworks.mxnet import import_mxnet

    mx = import_mxnet()
    x, tensors = inputs[0], inputs[1:]
    sizes, references, axes = (list(attrs[key]) for key in ("sizes", "references", "axes"))
    # a single element of x's dtype (the float64 reference run casts parameters and data, never constants)
    ones = mx.sym.ones_like(mx.sym.slice_axis(mx.sym.reshape(x, shape=(-1,)), axis=0, begin=0, end=1))
    ones = mx.sym.reshape(ones, shape=(1,) * len(sizes))
    static = [(k, size) for k, size in enumerate(sizes) if size != 1 and size >= 0]
    if static:
        ones = mx.sym.broadcast_axis(ones, axis=tuple(k for k, _ in static), size=tuple(size for _, size in static))
    for k, (size, reference, axis) in enumerate(zip(sizes, references, axes)):
        if size < 0:
            ones = mx.sym.broadcast_like(ones, tensors[reference], lhs_axes=(k,), rhs_axes=(axis,))
    return mx.sym.broadcast_mul(x, ones), attrs, inputs


def _global_max_pool(attrs, inputs, importer):
    """ONNX GlobalMaxPool of any rank: the max over every axis but N and C, kept. MXNet's own converter
    writes a 2-D Pooling, which fails on (N, C, L) (tf2onnx's GlobalMaxPooling1D)."""
    from rosetta.frameworks.mxnet import import_mxnet

    return import_mxnet().sym.max(inputs[0], axis=(0, 1), exclude=True, keepdims=True), attrs, inputs


def _slice(attrs, inputs, importer):
    """ONNX Slice (opset 10+, constant parameters within int32, as rewrites.bounded_slices leaves them) ->
    mx.sym.slice, in place of MXNet's own converter, which no opset-10+ Slice passes (module docstring)."""
    from rosetta.frameworks.mxnet import import_mxnet

    mx = import_mxnet()
    from mxnet.contrib.onnx.onnx2mx import _op_translations

    if importer.opset_version < 10:  # parameters as int attributes, which MXNet's own converter reads
        return _op_translations._slice(attrs, inputs, importer)
    if len(inputs) != 5 or any(parameter.name not in importer._params for parameter in inputs[1:]):
        raise RosettaError("Slice with starts, ends, axes or steps computed at run time cannot be converted to mxnet")
    starts, ends, axes, steps = ([int(v) for v in importer._params[p.name].asnumpy().ravel()] for p in inputs[1:])
    if min(axes) < 0:
        raise RosettaError("Slice on a negative axis of a tensor of unknown rank cannot be converted to mxnet")
    begin, end, step = ([None] * (max(axes) + 1) for _ in range(3))
    for axis, start, stop, stride in zip(axes, starts, ends, steps):
        begin[axis], end[axis], step[axis] = start, stop, stride
    return mx.sym.slice(inputs[0], begin=tuple(begin), end=tuple(end), step=tuple(step)), attrs, inputs


def _relu(attrs, inputs, importer):
    """ONNX Relu -> Activation(relu), which MXNet runs with oneDNN; the importer's own entry, the plain `relu`
    operator, is not: on ResNet-50 features (batch 32, this CPU) 1.4 s of 5.5 s per batch."""
    from rosetta.frameworks.mxnet import import_mxnet

    return import_mxnet().sym.Activation(inputs[0], act_type="relu"), attrs, inputs


def _max_pool(attrs, inputs, importer):
    """ONNX MaxPool with the same padding at both ends of each axis (and no dilation, ceil mode or auto_pad)
    -> one Pooling with `pad`, whose padded positions never win the max, as ONNX's do not; the importer writes
    an edge-mode Pad before every padded Pooling (ResNet-50's stem: 4 % of its time). Others go to it."""
    from mxnet.contrib.onnx.onnx2mx import _op_translations

    from rosetta.frameworks.mxnet import import_mxnet

    kernel = tuple(attrs["kernel_shape"])
    pads = tuple(attrs.get("pads", (0,) * 2 * len(kernel)))
    plain = (not attrs.get("ceil_mode", 0) and set(attrs.get("dilations", (1,))) == {1}
             and attrs.get("auto_pad", "NOTSET") in ("NOTSET", b"NOTSET") and not attrs.get("storage_order", 0))
    if plain and pads[:len(kernel)] == pads[len(kernel):]:
        return import_mxnet().sym.Pooling(inputs[0], kernel=kernel, stride=tuple(attrs.get("strides", (1,) * len(kernel))),
                                          pad=pads[:len(kernel)], pool_type="max", pooling_convention="valid"), attrs, inputs
    return _op_translations.max_pooling(attrs, inputs, importer)


def _same_shape_add(attrs, inputs, importer):
    """RosettaSameShapeAdd (same_shape_adds) -> elemwise_add, which MXNet runs with oneDNN; the importer writes
    every Add as broadcast_add, which is not (ResNet-50's 16 residual adds: 1.2 s of 5.5 s per batch)."""
    from rosetta.frameworks.mxnet import import_mxnet

    return import_mxnet().sym.elemwise_add(*inputs), attrs, inputs


def same_shape_adds(model):
    """Add nodes whose operands have the same shape, axis by axis (equal sizes, or the same symbolic size such
    as the batch), become RosettaSameShapeAdd: nothing to broadcast. Operands of unknown or different shape stay
    Add. MXNet-only: the importer's `_same_shape_add` reads it."""
    from onnx import shape_inference

    inferred = shape_inference.infer_shapes(model)
    shapes = {init.name: list(init.dims) for init in model.graph.initializer}
    for value in list(inferred.graph.value_info) + list(inferred.graph.input) + list(inferred.graph.output):
        if value.type.tensor_type.HasField("shape"):
            shapes[value.name] = [d.dim_value if d.HasField("dim_value") else (d.dim_param or None)
                                  for d in value.type.tensor_type.shape.dim]
    for node in model.graph.node:
        if node.op_type != "Add" or len(node.input) != 2:
            continue
        first, second = (shapes.get(name) for name in node.input)
        if first is not None and first == second and None not in first:
            node.op_type = "RosettaSameShapeAdd"
    return model


def _erf(attrs, inputs, importer):
    """ONNX Erf (the exact GELU's) -> mx.sym.erf: MXNet has the operator, its importer no entry for it."""
    from rosetta.frameworks.mxnet import import_mxnet

    return import_mxnet().sym.erf(inputs[0]), attrs, inputs


def _matmul(attrs, inputs, importer):
    """ONNX MatMul by a 2-D weight -> mx.sym.dot, which contracts the last axis of any rank (nn.Linear on
    (N, tokens, C)); MXNet's own entry, linalg_gemm2, needs equal ranks. Other MatMuls go to it."""
    from mxnet.contrib.onnx.onnx2mx import _op_translations

    from rosetta.frameworks.mxnet import import_mxnet

    weight = importer._params.get(inputs[1].name)
    if weight is not None and len(weight.shape) == 2:
        return import_mxnet().sym.dot(inputs[0], inputs[1]), attrs, inputs
    return _op_translations.matrix_multiplication(attrs, inputs, importer)


def name_omitted_inputs(model):
    """The omitted optional inputs ("") of GRU and LSTM, whose converters read them, named OMITTED,
    an initializer no converter uses (module docstring)."""
    from onnx import numpy_helper

    named = False
    for node in model.graph.node:
        if node.op_type in ("GRU", "LSTM") and "" in node.input:
            node.input[:] = [name or OMITTED for name in node.input]
            named = True
    if named:
        model.graph.initializer.append(numpy_helper.from_array(np.zeros(1, np.float32), OMITTED))
    return model


def shapes_as_references(model):
    """Expand and ConstantOfShape whose shape is traced (onnx_graph.shape_tracer) to constants and axes of graph
    tensors become RosettaExpand(x, tensors...) with attributes sizes (-1 for a traced axis), references and
    axes; ConstantOfShape's x is its value. MXNet-only: the importer's `_expand_to_references` reads it."""
    from onnx import helper, numpy_helper

    from rosetta.frameworks.onnx_graph import shape_tracer

    elements, _ = shape_tracer(model)
    nodes = []
    for node in model.graph.node:
        shape = elements(node.input[0] if node.op_type == "ConstantOfShape" else node.input[-1]) \
            if node.op_type in ("Expand", "ConstantOfShape") else None
        if not shape or any(isinstance(e, int) and e < 1 for e in shape):  # rank 0, or 0 (MXNet: unknown)
            nodes.append(node)
            continue
        tensors = list(dict.fromkeys(e[0] for e in shape if not isinstance(e, int)))
        if node.op_type == "ConstantOfShape":
            value = next((numpy_helper.to_array(a.t) for a in node.attribute if a.name == "value"), np.zeros(1, np.float32))
            x = f"{node.output[0]}_value"
            model.graph.initializer.append(numpy_helper.from_array(value.reshape(1), x))
        else:
            x = node.input[0]
        nodes.append(helper.make_node(
            "RosettaExpand", [x, *tensors], list(node.output), name=node.name,
            sizes=[e if isinstance(e, int) else -1 for e in shape],
            references=[-1 if isinstance(e, int) else tensors.index(e[0]) for e in shape],
            axes=[-1 if isinstance(e, int) else e[1] for e in shape]))
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    return rw.remove_dead_nodes(model)


def scalar_gather_indices(model):
    """A Gather by a constant scalar index becomes a Gather by [index] and a Squeeze of that axis: MXNet's
    importer loads a scalar initializer as shape (1,), so `take` kept the gathered axis (torch's h_n[-1])."""
    from onnx import helper, numpy_helper

    from rosetta.frameworks.onnx_graph import constant_values, default_opset

    constants, opset = constant_values(model), default_opset(model)
    nodes = []
    for node in model.graph.node:
        nodes.append(node)
        if node.op_type != "Gather" or node.input[1] not in constants or constants[node.input[1]].ndim != 0:
            continue
        axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
        output, gathered = node.output[0], f"{node.output[0]}_gathered"
        model.graph.initializer.append(numpy_helper.from_array(constants[node.input[1]].reshape(1), f"{output}_index"))
        node.input[1], node.output[0] = f"{output}_index", gathered
        if opset >= 13:
            model.graph.initializer.append(numpy_helper.from_array(np.array([axis], np.int64), f"{output}_axes"))
            nodes.append(helper.make_node("Squeeze", [gathered, f"{output}_axes"], [output]))
        else:
            nodes.append(helper.make_node("Squeeze", [gathered], [output], axes=[axis]))
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    return model


def _refuse_omitted_inputs(model) -> None:
    """MXNet's importer looks every input up by name, so an omitted optional input ("", e.g. Resize's roi)
    fails with KeyError: ''. Say which op, before the import."""
    for node in model.graph.node:
        if "" in node.input:
            raise RosettaError(f"ONNX op {node.op_type} with an omitted optional input cannot be converted to mxnet: "
                               "MXNet's ONNX importer reads every input by name")


FLOAT_TYPES = (1, 10, 11, 16)  # onnx.TensorProto FLOAT, FLOAT16, DOUBLE, BFLOAT16


# The rewrites MXNet's importer needs, in order: ConstantOfShape after the zero initial states (built with it)
# are dropped; LayerNormalization before the axes move to attributes (its ReduceMeans take them as inputs from
# opset 18); shapes_as_references before too, as it infers shapes (an opset-17 Unsqueeze with its axes as an
# attribute fails inference).
REWRITES = (rw.constant_reshape_shapes, rw.drop_zero_initial_states, rw.constant_of_shape_as_initializers,
            rw.decompose_layer_normalization, rw.positive_gather_indices, rw.bounded_slices, same_shape_adds,
            shapes_as_references, scalar_gather_indices, rw.axes_inputs_to_attributes, rw.drop_default_training_mode,
            rw.bypass_identity_of_initializers, name_omitted_inputs, rw.constants_to_initializers,
            rw.initializers_as_inputs)


def rewrite_for_mxnet(model):
    return rw.apply(REWRITES, model)


# rosetta's entries in MXNet's importer's operator table (module docstring): ONNX ops it lacks, ops it gets
# wrong and replaced ones, and the ops rosetta's rewrites write (Rosetta*)
CONVERTERS = {"GRU": _gru, "Erf": _erf, "LSTM": _lstm, "Mod": _mod, "RosettaExpand": _expand_to_references,
              "Cast": _cast, "GlobalMaxPool": _global_max_pool, "MatMul": _matmul, "Slice": _slice, "Relu": _relu,
              "MaxPool": _max_pool, "RosettaSameShapeAdd": _same_shape_add}


def install_converters() -> None:
    """The one place rosetta changes MXNet: its importer's operator table (`_import_helper._convert_map`, which
    the importer reads per node and which has no public API to extend), given CONVERTERS' entries."""
    from mxnet.contrib.onnx.onnx2mx import _import_helper

    _import_helper._convert_map.update(CONVERTERS)


def convert(source: Path, staging: Path, options: dict) -> Manifest:
    import onnx

    from rosetta.frameworks.mxnet import PARAMS_FILE, SYMBOL_FILE, import_mxnet, install_onnx_mapping

    mx = import_mxnet()
    install_onnx_mapping()
    install_converters()
    previous = Manifest.read(source)
    model = onnx.load(str(previous.artifact_path(source)))
    weights = {i.name for i in model.graph.initializer if i.data_type in FLOAT_TYPES}
    model = rewrite_for_mxnet(model)
    _refuse_omitted_inputs(model)
    # initializers that were graph constants (Constant nodes, rewritten indices), not weights: a trainer
    # must not train them, although MXNet holds every initializer as a parameter
    constants = sorted(i.name for i in model.graph.initializer if i.name not in weights)
    artifact = Path(staging) / ARTIFACT
    artifact.mkdir()
    fixed = Path(staging) / "mxnet-input.onnx"
    onnx.save(model, str(fixed))
    try:
        symbol, arg_params, aux_params = mx.contrib.onnx.import_model(str(fixed))
    except RosettaError:
        raise
    except NotImplementedError as error:  # "Operator X not implemented."
        found = re.search(r"Operator (\w+) not implemented", str(error))
        if found:
            raise RosettaError(f"ONNX op {found.group(1)} cannot be converted to mxnet: MXNet's ONNX importer has no "
                               "converter for it") from None
        raise RosettaError(f"MXNet's ONNX importer: {error}") from None
    finally:
        fixed.unlink()
    mx.model.save_checkpoint(str(artifact / "model"), 0, symbol, arg_params, aux_params)
    assert (artifact / SYMBOL_FILE).is_file() and (artifact / PARAMS_FILE).is_file()
    return Manifest(
        artifact=ARTIFACT, format="mxnet", source=previous.source,
        converter={"name": "mxnet.contrib.onnx.import_model", "version": mx.__version__, "framework_version": mx.__version__,
                   "options": {"rewrites": rw.names(REWRITES),
                               "converters": {op: f"{__name__}.{function.__name__}" for op, function in CONVERTERS.items()}},
                   "constant_parameters": constants},
        inputs=previous.inputs, outputs=previous.outputs, sha256=sha256_of(artifact), opset=previous.opset,
    )
