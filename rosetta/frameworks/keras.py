"""Keras 3: runs a `.keras` artifact (from rosetta's ONNX -> Keras mapper) with plain Keras, safe_mode on.

The backend is Keras' own choice (KERAS_BACKEND; TensorFlow by default here). The artifact uses only
built-in layers, so it also loads on the JAX backend where JAX is installed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rosetta.frameworks.base import Runner, artifact_file, check_feeds, from_layouts, to_layouts


def import_keras():
    import os

    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import keras

    return keras


WEIGHTS_MEMBER = "model.weights.h5"


def edit_keras_weights(path: Path, edit) -> None:
    """Rewrite the weights inside a .keras file in place with h5py, without Keras:
    edit(name, array) -> new array or None, for every weight ('layers/gru/cell/vars/0', ...)."""
    import io
    import zipfile

    import h5py

    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    buffer = io.BytesIO(members[WEIGHTS_MEMBER])
    with h5py.File(buffer, "r+") as weights:
        names = []
        weights.visititems(lambda name, item: names.append(name) if isinstance(item, h5py.Dataset) else None)
        for name in names:
            new = edit(name, weights[name][()])
            if new is not None:
                weights[name][...] = new
    members[WEIGHTS_MEMBER] = buffer.getvalue()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)


class KerasRunner(Runner):
    framework = "keras"

    def __init__(self, folder: Path, manifest, threads: int = 0, device: str = "cpu", trust_code: bool = False) -> None:
        keras = import_keras()
        if threads and keras.backend.backend() == "tensorflow":
            from rosetta.frameworks.tensorflow import set_threads

            set_threads(threads)
        self.keras, self.manifest, self.layouts = keras, manifest, manifest.converter.get("layouts", {})
        from rosetta.sources.keras import load_keras_model

        self.model = load_keras_model(artifact_file(folder, manifest), trust_code)
        self.output_names = [entry["name"] for entry in manifest.outputs]

    @classmethod
    def version(cls) -> str:
        keras = import_keras()
        return f"{keras.__version__} ({keras.backend.backend()} backend)"

    def predict(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        check_feeds(feeds, self.manifest.inputs)
        feeds = to_layouts(feeds, self.layouts)
        arrays = [feeds[entry["name"]] for entry in self.manifest.inputs]
        # predict_on_batch runs Keras' compiled predict step (tf.function / jax.jit), as Keras users infer;
        # calling the model eagerly is several times slower (a GRU steps through Python).
        result = self.model.predict_on_batch(arrays if len(arrays) > 1 else arrays[0])
        result = result if isinstance(result, (list, tuple)) else [result]
        return from_layouts({name: np.asarray(self.keras.ops.convert_to_numpy(value))
                             for name, value in zip(self.output_names, result)}, self.layouts)
