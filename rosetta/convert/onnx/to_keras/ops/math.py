"""Elementwise math, comparisons, logic, Where, reductions, ArgMax/ArgMin, TopK, CumSum and the normalizations by a
norm, as keras.ops operations (serialised in the model's config, no Lambda; none has weights). Unary ops keep
their input's layout; the others compute in ONNX's layout (layout.onnx_order), where keras.ops broadcast and
reduce as ONNX's numpy-style ops do, constants passed as arrays."""

from __future__ import annotations

import numpy as np

from rosetta.convert.onnx.to_keras.context import Mapped
from rosetta.convert.onnx.to_keras.layout import add, in_onnx_order, onnx_order, operands
from rosetta.convert.onnx.to_keras.registry import add_converter
from rosetta.errors import RosettaError


def unary(context, node, compute, nonnegative: bool = False) -> list:
    """compute(keras.ops, tensor) elementwise: the input's layout is kept."""
    x = context.values[node.input[0]]
    return [Mapped(compute(context.keras.ops, x.tensor), x.axes, x.feature_order, nonnegative)]


_UNARY = {
    "Abs": (1, lambda ops, x, a: ops.abs(x)), "Neg": (1, lambda ops, x, a: ops.negative(x)),
    "Exp": (1, lambda ops, x, a: ops.exp(x)), "Log": (1, lambda ops, x, a: ops.log(x)),
    "Sqrt": (1, lambda ops, x, a: ops.sqrt(x)), "Reciprocal": (1, lambda ops, x, a: ops.reciprocal(x)),
    "Floor": (1, lambda ops, x, a: ops.floor(x)), "Ceil": (1, lambda ops, x, a: ops.ceil(x)),
    "Round": (11, lambda ops, x, a: ops.round(x)),  # half to even, as ONNX's
    "Sin": (7, lambda ops, x, a: ops.sin(x)), "Cos": (7, lambda ops, x, a: ops.cos(x)),
    "Tan": (7, lambda ops, x, a: ops.tan(x)), "Asin": (7, lambda ops, x, a: ops.arcsin(x)),
    "Acos": (7, lambda ops, x, a: ops.arccos(x)), "Atan": (7, lambda ops, x, a: ops.arctan(x)),
    "Sinh": (9, lambda ops, x, a: ops.sinh(x)), "Cosh": (9, lambda ops, x, a: ops.cosh(x)),
    "Asinh": (9, lambda ops, x, a: ops.arcsinh(x)), "Acosh": (9, lambda ops, x, a: ops.arccosh(x)),
    "Atanh": (9, lambda ops, x, a: ops.arctanh(x)), "Erf": (9, lambda ops, x, a: ops.erf(x)),
    "Sign": (9, lambda ops, x, a: ops.sign(x)), "Not": (1, lambda ops, x, a: ops.logical_not(x)),
    "BitwiseNot": (18, lambda ops, x, a: ops.bitwise_invert(x)),
    "IsNaN": (9, lambda ops, x, a: ops.isnan(x)),
    "IsInf": (10, lambda ops, x, a: ops.logical_and(ops.isinf(x), (ops.greater(x, 0) if not a.get("detect_negative", 1)
                                                                  else ops.less(x, 0) if not a.get("detect_positive", 1)
                                                                  else ops.isinf(x)))),
    "Softplus": (1, lambda ops, x, a: ops.softplus(x)), "Softsign": (1, lambda ops, x, a: ops.softsign(x)),
    "Elu": (6, lambda ops, x, a: ops.elu(x, a.get("alpha", 1.0))),
    "Selu": (6, lambda ops, x, a: ops.multiply(a.get("gamma", 1.0507009873554805),
                                               ops.where(ops.greater(x, 0), x, ops.multiply(
                                                   a.get("alpha", 1.6732632423543772), ops.expm1(x))))),
    "LeakyRelu": (6, lambda ops, x, a: ops.leaky_relu(x, a.get("alpha", 0.01))),
    "ThresholdedRelu": (10, lambda ops, x, a: ops.where(ops.greater(x, a.get("alpha", 1.0)), x, ops.zeros_like(x))),
    "Celu": (12, lambda ops, x, a: ops.celu(x, a.get("alpha", 1.0))),
    "Mish": (18, lambda ops, x, a: ops.multiply(x, ops.tanh(ops.softplus(x)))),
}


