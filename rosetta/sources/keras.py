"""Reading a Keras file (.keras, or legacy .h5) with Keras' safe_mode on (rosetta.frameworks.keras
load_keras_model): a file whose layers carry Python code (Lambda layers, custom objects) is refused unless the
user passes --trust-code."""

from __future__ import annotations

import shutil
from pathlib import Path

from rosetta.frameworks.keras import import_keras, leaf_names, load_keras_model
from rosetta.sources.readers import write_manifest


def _signature(tensors, names) -> list[dict]:
    return [{"name": name, "shape": list(tensor.shape),
             "dtype": str(getattr(tensor.dtype, "name", tensor.dtype))} for tensor, name in zip(tensors, names)]


def embedding_rows(model) -> dict[int, int]:
    """{id(model input tensor): rows of the smallest Embedding that reads it directly}."""
    import keras

    rows: dict[int, int] = {}
    for layer in model.layers:
        if not isinstance(layer, keras.layers.Embedding):
            continue
        for node in layer._inbound_nodes:
            for tensor in node.input_tensors:
                if any(tensor is model_input for model_input in model.inputs):
                    rows[id(tensor)] = min(rows.get(id(tensor), layer.input_dim), layer.input_dim)
    return rows


def read(argument: dict) -> dict:
    path = Path(argument["model"]["path"])
    model = load_keras_model(path, argument["trust_code"])
    artifact = "model" + path.suffix.lower()
    shutil.copyfile(path, Path(argument["staging"]) / artifact)
    # a dict input or output by its key (keras-hub's backbones), every leaf under a name of its own
    keras = import_keras()
    input_names, output_names = leaf_names(keras, model, "inputs"), leaf_names(keras, model, "outputs")
    inputs = _signature(model.inputs, input_names)
    ranges = embedding_rows(model)
    for entry, tensor in zip(inputs, model.inputs):  # integer inputs that index an Embedding: all its rows
        if id(tensor) in ranges:
            entry["high"] = ranges[id(tensor)]
    return write_manifest(argument, artifact, "keras", inputs,
                          _signature(model.outputs, output_names))
