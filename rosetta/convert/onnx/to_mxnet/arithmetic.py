"""Arithmetic: Mod (the importer has none), Erf (none: the exact GELU of transformers and mixers), MatMul by a
2-D weight (`dot`, which contracts the last axis of any rank: the importer's `linalg_gemm2` needs equal ranks),
Min and Max that broadcast (the importer's `minimum`/`maximum` need equal shapes), Relu and same-shape Adds on the
operators MXNet's oneDNN backend runs.

Speed (rosetta bench --baseline native): the importer writes Relu as `relu` and every Add as `broadcast_add`,
operators MXNet's oneDNN backend does not run, where a Gluon model has Activation and elemwise_add; the
converted ResNet-50 took 2.02x the native Gluon model's time. `relu` writes Activation(relu), Adds whose
operands have the same shape (`same_shape_adds`) become elemwise_add, and pooling.max_pool puts symmetric
padding inside Pooling instead of an edge-mode Pad before it: 1.07x.
"""

from __future__ import annotations

from rosetta.convert.onnx.rewrites import rewrite
from rosetta.convert.onnx.to_mxnet.recurrent import OMITTED
from rosetta.convert.onnx.to_mxnet.registry import add_converter, mxnet_own, symbols
from rosetta.errors import RosettaError


@add_converter("Mod", 10)
def mod(attrs, inputs, importer):
    """ONNX Mod: fmod=0 (integers) takes the divisor's sign, as MXNet's broadcast_mod; fmod=1 is C's fmod,
    the remainder of the magnitudes with the dividend's sign, and NaN for a zero divisor (MXNet's mod gives 0;
    0 / 0 adds the NaN, 0 / b a zero elsewhere)."""
    sym = symbols()
    a, b = inputs
    if not attrs.get("fmod", 0):
        return sym.broadcast_mod(a, b), attrs, inputs
    remainder = sym.broadcast_mod(sym.abs(a), sym.abs(b))
    signed = sym.broadcast_mul(1 - 2 * (a < 0), remainder)
    return sym.broadcast_add(signed, sym.zeros_like(b) / b), attrs, inputs


@add_converter("Erf", 9)
def erf(attrs, inputs, importer):
    """ONNX Erf (the exact GELU's) -> mx.sym.erf: MXNet has the operator, its importer no entry for it."""
    return symbols().erf(inputs[0]), attrs, inputs


@add_converter("MatMul", 1)
def matmul(attrs, inputs, importer):
    """ONNX MatMul by a 2-D weight -> mx.sym.dot, which contracts the last axis of any rank (nn.Linear on
    (N, tokens, C)); MXNet's own entry, linalg_gemm2, needs equal ranks. Other MatMuls go to it."""
    weight = importer._params.get(inputs[1].name)
    if weight is not None and len(weight.shape) == 2:
        return symbols().dot(inputs[0], inputs[1]), attrs, inputs
    return mxnet_own("MatMul")(attrs, inputs, importer)


@add_converter("Gemm", 1)
def gemm(attrs, inputs, importer):
    """ONNX Gemm without its optional C (timm's HaloNet attention): MXNet's own entry adds beta * inputs[2] and
    raised IndexError; given a zero of shape (1,) instead, which broadcasts to any product."""
    if len(inputs) < 3:
        inputs = list(inputs) + [symbols().zeros(shape=(1,))]
    return mxnet_own("Gemm")(attrs, inputs, importer)


def _broadcasting(name: str):
    def convert(attrs, inputs, importer):
        """ONNX Min/Max of any number of inputs, broadcast numpy-style as ONNX does (Apertus' xIELU clamps a
        tensor by a scalar): pairwise broadcast_minimum/broadcast_maximum."""
        operator = getattr(symbols(), f"broadcast_{name}")
        result = inputs[0]
        for other in inputs[1:]:
            result = operator(result, other)
        return result, attrs, inputs
    return convert


add_converter("Min", 1)(_broadcasting("minimum"))
add_converter("Max", 1)(_broadcasting("maximum"))


@add_converter("Relu", 1)
def relu(attrs, inputs, importer):
    """ONNX Relu -> Activation(relu), which MXNet runs with oneDNN; the importer's own entry, the plain `relu`
    operator, is not: on ResNet-50 features (batch 32, this CPU) 1.4 s of 5.5 s per batch."""
    return symbols().Activation(inputs[0], act_type="relu"), attrs, inputs


@add_converter("RosettaSameShapeAdd", 1)
def same_shape_add(attrs, inputs, importer):
    """RosettaSameShapeAdd (same_shape_adds) -> elemwise_add, which MXNet runs with oneDNN; the importer writes
    every Add as broadcast_add, which is not (ResNet-50's 16 residual adds: 1.2 s of 5.5 s per batch)."""
    return symbols().elemwise_add(*inputs), attrs, inputs