def _unary_converter(op: str, compute):
    def convert(context, node, attrs):
        return unary(context, node, lambda ops, x: compute(ops, x, attrs))
    convert.__name__ = convert.__qualname__ = op.lower()
    return convert


for _op, (_version, _compute) in _UNARY.items():
    add_converter(_op, _version)(_unary_converter(_op, _compute))


def _integer(dtype) -> bool:
    return np.dtype(str(dtype)).kind in "iu"


def broadcast(context, node, compute) -> list:
    """compute(keras.ops, *operands) in ONNX's layout (numpy broadcasting, as ONNX's)."""
    return [in_onnx_order(compute(context.keras.ops, *operands(context, node.input)))]


def _divide(ops, a, b):
    """ONNX Div: of integers, the quotient truncated toward zero (keras.ops.divide gives a float)."""
    dtype = a.dtype
    if _integer(dtype):  # in float64, exact for integers of up to 53 bits
        return ops.cast(ops.trunc(ops.divide(ops.cast(a, "float64"), ops.cast(b, "float64"))), str(dtype))
    return ops.divide(a, b)


def _modulo(ops, a, b, fmod: int):
    """ONNX Mod: fmod=0 takes the divisor's sign (numpy's mod), fmod=1 the dividend's (C's fmod)."""
    if not fmod:
        return ops.mod(a, b)
    return ops.subtract(a, ops.multiply(ops.trunc(ops.divide(a, b)), b))


BINARY = {
    "Add": lambda ops, a, b, attrs: add(ops, a, b), "Sub": lambda ops, a, b, attrs: ops.subtract(a, b),
    "Mul": lambda ops, a, b, attrs: ops.multiply(a, b), "Div": lambda ops, a, b, attrs: _divide(ops, a, b),
    "Pow": lambda ops, a, b, attrs: ops.power(a, b),
    "Mod": lambda ops, a, b, attrs: _modulo(ops, a, b, attrs.get("fmod", 0)),
    "Equal": lambda ops, a, b, attrs: ops.equal(a, b), "Less": lambda ops, a, b, attrs: ops.less(a, b),
    "Greater": lambda ops, a, b, attrs: ops.greater(a, b), "LessOrEqual": lambda ops, a, b, attrs: ops.less_equal(a, b),
    "GreaterOrEqual": lambda ops, a, b, attrs: ops.greater_equal(a, b),
    "And": lambda ops, a, b, attrs: ops.logical_and(a, b), "Or": lambda ops, a, b, attrs: ops.logical_or(a, b),
    "Xor": lambda ops, a, b, attrs: ops.logical_xor(a, b),
    "BitwiseAnd": lambda ops, a, b, attrs: ops.bitwise_and(a, b),
    "BitwiseOr": lambda ops, a, b, attrs: ops.bitwise_or(a, b),
    "BitwiseXor": lambda ops, a, b, attrs: ops.bitwise_xor(a, b),
}


def binary(context, node, attrs) -> list:
    """A binary ONNX op by BINARY in ONNX's layout; both operands constant are folded before mapping."""
    compute = BINARY[node.op_type]
    return broadcast(context, node, lambda ops, a, b: compute(ops, a, b, attrs))


for _op, _version in (("Mod", 10), ("Equal", 7), ("Less", 7), ("Greater", 7), ("LessOrEqual", 12),
                      ("GreaterOrEqual", 12), ("And", 7), ("Or", 7), ("Xor", 7), ("BitwiseAnd", 18),
                      ("BitwiseOr", 18), ("BitwiseXor", 18)):
    add_converter(_op, _version)(binary)


def _variadic(name: str):
    """Max, Min, Sum and Mean of any number of operands, broadcast together."""
    combine = {"Max": lambda ops, a, b: ops.maximum(a, b), "Min": lambda ops, a, b: ops.minimum(a, b),
               "Sum": add, "Mean": add}[name]

    def convert(context, node, attrs):
        def compute(ops, first, *rest):
            result = first
            for value in rest:
                result = combine(ops, result, value)
            return ops.divide(result, float(1 + len(rest))) if name == "Mean" else result
        return broadcast(context, node, compute)
    convert.__name__ = convert.__qualname__ = name.lower()
    return convert


for _op in ("Max", "Min", "Sum", "Mean"):  # opset 6: all of one shape; 8 on: broadcast
    add_converter(_op, 6)(_variadic(_op))


