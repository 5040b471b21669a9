"""Every layer of a Keras model as it runs (frameworks.layers.Layer), and one layer run alone: jobs of the
TensorFlow worker, where Keras runs."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rosetta.frameworks.layers import GATES_KERAS_GRU_TO_TORCH, Layer, gate_blocks, same_pads

KINDS = {"Conv1D": "conv", "Conv2D": "conv", "Conv3D": "conv", "DepthwiseConv2D": "conv", "Dense": "dense",
         "BatchNormalization": "batchnorm", "LayerNormalization": "layernorm", "GRU": "gru", "LSTM": "lstm",
         "MaxPooling1D": "pool", "MaxPooling2D": "pool", "MaxPooling3D": "pool", "AveragePooling1D": "pool",
         "AveragePooling2D": "pool", "AveragePooling3D": "pool", "GlobalAveragePooling2D": "pool",
         "GlobalMaxPooling2D": "pool", "Activation": "activation", "ReLU": "activation", "Softmax": "activation",
         "Flatten": "flatten", "Reshape": "reshape", "Embedding": "embedding", "Dropout": "dropout", "Add": "add",
         "Concatenate": "concat", "ZeroPadding2D": "other", "Permute": "reshape"}


def _model(folder: Path, precision: str, trust_code: bool):
    from rosetta.frameworks.keras import in_precision, load_keras_model
    from rosetta.frameworks.base import artifact_file
    from rosetta.manifest import Manifest

    manifest = Manifest.read(folder)
    return in_precision(load_keras_model(artifact_file(folder, manifest), trust_code), precision, trust_code), manifest


def trace_job(argument: dict) -> dict:
    """Job: {"layers": [Layer as JSON], "notes": [one line each]} of the Keras model in argument["folder"] run on
    argument["feeds"], in argument["precision"]: its functional graph walked node by node, as Keras runs it. A
    layer whose settings cannot be read is read without them (no parameters, no configuration), with a note."""
    from rosetta.frameworks.keras import import_keras
    from rosetta.frameworks.keras_reference import _functional

    keras = import_keras()
    model, manifest = _model(Path(argument["folder"]), argument["precision"], argument.get("trust_code", False))
    graph = _functional(model)
    if graph is None:
        return {"layers": [], "reason": "a subclassed Keras model has no graph of layers to walk"}
    arrays = [np.asarray(argument["feeds"][entry["name"]]) for entry in manifest.inputs]
    arrays = [a.astype(argument["precision"]) if a.dtype.kind == "f" else a for a in arrays]
    values = {id(x): keras.ops.convert_to_tensor(a) for x, a in zip(graph.inputs, arrays)}
    # a tensor is channels-last where the layer that made it says so (data_format), or where its input was: a
    # BatchNormalization after a Conv2D; a sequence (N, T, F) from an Embedding or a GRU is not a feature map
    last = {id(x): False for x in graph.inputs}
    layers, notes = [], []
    for depth in sorted(graph._nodes_by_depth, reverse=True):
        for node in graph._nodes_by_depth[depth]:
            if not node.operation or node.is_input or any(id(x) not in values for x in node.input_tensors):
                continue
            args, kwargs = node.arguments.fill_in(values)
            outputs = keras.tree.flatten(node.operation(*args, **kwargs))
            data_format = getattr(node.operation, "data_format", None)
            channels_last = data_format != "channels_first" if data_format else \
                any(last.get(id(x), False) for x in node.input_tensors)
            for x, y in zip(node.outputs, outputs):
                values[id(x)] = y
                last[id(x)] = channels_last
            inputs = [np.asarray(keras.ops.convert_to_numpy(values[id(x)])) for x in node.input_tensors]
            config, unread = settings(node.operation)
            if unread:
                notes.append(unread)
                kind, params, config = KINDS.get(type(node.operation).__name__, "other"), {}, {}
            else:
                kind, params, config = describe(node.operation, inputs, config)
            layers.append(Layer(node.operation.name, kind, type(node.operation).__name__,
                                np.asarray(keras.ops.convert_to_numpy(outputs[0])), inputs, params, config,
                                channels_last=channels_last).to_json())
    return {"layers": layers, "notes": notes}


def settings(layer) -> tuple[dict, str]:
    """(the layer's get_config(), ""), or ({}, a one-line note) where get_config raises: a library's bug in one
    layer skips the diagnoses that need its settings instead of stopping locate for the whole model."""
    from rosetta.errors import one_line

    try:
        return (layer.get_config() if hasattr(layer, "get_config") else {}), ""
    except Exception as error:  # noqa: BLE001 - whatever the library's get_config raises
        return {}, (f"layer {layer.name} ({type(layer).__name__}) read without its settings: get_config raised "
                    f"{one_line(error)}")[:300]


def run_layer_job(argument: dict) -> dict:
    """Job: {"output"}: the layer argument["layer"] of the Keras model in argument["folder"] run alone on
    argument["inputs"] (its first output), in argument["precision"]."""
    from rosetta.frameworks.keras import import_keras

    keras = import_keras()
    model, _ = _model(Path(argument["folder"]), argument["precision"], argument.get("trust_code", False))
    layer = model.get_layer(argument["layer"])
    inputs = [keras.ops.convert_to_tensor(np.asarray(a)) for a in argument["inputs"]]
    output = layer(inputs[0] if len(inputs) == 1 else inputs)
    output = keras.tree.flatten(output)[0]
    return {"output": np.asarray(keras.ops.convert_to_numpy(output))}


def describe(layer, inputs: list[np.ndarray], config: dict) -> tuple[str, dict, dict]:
    """(kind, canonical parameters, canonical configuration) of a Keras layer (frameworks.layers), from its
    get_config() `config`."""
    name = type(layer).__name__
    kind = KINDS.get(name, "other")
    weights = {w.path.split("/")[-1]: np.asarray(w.numpy()) for w in getattr(layer, "weights", [])}
    activation = config.get("activation")
    found = {"activation": activation} if isinstance(activation, str) and activation != "linear" else {}
    if kind == "conv" and "kernel" in weights:
        kernel = weights["kernel"]
        rank = kernel.ndim
        spatial = rank - 2
        weight = np.transpose(kernel, (rank - 1, rank - 2, *range(spatial)))  # (k..., in, out) -> (out, in, k...)
        if name == "DepthwiseConv2D":  # (kH, kW, in, multiplier) -> (in * multiplier, 1, kH, kW)
            weight = np.transpose(kernel, (2, 3, 0, 1)).reshape(-1, 1, *kernel.shape[:2])
        strides, dilations = list(config["strides"]), list(config["dilation_rate"])
        sizes = inputs[0].shape[1:-1] if config.get("data_format", "channels_last") == "channels_last" \
            else inputs[0].shape[2:]
        pads = [same_pads(size, k, s, d) for size, k, s, d in zip(sizes, kernel.shape[:spatial], strides, dilations)] \
            if config["padding"] == "same" else [(0, 0)] * spatial
        return kind, {"weight": weight, **({"bias": weights["bias"]} if "bias" in weights else {})}, \
            {"strides": strides, "dilations": dilations, "pads": pads, "padding": config["padding"], **found}
    if kind == "dense" and "kernel" in weights:
        return kind, {"weight": weights["kernel"].T, **({"bias": weights["bias"]} if "bias" in weights else {})}, found
    if kind == "batchnorm":
        return kind, {"scale": weights.get("gamma"), "shift": weights.get("beta"), "mean": weights["moving_mean"],
                      "var": weights["moving_variance"]}, {"epsilon": config["epsilon"],
                                                          "momentum": 1.0 - config["momentum"]}
    if kind == "layernorm":
        return kind, {"scale": weights.get("gamma"), "shift": weights.get("beta")}, {"epsilon": config["epsilon"]}
    if kind == "gru" and "kernel" in weights:
        reset_after = config.get("reset_after", True)
        bias = weights.get("bias")
        hidden = weights["recurrent_kernel"].shape[0]
        ih, hh = (bias[0], bias[1]) if bias is not None and bias.ndim == 2 else \
            (bias if bias is not None else np.zeros(3 * hidden), np.zeros(3 * hidden))
        order = GATES_KERAS_GRU_TO_TORCH
        return kind, {"weight_ih_l0": gate_blocks(weights["kernel"].T, order),
                      "weight_hh_l0": gate_blocks(weights["recurrent_kernel"].T, order),
                      "bias_ih_l0": gate_blocks(ih, order), "bias_hh_l0": gate_blocks(hh, order)}, \
            {"reset_after": reset_after, "hidden": hidden, **found}
    if kind == "lstm" and "kernel" in weights:
        return kind, {"weight_ih_l0": weights["kernel"].T, "weight_hh_l0": weights["recurrent_kernel"].T,
                      **({"bias_l0": weights["bias"]} if "bias" in weights else {})}, \
            {"hidden": weights["recurrent_kernel"].shape[0]}
    if kind == "embedding":
        return kind, {"weight": weights.get("embeddings")}, {}
    if kind == "pool" and "pool_size" in config:
        spatial = len(config["pool_size"])
        sizes = inputs[0].shape[1:-1] if config.get("data_format", "channels_last") == "channels_last" \
            else inputs[0].shape[2:]
        strides = list(config.get("strides") or config["pool_size"])
        pads = [same_pads(size, k, s) for size, k, s in zip(sizes, config["pool_size"], strides)] \
            if config.get("padding") == "same" else [(0, 0)] * spatial
        return kind, {}, {"kernel": list(config["pool_size"]), "strides": strides, "pads": pads,
                          "type": "max" if "Max" in name else "average"}
    if kind == "activation":
        return kind, {}, {"activation": config.get("activation", name.lower())}
    return kind, {}, found
