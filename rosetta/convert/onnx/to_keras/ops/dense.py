"""Gemm and MatMul: a Dense layer (trainable) for a product by a constant matrix, keras.ops.matmul for the
product of two tensors (attention's scores and weighted values). Gemm kernels are transposed as transB says."""

from __future__ import annotations

import numpy as np

from rosetta.convert.onnx.to_keras.context import Mapped
from rosetta.convert.onnx.to_keras.layout import identity, logical_order, materialize
from rosetta.convert.onnx.to_keras.registry import FUSED, add_converter
from rosetta.errors import RosettaError


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
    if attrs.get("transA", 0):
        raise RosettaError("keras mapper: Gemm with transA=1 is not supported")
    weight = context.constant(node.input[1], "Gemm B")
    kernel = (weight.T if attrs.get("transB", 0) else weight) * attrs.get("alpha", 1.0)
    bias = None
    if len(node.input) > 2 and node.input[2]:
        bias = np.broadcast_to(context.constant(node.input[2], "Gemm C") * attrs.get("beta", 1.0),
                               (kernel.shape[1],)).copy()
    return [dense(context, context.values[node.input[0]], kernel.astype(np.float32), bias)]


@add_converter("MatMul", 1)
@add_converter("MatMul", 1, domain=FUSED)  # with a third input, the bias
def matmul(context, node, attrs):
    if node.input[0] in context.values and node.input[1] in context.values:
        return [_matmul_of_tensors(context, node)]
    if node.input[1] not in context.constants or context.constants[node.input[1]].ndim != 2:
        raise RosettaError("keras mapper: MatMul is supported by a constant 2-D weight only (a Dense layer)")
    bias = context.optional_constant(node, 2, "MatMul bias")  # a third input only in the FUSED domain
    return [dense(context, context.values[node.input[0]], context.constants[node.input[1]], bias)]


def _matmul_of_tensors(context, node) -> Mapped:
    """MatMul of two tensors: keras.ops.matmul, which follows numpy's matmul broadcasting, as ONNX does; both
    operands in ONNX axis order."""
    first, second = (context.values[name] for name in node.input[:2])
    if first.feature_order is not None or second.feature_order is not None or \
            None in first.axes or None in second.axes:
        raise RosettaError("keras mapper: MatMul of two tensors with size-1 axes held virtually, or of a "
                           "channels-last flattened tensor, is not supported")
    first, second = logical_order(context, first), logical_order(context, second)
    if len(first.axes) != len(second.axes) or len(first.axes) < 2:
        raise RosettaError("keras mapper: MatMul of two tensors of different ranks is not supported")
    return Mapped(context.keras.ops.matmul(first.tensor, second.tensor), identity(len(first.axes)))
