"""The custom Keras layers of the transformer port (make_unaligned.py): an encoder block as ONE layer built from
MultiHeadAttention / Dense / LayerNormalization sublayers, as keras-hub writes its blocks, and a position
embedding. Keras finds a registered class only once this module is imported, so it lies next to the .keras file
that needs it."""

from __future__ import annotations

import keras


@keras.saving.register_keras_serializable(package="rosetta_tests")
class PositionEmbedding(keras.layers.Layer):
    """Adds a learned (length, hidden) table to the token embeddings."""

    def __init__(self, length: int, hidden: int, **kwargs) -> None:
        super().__init__(**kwargs)
        self.length, self.hidden = length, hidden

    def build(self, input_shape) -> None:
        self.embeddings = self.add_weight(shape=(self.length, self.hidden), name="embeddings")

    def call(self, x):
        return x + self.embeddings[None, : keras.ops.shape(x)[1]]

    def get_config(self) -> dict:
        return {**super().get_config(), "length": self.length, "hidden": self.hidden}


@keras.saving.register_keras_serializable(package="rosetta_tests")
class EncoderBlock(keras.layers.Layer):
    """Post-LayerNorm block: norm1(x + attention(x)), then norm2(x + fc2(gelu(fc1(x)))); its layer-norm epsilon
    is one of its settings, as in keras-hub."""

    def __init__(self, hidden: int = 16, heads: int = 2, intermediate: int = 32, epsilon: float = 1e-5,
                 **kwargs) -> None:
        super().__init__(**kwargs)
        self.hidden, self.heads, self.intermediate, self.epsilon = hidden, heads, intermediate, epsilon
        self.attention = keras.layers.MultiHeadAttention(heads, hidden // heads, name="attention")
        self.norm1 = keras.layers.LayerNormalization(epsilon=epsilon, name="norm1")
        self.fc1 = keras.layers.Dense(intermediate, activation="gelu", name="fc1")  # erf GELU, as nn.GELU()
        self.fc2 = keras.layers.Dense(hidden, name="fc2")
        self.norm2 = keras.layers.LayerNormalization(epsilon=epsilon, name="norm2")

    def build(self, input_shape) -> None:
        self.attention.build(input_shape, input_shape)
        self.norm1.build(input_shape)
        self.fc1.build(input_shape)
        self.fc2.build(tuple(input_shape[:-1]) + (self.intermediate,))
        self.norm2.build(input_shape)

    def call(self, x):
        x = self.norm1(x + self.attention(x, x))
        return self.norm2(x + self.fc2(self.fc1(x)))

    def get_config(self) -> dict:
        return {**super().get_config(), "hidden": self.hidden, "heads": self.heads,
                "intermediate": self.intermediate, "epsilon": self.epsilon}
