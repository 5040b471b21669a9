"""Writes the users' model files the tests convert: run as a script in a fresh interpreter (Keras, TF and
MXNet stay out of the test process). python make_models.py FOLDER"""

import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
folder = Path(sys.argv[1])

import keras  # noqa: E402

keras.utils.set_random_seed(0)
image = keras.Input((16, 16, 3), name="image")
x = keras.layers.Conv2D(8, 3, padding="same")(image)
x = keras.layers.BatchNormalization()(x)
x = keras.layers.ReLU()(x)
x = keras.layers.MaxPooling2D()(x)
x = keras.layers.Flatten()(x)
model = keras.Model(image, keras.layers.Dense(10, name="logits")(x))
model.save(folder / "small.keras")
model.save(folder / "small.h5")

# Keras 2 (tf-keras) HDF5 files, which MMdnn's Keras parser reads: the same layers flattened with Flatten, and
# with a raw Reshape (NHWC order), which MMdnn converts without an error but wrongly to channels-first targets
import tf_keras  # noqa: E402

tf_keras.utils.set_random_seed(0)
for name, flatten in (("keras2-flatten", tf_keras.layers.Flatten()), ("keras2-reshape", tf_keras.layers.Reshape((8 * 8 * 8,)))):
    inputs = tf_keras.Input((16, 16, 3), name="image")
    x = tf_keras.layers.Conv2D(8, 3, padding="same", activation="relu")(inputs)
    x = flatten(tf_keras.layers.MaxPooling2D()(x))
    tf_keras.Model(inputs, tf_keras.layers.Dense(10, name="logits")(x)).save(folder / f"{name}.h5")

# A Keras 2 MobileNet-style block: Keras 3 rejects its DepthwiseConv2D config, so it is read with tf-keras;
# and the same with a Lambda layer that would leave a marker if it ran inside rosetta (tf-keras has no safe mode)
marker = str(folder / "keras2-lambda-ran")
ran = f"lambda t: t if __import__('os').environ.get('ROSETTA_WORKER') is None else (open({marker!r}, 'w').close(), t)[1]"
for name, code in (("keras2-depthwise", None), ("keras2-lambda", ran)):
    inputs = tf_keras.Input((16, 16, 3), name="image")
    x = tf_keras.layers.Conv2D(8, 3, padding="same")(inputs)
    x = tf_keras.layers.DepthwiseConv2D(3, padding="same")(x)
    x = tf_keras.layers.BatchNormalization(moving_mean_initializer="random_uniform",
                                           moving_variance_initializer="ones")(x)
    x = tf_keras.layers.ReLU(6.0)(x)
    if code:
        x = tf_keras.layers.Lambda(eval(code))(x)
    x = tf_keras.layers.GlobalAveragePooling2D()(x)
    tf_keras.Model(inputs, tf_keras.layers.Dense(10, name="logits")(x)).save(folder / f"{name}.h5")

import tensorflow as tf  # noqa: E402


@tf.function(input_signature=[tf.TensorSpec([None, 16, 16, 3], tf.float32, name="image")])
def serve(image):
    return {"logits": model(image, training=False)}


tf.saved_model.save(model, str(folder / "saved_model"), signatures={"serving_default": serve})

# Lambda layers whose code crashes or hangs, but only inside a rosetta worker (building them here runs them)
crash = "lambda t: t if __import__('os').environ.get('ROSETTA_WORKER') is None else __import__('ctypes').string_at(0)"
hang = "lambda t: t if __import__('os').environ.get('ROSETTA_WORKER') is None else __import__('time').sleep(600)"
for name, code in (("crash", crash), ("hang", hang)):
    layer = keras.layers.Lambda(eval(code))
    keras.Model(image, layer(model(image))).save(folder / f"{name}.keras")

# a Lambda layer that computes another function in float64 than in float32: a float64 reference that cannot be
# believed (rosetta's check of it must part at this layer)
drift = "lambda t: t * (1.01 if __import__('keras').backend.standardize_dtype(t.dtype) == 'float64' else 1.0)"
keras.Model(image, keras.layers.Lambda(eval(drift), name="drifts_in_float64")(model(image))).save(
    folder / "float64-drift.keras")

import numpy as np  # noqa: E402

for alias, value in {"bool": bool, "int": int, "float": float, "complex": complex, "object": object, "str": str}.items():
    if alias not in np.__dict__:
        setattr(np, alias, value)
import mxnet as mx  # noqa: E402

mx.random.seed(0)
net = mx.gluon.nn.HybridSequential()
net.add(mx.gluon.nn.Conv2D(8, 3, padding=1), mx.gluon.nn.BatchNorm(), mx.gluon.nn.Activation("relu"),
        mx.gluon.nn.Flatten(), mx.gluon.nn.Dense(10))
net.initialize(mx.init.Xavier())
net.hybridize()
net(mx.nd.ones((2, 3, 16, 16)))
net.export(str(folder / "gluon"), 0)

# padded average pooling, which MXNet averages over the padding too (count_include_pad) and MMdnn's PyTorch and
# ONNX emitters do not: converted without an error, but wrong
net = mx.gluon.nn.HybridSequential()
net.add(mx.gluon.nn.Conv2D(8, 3, padding=1), mx.gluon.nn.AvgPool2D(3, 2, padding=1), mx.gluon.nn.Flatten(),
        mx.gluon.nn.Dense(10))
net.initialize(mx.init.Xavier())
net.hybridize()
net(mx.nd.ones((2, 3, 16, 16)))
net.export(str(folder / "gluon-avgpool"), 0)
