"""Gemm and MatMul: a Dense layer (trainable) for a product by a constant matrix, its kernel transposed as
Gemm's transB says; keras.ops.matmul for the product of two tensors (attention's scores and weighted values)."""

from __future__ import annotations

import numpy as np

from rosetta.convert.onnx.to_keras.context import Mapped
from rosetta.convert.onnx.to_keras.layout import add, identity, materialize
from rosetta.convert.onnx.to_keras.ops.math import broadcast
from rosetta.convert.onnx.to_keras.registry import FUSED, add_converter


def dense(context, x: Mapped, kernel: np.ndarray, bias) -> Mapped:
    """Dense acts on the Keras last axis: it must hold the ONNX last axis (features)."""
    if x.axes[-1] != max(k for k in x.axes if k is not None) or x.axes[0] != 0:
        x = materialize(context, x, identity(len(x.axes)))
    if x.feature_order is not None:
        kernel = kernel[x.feature_order]  # rows follow the Keras feature order of a channels-last flatten
    layer = context.keras.layers.Dense(kernel.shape[1], use_bias=bias is not None, name=context.name("dense"))
    tensor = layer(x.tensor)
    layer.set_weights([kernel] + ([bias] if bias is not None else []))
    return Mapped(tensor, x.axes)


@add_converter("Gemm", 7)
def gemm(context, node, attrs):
    """A Dense layer (trainable) for A . B + C with B and C constants; keras.ops otherwise (transA, operands
    computed at run time): alpha * A' . B' + beta * C."""
    weight = context.constants.get(node.input[1])
    bias_name = node.input[2] if len(node.input) > 2 else ""
    if weight is not None and not attrs.get("transA", 0) and (not bias_name or bias_name in context.constants) \
            and node.input[0] in context.values:
        kernel = (weight.T if attrs.get("transB", 0) else weight) * attrs.get("alpha", 1.0)
        bias = None
        if bias_name:
            bias = np.broadcast_to(context.constants[bias_name] * attrs.get("beta", 1.0), (kernel.shape[1],)).copy()
        return [dense(context, context.values[node.input[0]], kernel.astype(np.float32), bias)]

    def compute(ops, a, b, c=None):
        a = ops.transpose(a) if attrs.get("transA", 0) else a
        b = ops.transpose(b) if attrs.get("transB", 0) else b
        product = ops.matmul(a, b)
        product = product if attrs.get("alpha", 1.0) == 1.0 else ops.multiply(product, attrs["alpha"])
        if c is None:
            return product
        return add(ops, product, c if attrs.get("beta", 1.0) == 1.0 else ops.multiply(c, attrs["beta"]))
    return broadcast(context, node, compute)


@add_converter("MatMul", 1)
@add_converter("MatMul", 1, domain=FUSED)  # with a third input, the bias
def matmul(context, node, attrs):
    """A Dense layer (trainable) for a product by a constant matrix (and in the FUSED domain, its bias);
    keras.ops.matmul, which broadcasts as numpy's matmul, as ONNX's, for any other product."""
    weight = context.constants.get(node.input[1])
    if node.input[0] in context.values and weight is not None and weight.ndim == 2 and \
            str(context.values[node.input[0]].tensor.dtype).startswith("float"):
        bias = context.optional_constant(node, 2, "MatMul bias")  # a third input only in the FUSED domain
        return [dense(context, context.values[node.input[0]], weight, bias)]
    return broadcast(context, node, lambda ops, a, b: ops.matmul(a, b))
