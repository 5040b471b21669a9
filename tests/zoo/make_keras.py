"""Writes one Keras model of the zoo: run in a fresh interpreter, so TensorFlow never shares a process with
MXNet or the tests. python make_keras.py NAME PATH.keras

Keras applications are built with weights=None and logits out (classifier_activation=None); every
BatchNormalization gets random affine parameters and running statistics taken from a batch of inputs like the
ones rosetta generates (uniform 0..1), so outputs vary across inputs and a BatchNorm mistake shows."""

import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import numpy as np  # noqa: E402

SEED = 0
CALIBRATION_BATCH = 16


def calibrate_batch_norms(model: keras.Model) -> None:
    """Random gamma/beta, then moving mean/variance equal to one training-mode batch's statistics."""
    rng = np.random.default_rng(SEED)
    norms = [layer for layer in model._flatten_layers() if isinstance(layer, keras.layers.BatchNormalization)]
    if not norms:
        return
    for layer in norms:
        channels = layer.gamma.shape
        layer.gamma.assign(rng.uniform(0.5, 1.5, channels).astype("float32"))
        layer.beta.assign(rng.uniform(-0.2, 0.2, channels).astype("float32"))
        layer.momentum = 0.0  # the moving statistics become this batch's
    (image,) = model.inputs
    model(rng.uniform(0, 1, (CALIBRATION_BATCH, *image.shape[1:])).astype("float32"), training=True)
    for layer in norms:
        layer.momentum = 0.99


def mobilenetv2() -> keras.Model:
    return keras.applications.MobileNetV2(alpha=0.35, input_shape=(32, 32, 3), weights=None, classes=10,
                                          classifier_activation=None)


def efficientnetb0() -> keras.Model:
    return keras.applications.EfficientNetB0(input_shape=(32, 32, 3), weights=None, classes=10,
                                             classifier_activation=None)


def resnet50() -> keras.Model:
    return keras.applications.ResNet50(input_shape=(32, 32, 3), weights=None, classes=10, classifier_activation=None)


def lstm_text() -> keras.Model:
    """Embedding -> two stacked LSTMs -> logits: a classic sentiment classifier, 20 tokens."""
    tokens = keras.Input((20,), dtype="int32", name="tokens")
    x = keras.layers.Embedding(1000, 32)(tokens)
    x = keras.layers.LSTM(32, return_sequences=True)(x)
    x = keras.layers.LSTM(16)(x)
    return keras.Model(tokens, keras.layers.Dense(2, name="logits")(x))


def conv1d_text() -> keras.Model:
    """Embedding -> Conv1D/max-pool stack -> global max pooling -> logits (Kim-style text CNN), 32 tokens."""
    tokens = keras.Input((32,), dtype="int32", name="tokens")
    x = keras.layers.Embedding(1000, 32)(tokens)
    x = keras.layers.Conv1D(32, 5, activation="relu", padding="same")(x)
    x = keras.layers.MaxPooling1D(2)(x)
    x = keras.layers.Conv1D(32, 3, activation="relu")(x)
    x = keras.layers.GlobalMaxPooling1D()(x)
    x = keras.layers.Dense(16, activation="relu")(x)
    return keras.Model(tokens, keras.layers.Dense(4, name="logits")(x))


def convnext_tiny() -> keras.Model:
    """keras.applications.ConvNeXtTiny at 32x32: exact GELU, LayerNormalization, layer scale, depthwise 7x7."""
    return keras.applications.ConvNeXtTiny(input_shape=(32, 32, 3), weights=None, classes=10,
                                           classifier_activation=None)


def efficientnetv2b0() -> keras.Model:
    """keras.applications.EfficientNetV2B0 at 32x32: fused MBConv blocks, squeeze-excitation."""
    return keras.applications.EfficientNetV2B0(input_shape=(32, 32, 3), weights=None, classes=10,
                                               classifier_activation=None)


def transformer_encoder() -> keras.Model:
    """A Keras 3 text transformer: token and position Embeddings, an encoder block (MultiHeadAttention,
    residuals, LayerNormalization, an exact-GELU feed-forward), pooled to logits; 16 tokens of 100."""
    tokens = keras.Input((16,), dtype="int32", name="tokens")
    x = keras.layers.Embedding(100, 32)(tokens) + keras.layers.Embedding(16, 32)(keras.ops.arange(16))
    attended = keras.layers.MultiHeadAttention(num_heads=4, key_dim=8)(x, x)
    x = keras.layers.LayerNormalization()(x + attended)
    fed = keras.layers.Dense(32)(keras.layers.Dense(64, activation="gelu")(x))
    x = keras.layers.LayerNormalization()(x + fed)
    return keras.Model(tokens, keras.layers.Dense(5, name="logits")(keras.layers.GlobalAveragePooling1D()(x)))


MODELS = {"mobilenetv2": mobilenetv2, "convnext_tiny": convnext_tiny, "efficientnetv2b0": efficientnetv2b0,
          "transformer_encoder": transformer_encoder, "efficientnetb0": efficientnetb0, "resnet50": resnet50,
          "lstm_text": lstm_text, "conv1d_text": conv1d_text}

if __name__ == "__main__":
    name, path = sys.argv[1], Path(sys.argv[2])
    keras.utils.set_random_seed(SEED)
    model = MODELS[name]()
    calibrate_batch_norms(model)
    model.save(path)