@add_converter("Where", 9)
def where(context, node, attrs):
    return broadcast(context, node, lambda ops, condition, x, y: ops.where(condition, x, y))


# ---- reductions --------------------------------------------------------------------------------------------------
REDUCTIONS = {
    "ReduceSum": lambda ops, x, axes, keep: ops.sum(x, axis=axes, keepdims=keep),
    "ReduceMean": lambda ops, x, axes, keep: ops.mean(x, axis=axes, keepdims=keep),
    "ReduceMax": lambda ops, x, axes, keep: ops.max(x, axis=axes, keepdims=keep),
    "ReduceMin": lambda ops, x, axes, keep: ops.min(x, axis=axes, keepdims=keep),
    "ReduceProd": lambda ops, x, axes, keep: ops.prod(x, axis=axes, keepdims=keep),
    "ReduceL1": lambda ops, x, axes, keep: ops.sum(ops.abs(x), axis=axes, keepdims=keep),
    "ReduceL2": lambda ops, x, axes, keep: ops.sqrt(ops.sum(ops.square(x), axis=axes, keepdims=keep)),
    "ReduceSumSquare": lambda ops, x, axes, keep: ops.sum(ops.square(x), axis=axes, keepdims=keep),
    "ReduceLogSum": lambda ops, x, axes, keep: ops.log(ops.sum(x, axis=axes, keepdims=keep)),
    "ReduceLogSumExp": lambda ops, x, axes, keep: ops.logsumexp(x, axis=axes, keepdims=keep),
}


def reduction(context, node, attrs, axes) -> list:
    """A Reduce* over `axes` (None or empty: all, or with noop_with_empty_axes the input itself), in ONNX's
    layout; ReduceMean over all axes but the batch and one is a global pooling layer instead (pooling.py)."""
    if axes is not None and len(axes) == 0:
        axes = None
    if axes is None and attrs.get("noop_with_empty_axes", 0):
        return [context.values[node.input[0]]]
    x = onnx_order(context, context.values[node.input[0]])
    rank = len(x.axes)
    chosen = None if axes is None else tuple(sorted(int(a) % rank for a in axes))
    return [in_onnx_order(REDUCTIONS[node.op_type](context.keras.ops, x.tensor, chosen, bool(attrs.get("keepdims", 1))))]


def _reduction_attribute(context, node, attrs):
    """A reduction whose axes are an attribute (before opset 13 for ReduceSum, 18 for the others)."""
    return reduction(context, node, attrs, attrs.get("axes"))


def _reduction_input(context, node, attrs):
    """A reduction whose axes are an optional input (opset 13 for ReduceSum, 18 for the others)."""
    axes = context.optional_constant(node, 1, f"{node.op_type} axes")
    return reduction(context, node, attrs, None if axes is None else [int(a) for a in np.ravel(axes)])


for _op in REDUCTIONS:
    if _op != "ReduceMean":  # ReduceMean's converters (pooling.py) try a global pooling layer first
        add_converter(_op, 1)(_reduction_attribute)
        add_converter(_op, 13 if _op == "ReduceSum" else 18)(_reduction_input)


def _arg_extreme(context, node, attrs):
    """ArgMax/ArgMin along `axis` as int64; select_last_index by the first extreme of the reversed axis."""
    x = onnx_order(context, context.values[node.input[0]])
    ops, axis = context.keras.ops, attrs.get("axis", 0) % len(x.axes)
    find = ops.argmax if node.op_type == "ArgMax" else ops.argmin
    keep = bool(attrs.get("keepdims", 1))
    if attrs.get("select_last_index", 0):
        size = x.tensor.shape[axis]
        if size is None:
            raise RosettaError(f"keras mapper: {node.op_type} with select_last_index along an axis of unknown size")
        index = ops.subtract(size - 1, find(ops.flip(x.tensor, axis=axis), axis=axis, keepdims=keep))
    else:
        index = find(x.tensor, axis=axis, keepdims=keep)
    return [in_onnx_order(ops.cast(index, "int64"))]


add_converter("ArgMax", 1)(_arg_extreme)
add_converter("ArgMin", 1)(_arg_extreme)