@rewrite
def same_shape_adds(model):
    """Add nodes whose operands have the same shape, axis by axis (equal sizes, or the same symbolic size such
    as the batch), become RosettaSameShapeAdd: nothing to broadcast. Operands of unknown or different shape stay
    Add. MXNet-only: `same_shape_add` reads it. Each output keeps its inferred type and shape as value_info: shape
    inference knows no Rosetta op, and the rewrites after this one (shapes_as_references) read shapes past it."""
    from onnx import shape_inference

    inferred = shape_inference.infer_shapes(model)
    shapes, values = {init.name: list(init.dims) for init in model.graph.initializer}, {}
    for value in list(inferred.graph.value_info) + list(inferred.graph.input) + list(inferred.graph.output):
        values[value.name] = value
        if value.type.tensor_type.HasField("shape"):
            shapes[value.name] = [d.dim_value if d.HasField("dim_value") else (d.dim_param or None)
                                  for d in value.type.tensor_type.shape.dim]
    known = {value.name for value in model.graph.value_info} | {value.name for value in model.graph.output}
    for node in model.graph.node:
        if node.op_type != "Add" or len(node.input) != 2:
            continue
        first, second = (shapes.get(name) for name in node.input)
        if first is not None and first == second and None not in first:
            node.op_type = "RosettaSameShapeAdd"
            if node.output[0] in values and node.output[0] not in known:
                model.graph.value_info.append(values[node.output[0]])
    return model


@add_converter("RosettaIntegerDiv", 1)
def integer_div(attrs, inputs, importer):
    """ONNX Div of integers (integer_divisions) -> the quotient truncated toward zero, as ONNX's integer Div
    computes it: MXNet carries integers as float32, where broadcast_div alone keeps the fraction."""
    sym = symbols()
    return sym.trunc(sym.broadcast_div(*inputs)), attrs, inputs


@rewrite
def integer_divisions(model):
    """MXNet: Div whose operands are integers becomes RosettaIntegerDiv (`integer_div` reads it)."""
    from rosetta.frameworks.onnx_graph import element_types

    types = element_types(model)
    integers = {2, 3, 4, 5, 6, 7, 12, 13}  # onnx.TensorProto's (u)int8/16/32/64
    for node in model.graph.node:
        if node.op_type == "Div" and types.get(node.input[0]) in integers:
            node.op_type = "RosettaIntegerDiv"
    return model


@add_converter("PRelu", 1)
def prelu(attrs, inputs, importer):
    """ONNX PRelu, its slope broadcast numpy-style: max(x, 0) + min(x, 0) * slope. A constant 1-D slope is one
    per channel (axis 1) as torch's older exporter writes it, and as the importer's LeakyReLU takes it."""
    sym = symbols()
    x, slope = inputs
    constant = importer._params.get(slope.name)
    if constant is not None and len(constant.shape) == 1 and constant.shape[0] > 1:
        return sym.LeakyReLU(x, gamma=slope, act_type="prelu"), attrs, inputs
    return sym.broadcast_add(sym.relu(x), sym.broadcast_mul(sym.minimum(x, 0), slope)), attrs, inputs


_REDUCTIONS = {"ReduceSum": "sum", "ReduceMean": "mean", "ReduceMax": "max", "ReduceMin": "min", "ReduceProd": "prod"}


def _reduction(op_type: str):
    """ONNX Reduce* over the axes attribute (rewrites.axes_inputs_to_attributes puts constant axes there), all
    axes where there is none (or the input itself with noop_with_empty_axes), keepdims 1 unless given: the
    importer's own drop the axes of ReduceSumSquare, ReduceLogSum and ReduceLogSumExp, and fail on none."""
    def convert(attrs, inputs, importer):
        sym = symbols()
        if len(inputs) > 1:  # rewrites.axes_inputs_to_attributes moved every constant one
            raise RosettaError(f"{op_type} with axes computed at run time cannot be converted to mxnet")
        axes = tuple(int(a) for a in attrs.get("axes", ()))
        if not axes and attrs.get("noop_with_empty_axes", 0):
            return sym.identity(inputs[0]), attrs, inputs[:1]
        options = {"axis": axes or None, "keepdims": bool(attrs.get("keepdims", 1))}
        x = inputs[0]
        if op_type in _REDUCTIONS:
            result = getattr(sym, _REDUCTIONS[op_type])(x, **options)
        elif op_type == "ReduceL1":
            result = sym.sum(sym.abs(x), **options)
        elif op_type == "ReduceL2":
            result = sym.sqrt(sym.sum(sym.square(x), **options))
        elif op_type == "ReduceSumSquare":
            result = sym.sum(sym.square(x), **options)
        elif op_type == "ReduceLogSum":
            result = sym.log(sym.sum(x, **options))
        else:  # ReduceLogSumExp, shifted by the max for range: log(sum(exp(x - m))) + m
            peak = sym.max(x, axis=axes or None, keepdims=True)
            summed = sym.sum(sym.exp(sym.broadcast_sub(x, peak)), **options)
            result = sym.broadcast_add(sym.log(summed), peak if options["keepdims"] else
                                       sym.max(x, **options))
        return result, attrs, inputs[:1]
    convert.__name__ = convert.__qualname__ = f"reduction_{op_type}"
    return convert


