"""Keras' side of reading users' models (rosetta.sources): a loaded model's signature, with the rows of the
Embedding an integer input indexes, and an in-memory keras.Model written to a .keras file."""

from __future__ import annotations

from pathlib import Path

from rosetta.frameworks.keras import import_keras, leaf_names


def _signature(tensors, names) -> list[dict]:
    return [{"name": name, "shape": list(tensor.shape),
             "dtype": str(getattr(tensor.dtype, "name", tensor.dtype))} for tensor, name in zip(tensors, names)]


def embedding_rows(model) -> dict[int, int]:
    """{id(model input tensor): rows of the smallest Embedding that reads it directly}."""
    keras = import_keras()
    rows: dict[int, int] = {}
    for layer in model.layers:
        if not isinstance(layer, keras.layers.Embedding):
            continue
        for node in layer._inbound_nodes:
            for tensor in node.input_tensors:
                if any(tensor is model_input for model_input in model.inputs):
                    rows[id(tensor)] = min(rows.get(id(tensor), layer.input_dim), layer.input_dim)
    return rows


def signature(model) -> tuple[list[dict], list[dict]]:
    """A Keras model's inputs and outputs as a manifest lists them: a dict input or output by its key (keras-hub's
    backbones), every leaf under a name of its own; an integer input that indexes an Embedding drawn from all
    its rows ("high")."""
    keras = import_keras()
    input_names, output_names = leaf_names(keras, model, "inputs"), leaf_names(keras, model, "outputs")
    inputs = _signature(model.inputs, input_names)
    ranges = embedding_rows(model)
    for entry, tensor in zip(inputs, model.inputs):
        if id(tensor) in ranges:
            entry["high"] = ranges[id(tensor)]
    return inputs, _signature(model.outputs, output_names)


def export(model, inputs: list, folder: Path, label: str) -> tuple[Path, None]:
    """An in-memory keras.Model saved as folder/model.keras; its inputs are the file's own."""
    path = Path(folder) / "model.keras"
    model.save(str(path))
    return path, None