@add_converter("CumSum", 11)
def cumsum(context, node, attrs):
    """CumSum along a constant axis, `exclusive` (each sum without its own element) and `reverse`."""
    x = onnx_order(context, context.values[node.input[0]])
    ops = context.keras.ops
    axis = int(np.ravel(context.constant(node.input[1], "CumSum axis"))[0]) % len(x.axes)
    tensor = ops.flip(x.tensor, axis=axis) if attrs.get("reverse", 0) else x.tensor
    summed = ops.cumsum(tensor, axis=axis)
    if attrs.get("exclusive", 0):
        summed = ops.subtract(summed, tensor)
    return [in_onnx_order(ops.flip(summed, axis=axis) if attrs.get("reverse", 0) else summed)]


@add_converter("TopK", 11)
def top_k(context, node, attrs):
    """The k largest (or smallest) along a constant axis, values and int64 indices; keras.ops.top_k works on the
    last axis, so another is moved there and back. Equal values come lower index first, as ONNX says."""
    x = onnx_order(context, context.values[node.input[0]])
    ops, axis = context.keras.ops, attrs.get("axis", -1) % len(x.axes)
    k = int(np.ravel(context.constant(node.input[1], "TopK k"))[0])
    largest = bool(attrs.get("largest", 1))
    tensor = ops.moveaxis(x.tensor, axis, -1)
    values, indices = ops.top_k(tensor if largest else ops.negative(tensor), k, sorted=True)
    values = values if largest else ops.negative(values)
    return [in_onnx_order(ops.moveaxis(values, -1, axis)),
            in_onnx_order(ops.cast(ops.moveaxis(indices, -1, axis), "int64"))]


@add_converter("LpNormalization", 1)
def lp_normalization(context, node, attrs):
    x = onnx_order(context, context.values[node.input[0]])
    ops, axis, p = context.keras.ops, attrs.get("axis", -1) % len(x.axes), attrs.get("p", 2)
    norm = ops.sum(ops.abs(x.tensor), axis=axis, keepdims=True) if p == 1 else \
        ops.sqrt(ops.sum(ops.square(x.tensor), axis=axis, keepdims=True))
    zero = ops.equal(norm, 0)  # a zero norm gives 0, as ONNX's reference does (not 0 / 0)
    return [in_onnx_order(ops.where(zero, ops.zeros_like(x.tensor), ops.divide(x.tensor, ops.where(zero, 1, norm))))]


@add_converter("MeanVarianceNormalization", 9)
def mean_variance_normalization(context, node, attrs):
    """(x - mean) / sqrt(mean((x - mean)^2)) over `axes` (default 0, 2, 3), as ONNX's function defines it."""
    x = onnx_order(context, context.values[node.input[0]])
    ops, axes = context.keras.ops, tuple(a % len(x.axes) for a in attrs.get("axes", [0, 2, 3]))
    centred = ops.subtract(x.tensor, ops.mean(x.tensor, axis=axes, keepdims=True))
    return [in_onnx_order(ops.divide(centred, ops.sqrt(ops.mean(ops.square(centred), axis=axes, keepdims=True))))]


def log_softmax_axes(context, x: Mapped, axes: list) -> Mapped:
    """x - logsumexp(x) over `axes` (ONNX order)."""
    x = onnx_order(context, x)
    ops = context.keras.ops
    return in_onnx_order(ops.subtract(x.tensor, ops.logsumexp(x.tensor, axis=tuple(axes), keepdims=True)))


@add_converter("LogSoftmax", 13)
def log_softmax(context, node, attrs):
    x = context.values[node.input[0]]
    return [log_softmax_axes(context, x, [attrs.get("axis", -1) % len(x.axes)])]


@add_converter("LogSoftmax", 1)
def log_softmax_flattened(context, node, attrs):
    """LogSoftmax before opset 13: over every axis from `axis` (default 1) on."""
    x = context.values[node.input[0]]
    return [log_softmax_axes(context, x, list(range(attrs.get("axis", 1) % len(x.axes), len(x.axes))))]


@add_converter("Hardmax", 13)
def hardmax(context, node, attrs):
    """1 at the first maximum along `axis`, 0 elsewhere."""
    x = onnx_order(context, context.values[node.input[0]])
    ops, axis = context.keras.ops, attrs.get("axis", -1) % len(x.axes)
    size = x.tensor.shape[axis]
    if size is None:
        raise RosettaError("keras mapper: Hardmax along an axis of unknown size")
    hot = ops.one_hot(ops.argmax(x.tensor, axis=axis), size, axis=axis, dtype=str(x.tensor.dtype))
    return [in_onnx_order(hot)]

