"""Add, Sub, Mul, Div and Pow (numpy broadcasting, opset 7 on): Keras' merge layers for two tensors of one
shape, a Rescaling (x * scale + offset) for a constant operand, which gives x + c, x - c, c - x and x * c exactly
and keeps the constant a constant in Keras too, not a trainable weight; keras.ops (math.binary) for the rest."""

from __future__ import annotations

import numpy as np

from rosetta.convert.onnx.to_keras.context import Mapped
from rosetta.convert.onnx.to_keras.layout import keras_constant, materialize
from rosetta.convert.onnx.to_keras.ops.math import binary
from rosetta.convert.onnx.to_keras.registry import add_converter
from rosetta.errors import RosettaError


def elementwise(context, node, attrs) -> list:
    """Add/Sub/Mul of two tensors of one rank in the same feature order, or Add/Sub/Mul/Div of a float tensor
    and a constant that broadcasts to it without enlarging it or varying over the batch, as Keras layers; others
    by keras.ops in ONNX's layout (math.binary)."""
    op = node.op_type
    first_name, second_name = node.input[:2]
    if first_name in context.constants or second_name in context.constants:
        constant_first = first_name in context.constants
        x_name = second_name if constant_first else first_name
        x = context.values[x_name]
        try:
            c = keras_constant(context, x, x_name, context.constants[first_name if constant_first else second_name], op)
        except RosettaError:
            return binary(context, node, {})
        if not str(x.tensor.dtype).startswith("float") or \
                op == "Div" and (constant_first or np.any(np.asarray(c) == 0)):
            return binary(context, node, {})
        # x / c as x * (1 / c): within an ulp; 1 / c only for a Div (a scalar c of 0 is fine to add or multiply by)
        scale, offset = {"Add": (1.0, c), "Sub": (-1.0, c) if constant_first else (1.0, -c),
                         "Mul": (c, 0.0)}[op] if op != "Div" else (1 / c, 0.0)
        tensor = context.keras.layers.Rescaling(scale, offset, name=context.name("rescale"))(x.tensor)
        keeps_sign = op in ("Mul", "Div", "Add") and bool(np.all(np.asarray(c) >= 0))
        return [Mapped(tensor, x.axes, x.feature_order, x.nonnegative and keeps_sign)]
    first = context.values[first_name]
    second = context.values[second_name]
    same_order = first.feature_order is None and second.feature_order is None or \
        first.axes == second.axes and np.array_equal(first.feature_order, second.feature_order)
    if op == "Div" or not same_order or len(first.axes) != len(second.axes) or \
            first.tensor.shape[0] != second.tensor.shape[0] or \
            any(a is None and b is not None for a, b in zip(first.axes, second.axes)):
        # a merge layer broadcasts all but the batch, and the second operand takes the first's layout, which
        # cannot drop an axis it holds (SAM's relative positions: (..., k, 1) + (..., 1, k))
        return binary(context, node, {})
    second = materialize(context, second, first.axes)
    if op == "Add" and list(first.tensor.shape) != list(second.tensor.shape):
        return binary(context, node, {})  # the Add layer broadcasts by keras.ops.add (layout.add says why not)
    layer = {"Add": context.keras.layers.Add, "Sub": context.keras.layers.Subtract,
             "Mul": context.keras.layers.Multiply}[op](name=context.name(op))
    tensor = layer([first.tensor, second.tensor])
    return [Mapped(tensor, first.axes, first.feature_order, op != "Sub" and first.nonnegative and second.nonnegative)]


for _op in ("Add", "Sub", "Mul", "Div"):
    add_converter(_op, 7)(elementwise)


@add_converter("Pow", 7)
def power(context, node, attrs):
    """x ** 2 and x ** 3 as a Multiply layer of x by itself (x ** 1 is x); any other exponent by keras.ops."""
    exponent = context.constants.get(node.input[1])
    if exponent is None or exponent.size != 1 or float(exponent.reshape(())) not in (1.0, 2.0, 3.0) or \
            not str(context.values[node.input[0]].tensor.dtype).startswith("float"):
        return binary(context, node, {})
    x = context.values[node.input[0]]
    times = int(exponent.reshape(()))
    if times == 1:
        return [x]
    tensor = context.keras.layers.Multiply(name=context.name("pow"))([x.tensor] * times)
    return [Mapped(tensor, x.axes, x.feature_order, times % 2 == 0 or x.nonnegative)]
