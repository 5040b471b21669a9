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
linear_before_reset=1 formulation).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

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
    data, w_sym, r_sym = inputs[:3]
    w = importer._params[w_sym.name].asnumpy()[0]
    r = importer._params[r_sym.name].asnumpy()[0]
    hidden = int(attrs["hidden_size"])
    b = importer._params[inputs[3].name].asnumpy()[0] if len(inputs) > 3 else np.zeros(6 * hidden, np.float32)
    flat = np.concatenate([_reorder(w).ravel(), _reorder(r).ravel(),
                           _reorder(b[: 3 * hidden]).ravel(), _reorder(b[3 * hidden:]).ravel()]).astype(np.float32)
    name = f"{w_sym.name}_mxnet_gru_parameters"
    importer._params[name] = mx.nd.array(flat)
    parameters = mx.sym.Variable(name, shape=flat.shape)
    if len(inputs) > 5:
        state = inputs[5]
    else:  # omitted initial_h: zeros of shape (1, batch, hidden), built from the data's batch size
        column = mx.sym.slice_axis(mx.sym.slice_axis(data, axis=0, begin=0, end=1), axis=2, begin=0, end=1)
        state = mx.sym.broadcast_axis(mx.sym.zeros_like(column), axis=2, size=hidden)
    rnn = mx.sym.RNN(data=data, parameters=parameters, state=state, state_size=hidden, num_layers=1,
                     mode="gru", state_outputs=True)
    return mx.sym.Group([mx.sym.expand_dims(rnn[0], axis=1), rnn[1]]), attrs, inputs


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


def _refuse_omitted_inputs(model) -> None:
    """MXNet's importer looks every input up by name, so an omitted optional input ("", e.g. Resize's roi)
    fails with KeyError: ''. Say which op, before the import."""
    for node in model.graph.node:
        if "" in node.input:
            raise RosettaError(f"ONNX op {node.op_type} with an omitted optional input cannot be converted to mxnet: "
                               "MXNet's ONNX importer reads every input by name")


FLOAT_TYPES = (1, 10, 11, 16)  # onnx.TensorProto FLOAT, FLOAT16, DOUBLE, BFLOAT16


def rewrite_for_mxnet(model):
    from rosetta.convert.onnx import rewrites as rw

    # ConstantOfShape after the zero initial states (built with it) are dropped; LayerNormalization before
    # the axes move to attributes (its ReduceMeans take them as inputs from opset 18)
    for rewrite in (rw.constant_reshape_shapes, rw.drop_zero_initial_states, rw.constant_of_shape_as_initializers,
                    rw.decompose_layer_normalization, rw.positive_gather_indices, rw.bounded_slices,
                    rw.axes_inputs_to_attributes, rw.drop_default_training_mode, rw.bypass_identity_of_initializers,
                    rw.constants_to_initializers, rw.initializers_as_inputs):
        model = rewrite(model)
    return model


def convert(source: Path, staging: Path, options: dict) -> Manifest:
    import onnx

    from rosetta.frameworks.mxnet import PARAMS_FILE, SYMBOL_FILE, import_mxnet, install_onnx_mapping

    mx = import_mxnet()
    install_onnx_mapping()
    from mxnet.contrib.onnx.onnx2mx import _import_helper

    _import_helper._convert_map.setdefault("GRU", _gru)
    _import_helper._convert_map.setdefault("Erf", _erf)
    _import_helper._convert_map["MatMul"] = _matmul  # wraps MXNet's own, see _matmul
    _import_helper._convert_map["Slice"] = _slice  # replaces MXNet's own, see _slice
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
                   "options": {"rewrites": "rosetta.convert.onnx.to_mxnet.rewrite_for_mxnet", "gru": "rosetta",
                               "slice": "rosetta"},
                   "constant_parameters": constants},
        inputs=previous.inputs, outputs=previous.outputs, sha256=sha256_of(artifact), opset=previous.opset,
    )
