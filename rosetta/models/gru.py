"""The DLF IMDB sentiment GRU: embedding 30000x125 -> GRU 100 -> last time step -> dense 2."""

from __future__ import annotations

import torch
from torch import nn

from rosetta.models.init import generator_for, glorot_uniform_, init_conv_or_linear, uniform_
from rosetta.models.registry import ModelSpec, TensorSpec, TrainingSpec, register_model

VOCABULARY = 30_000
EMBEDDING = 125
HIDDEN = 100
SEQUENCE = 150


class ImdbGRU(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embedding = nn.Embedding(VOCABULARY, EMBEDDING)
        self.gru = nn.GRU(EMBEDDING, HIDDEN, batch_first=True)
        self.fc = nn.Linear(HIDDEN, 2)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        sequence, _ = self.gru(self.embedding(tokens))
        return self.fc(sequence[:, -1, :])  # the output at the last time step, as DLF


def build_gru(seed: int = 0) -> ImdbGRU:
    model = ImdbGRU()
    g = generator_for(seed)
    uniform_(model.embedding.weight, g, -0.05, 0.05)  # Keras' Embedding default
    # Glorot per gate block (r, z, n), so each gate matrix has the fans of one dense layer.
    for name in ("weight_ih_l0", "weight_hh_l0"):
        weight = getattr(model.gru, name)
        for gate in weight.data.chunk(3, dim=0):
            glorot_uniform_(gate, g, fan_in=gate.shape[1], fan_out=gate.shape[0])
    # Separate non-trivial input and hidden biases: b_hn sits inside the reset gate (linear_before_reset).
    for name in ("bias_ih_l0", "bias_hh_l0"):
        uniform_(getattr(model.gru, name), g, -0.1, 0.1)
    init_conv_or_linear(model.fc, g)
    return model.eval()


GRU = register_model(ModelSpec(
    name="gru",
    description="IMDB sentiment GRU (DLF workload 2)",
    factory=build_gru,
    inputs=(TensorSpec("tokens", (None, SEQUENCE), "int64", 0, VOCABULARY),),
    outputs=(TensorSpec("logits", (None, 2), "float32"),),
    parameter_count=3_818_302,
    training=TrainingSpec(epochs=3, batch=64, optimizer="adam",
                          optimizer_settings={"lr": 0.001, "betas": (0.9, 0.999), "eps": 1e-8}),
))
