"""The one custom Keras layer of the more_nets ports (make_more.py): GELU's tanh approximation as a layer, since
Keras's activation="gelu" is the exact erf form. Keras finds the class only once this module is imported, so it
lies next to the .keras file that needs it."""

from __future__ import annotations

import keras


@keras.saving.register_keras_serializable(package="rosetta_tests")
class GeluTanh(keras.layers.Layer):
    """keras.ops.gelu(x, approximate=True): nn.GELU(approximate="tanh")."""

    def call(self, x):
        return keras.ops.gelu(x, approximate=True)
