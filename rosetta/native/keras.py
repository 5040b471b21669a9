"""The DLF models as a Keras 3 user writes them: channels-last images, Keras' own GRU, keras.applications'
ResNet-50. Each builder saves a `.keras` file (or, for TensorFlow, a SavedModel exported from the Keras model)
and returns its manifest; the CNN and GRU carry the reference's weights, mapped to Keras' layouts."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rosetta.frameworks.keras import import_keras
from rosetta.native import REFERENCE_WEIGHTS, SEEDED, native_manifest, reference_weights

KERAS_FILE = "model.keras"
CHANNELS_LAST = {"images": "channels_last"}


def _save(keras, model, spec, seed: int, staging: Path, weights: str, layouts: dict | None = None):
    model.save(str(staging / KERAS_FILE))
    return native_manifest(spec, seed, "keras", keras.__version__, KERAS_FILE, "keras", weights, layouts)


def cnn_model(keras, state: dict | None = None):
    """DLF's CNN: conv-conv-pool-relu-dropout twice, dense 512, dense 10 logits (the softmax is in the loss).
    ReLU after the pool, as DLF's lesson 7 recommends: the same function for less work."""
    layers = keras.layers
    model = keras.Sequential([
        keras.Input((32, 32, 3), name="images"),
        layers.Conv2D(50, 3, padding="same", activation="relu", name="conv1"),
        layers.Conv2D(50, 3, padding="same", name="conv2"),
        layers.MaxPooling2D(2),
        layers.Activation("relu"),
        layers.Dropout(0.25),
        layers.Conv2D(100, 3, padding="same", activation="relu", name="conv3"),
        layers.Conv2D(100, 3, padding="same", name="conv4"),
        layers.MaxPooling2D(2),
        layers.Activation("relu"),
        layers.Dropout(0.25),
        layers.Flatten(),
        layers.Dense(512, activation="relu", name="fc1"),
        layers.Dropout(0.5),
        layers.Dense(10, name="fc2"),
    ], name="dlf_cnn")
    if state is not None:
        for name in ("conv1", "conv2", "conv3", "conv4"):  # torch OIHW -> Keras HWIO
            model.get_layer(name).set_weights([state[f"{name}.weight"].transpose(2, 3, 1, 0), state[f"{name}.bias"]])
        # torch flattens (C, H, W), Keras (H, W, C): reorder fc1's input features to Keras' flatten order
        fc1 = state["fc1.weight"].reshape(512, 100, 8, 8).transpose(2, 3, 1, 0).reshape(-1, 512)
        model.get_layer("fc1").set_weights([fc1, state["fc1.bias"]])
        model.get_layer("fc2").set_weights([state["fc2.weight"].T, state["fc2.bias"]])
    return model


def cnn(seed: int, staging: Path):
    keras = import_keras()
    spec, state = reference_weights("cnn", seed)
    return _save(keras, cnn_model(keras, state), spec, seed, staging, REFERENCE_WEIGHTS, CHANNELS_LAST)


def _keras_gates(matrix: np.ndarray) -> np.ndarray:
    """PyTorch's GRU gate blocks (r, z, n) along axis 0 -> Keras' (z, r, h)."""
    r, z, n = np.split(matrix, 3, axis=0)
    return np.concatenate([z, r, n], axis=0)


def gru_model(keras, state: dict | None = None):
    """DLF's GRU: embedding 30,000 x 125, GRU 100 (its output at the last step), dense 2. reset_after=True (Keras'
    default) is PyTorch's and cuDNN's formulation, so Keras takes its cuDNN kernel on a GPU."""
    from rosetta.models.gru import EMBEDDING, HIDDEN, SEQUENCE, VOCABULARY

    layers = keras.layers
    tokens = keras.Input((SEQUENCE,), dtype="int64", name="tokens")
    x = layers.Embedding(VOCABULARY, EMBEDDING, name="embedding")(tokens)
    x = layers.GRU(HIDDEN, name="gru")(x)
    model = keras.Model(tokens, layers.Dense(2, name="fc")(x), name="dlf_gru")
    if state is not None:
        model.get_layer("embedding").set_weights([state["embedding.weight"]])
        model.get_layer("gru").set_weights([
            _keras_gates(state["gru.weight_ih_l0"]).T, _keras_gates(state["gru.weight_hh_l0"]).T,
            np.stack([_keras_gates(state["gru.bias_ih_l0"]), _keras_gates(state["gru.bias_hh_l0"])])])
        model.get_layer("fc").set_weights([state["fc.weight"].T, state["fc.bias"]])
    return model


def gru(seed: int, staging: Path):
    keras = import_keras()
    spec, state = reference_weights("gru", seed)
    return _save(keras, gru_model(keras, state), spec, seed, staging, REFERENCE_WEIGHTS)


def resnet50_model(keras, seed: int):
    keras.utils.set_random_seed(seed)
    return keras.applications.ResNet50(weights=None, include_top=False, pooling="avg",
                                       input_tensor=keras.Input((224, 224, 3), name="images"))


def resnet50(seed: int, staging: Path):
    from rosetta.models import get_model

    keras = import_keras()
    return _save(keras, resnet50_model(keras, seed), get_model("resnet50"), seed, staging, SEEDED, CHANNELS_LAST)


def resnet50_saved_model(seed: int, staging: Path):
    """The Keras ResNet-50 as TensorFlow serves it: a SavedModel whose serving signature is a tf.function."""
    from rosetta.frameworks.tensorflow import import_tensorflow
    from rosetta.models import get_model

    keras, tf = import_keras(), import_tensorflow()
    model = resnet50_model(keras, seed)
    model.export(str(staging / "saved_model"), format="tf_saved_model", verbose=False)
    outputs = [{"name": name, "shape": [None, 2048], "dtype": "float32"}
               for name in tf.saved_model.load(str(staging / "saved_model")).signatures["serving_default"]
               .structured_outputs]
    return native_manifest(get_model("resnet50"), seed, "tensorflow", tf.__version__, "saved_model", "tensorflow",
                           SEEDED, CHANNELS_LAST, outputs)