for _op in (*_REDUCTIONS, "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"):
    add_converter(_op, 1)(_reduction(_op))


@add_converter("LpNormalization", 1)
def lp_normalization(attrs, inputs, importer):
    """ONNX LpNormalization: x over its L1 or L2 norm along `axis` (the importer's drops the axis it keeps)."""
    sym = symbols()
    x, axis, p = inputs[0], int(attrs.get("axis", -1)), int(attrs.get("p", 2))
    norm = sym.sum(sym.abs(x), axis=axis, keepdims=True) if p == 1 else \
        sym.sqrt(sym.sum(sym.square(x), axis=axis, keepdims=True))
    # a norm of 0 is taken as 1, as ONNX's reference computes it: zeros stay zeros (0 / 0 gave NaN)
    return sym.broadcast_div(x, norm + (norm == 0)), attrs, inputs


def _softplus(x):
    """log(1 + exp(x)) as relu(x) + log1p(exp(-|x|)): exact to float32 where MXNet's Activation(softrelu), which
    the importer writes, computes log(1 + exp(x)) and loses the small values (Mish_expanded FAILed by 9e-6
    where the output is 1e-5)."""
    sym = symbols()
    return sym.relu(x) + sym.log1p(sym.exp(-sym.abs(x)))


@add_converter("Softplus", 1)
def softplus(attrs, inputs, importer):
    """ONNX Softplus, computed without the importer's loss of small values (_softplus)."""
    return _softplus(inputs[0]), attrs, inputs


@add_converter("Mish", 18)
def mish(attrs, inputs, importer):
    """ONNX Mish (opset 18; the importer has none): x * tanh(softplus(x))."""
    return inputs[0] * symbols().tanh(_softplus(inputs[0])), attrs, inputs


@add_converter("LRN", 1)
def lrn(attrs, inputs, importer):
    """ONNX LRN -> MXNet's, its `bias` passed as MXNet's `knorm` (whose default is 2; ONNX's bias defaults to 1)."""
    return symbols().LRN(inputs[0], alpha=float(attrs.get("alpha", 1e-4)), beta=float(attrs.get("beta", 0.75)),
                         knorm=float(attrs.get("bias", 1.0)), nsize=int(attrs["size"])), attrs, inputs


@add_converter("Clip", 1)
def clip(attrs, inputs, importer):
    """ONNX Clip as min(max(x, min), max), which gives max where min > max, as ONNX says (MXNet's clip gives
    min); its bounds are attributes before opset 11, constant inputs from it (an omitted one named OMITTED)."""
    sym = symbols()
    x = inputs[0]
    for index, name, bound in ((1, "min", sym.maximum), (2, "max", sym.minimum)):
        if len(inputs) > index and inputs[index].name != OMITTED:
            if inputs[index].name not in importer._params:
                raise RosettaError("Clip with bounds computed at run time cannot be converted to mxnet")
            x = bound(x, float(importer._params[inputs[index].name].asnumpy().ravel()[0]))
        elif attrs.get(name) is not None:
            x = bound(x, float(attrs[name]))
    return x, attrs, inputs[:1]


@add_converter("BatchNormalization", 1)
def batch_normalization(attrs, inputs, importer):
    """The importer's BatchNorm with ONNX's default epsilon written out: without it MXNet uses its own, 1e-3."""
    return mxnet_own("BatchNormalization")({"epsilon": 1e-5, **attrs}, inputs, importer)


@add_converter("HardSwish", 14)
def hard_swish(attrs, inputs, importer):
    """ONNX HardSwish (the importer has none): x * clip(x + 3, 0, 6) / 6, ONNX's x * HardSigmoid(1/6, 0.5)(x)."""
    sym = symbols()
    return inputs[0] * sym.clip(inputs[0] + 3, 0, 6) / 6, attrs, inputs



@add_converter("ThresholdedRelu", 10)
def thresholded_relu(attrs, inputs, importer):
    """ONNX ThresholdedRelu (the importer has none): x where x > alpha, else 0."""
    sym = symbols()
    x = inputs[0]
    return sym.where(x > float(attrs.get("alpha", 1.0)), x, sym.zeros_like(x)), attrs, inputs
