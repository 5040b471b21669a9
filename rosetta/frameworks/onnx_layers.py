"""Every node of an ONNX model as ONNX Runtime runs it (frameworks.layers.Layer), with its parameters in the
canonical form: a side of `rosetta verify REF PORT --locate` where one model is an ONNX file."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rosetta.frameworks.layers import Layer

KINDS = {"Conv": "conv", "Gemm": "dense", "MatMul": "dense", "BatchNormalization": "batchnorm",
         "LayerNormalization": "layernorm", "GRU": "gru", "LSTM": "lstm", "MaxPool": "pool", "AveragePool": "pool",
         "GlobalAveragePool": "pool", "Relu": "activation", "Tanh": "activation", "Sigmoid": "activation",
         "Softmax": "activation", "Gelu": "activation", "Flatten": "flatten", "Reshape": "reshape",
         "Gather": "embedding", "Add": "add", "Concat": "concat", "Dropout": "dropout", "Transpose": "reshape"}


def trace_model(path: Path, feeds: dict, precision: str = "float32") -> list[Layer]:
    """A Layer per node computing a float tensor; float64 values from the checked float64 run."""
    import onnx
    from onnx import helper, numpy_helper

    from rosetta.frameworks.onnx_reference import checked_float64_run, float32_values

    model = onnx.load(str(path))
    values32 = float32_values(model, feeds)
    names = [name for node in model.graph.node for name in node.output if name]
    if precision == "float64":
        values, _ = checked_float64_run(model, feeds, names, values32=dict(values32))
    else:
        values = {**{k: v for k, v in feeds.items()}, **values32}
    constants = {init.name: numpy_helper.to_array(init) for init in model.graph.initializer}
    layers = []
    for index, node in enumerate(model.graph.node):
        output = node.output[0] if node.output else ""
        if output not in values or node.op_type == "Constant":
            continue
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        data = [values.get(name) for name in node.input if name and name not in constants and name in values]
        weights = [constants.get(name) for name in node.input[1:]]
        kind, params, config = describe(node.op_type, attrs, weights)
        layers.append(Layer(node.name or output, kind, node.op_type, np.asarray(values[output]), data, params, config))
    return layers


def describe(op: str, attrs: dict, weights: list) -> tuple[str, dict, dict]:
    kind = KINDS.get(op, "other")
    if kind == "conv" and weights and weights[0] is not None:
        spatial = weights[0].ndim - 2
        pads = list(attrs.get("pads", [0] * 2 * spatial))
        return kind, {"weight": weights[0], **({"bias": weights[1]} if len(weights) > 1 and weights[1] is not None
                                               else {})}, \
            {"strides": list(attrs.get("strides", [1] * spatial)), "dilations": list(attrs.get("dilations", [1] * spatial)),
             "pads": [(pads[i], pads[i + spatial]) for i in range(spatial)], "groups": attrs.get("group", 1)}
    if op == "Gemm" and weights and weights[0] is not None:
        weight = weights[0] if attrs.get("transB", 0) else weights[0].T
        return kind, {"weight": weight, **({"bias": weights[1]} if len(weights) > 1 and weights[1] is not None else {})}, {}
    if op == "MatMul" and weights and weights[0] is not None:
        return kind, {"weight": weights[0].T}, {}
    if kind == "batchnorm" and len(weights) == 4 and all(w is not None for w in weights):
        return kind, {"scale": weights[0], "shift": weights[1], "mean": weights[2], "var": weights[3]}, \
            {"epsilon": attrs.get("epsilon", 1e-5), "momentum": 1.0 - attrs.get("momentum", 0.9)}
    if kind == "activation":
        return kind, {}, {"activation": op.lower()}
    return kind, {}, {}
