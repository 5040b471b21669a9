"""The DLF VGG-style CIFAR-10 CNN (channels first), with seeded Glorot initialisation."""

from __future__ import annotations

import torch
from torch import nn

from rosetta.models.init import generator_for, init_conv_or_linear
from rosetta.models.registry import ModelSpec, TensorSpec, TrainingSpec, register_model


class CifarCNN(nn.Module):
    """conv-conv-pool-relu-dropout twice, then dense 512 and dense 10 logits (softmax is in the loss)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 50, 3, padding=1)
        self.conv2 = nn.Conv2d(50, 50, 3, padding=1)
        self.conv3 = nn.Conv2d(50, 100, 3, padding=1)
        self.conv4 = nn.Conv2d(100, 100, 3, padding=1)
        self.pool = nn.MaxPool2d(2, 2)
        self.drop1 = nn.Dropout(0.25)
        self.drop2 = nn.Dropout(0.25)
        self.fc1 = nn.Linear(100 * 8 * 8, 512)
        self.drop3 = nn.Dropout(0.5)
        self.fc2 = nn.Linear(512, 10)

    def flatten(self, x: torch.Tensor) -> torch.Tensor:
        """Channels-first flatten (C, H, W order), as the dense layer's weights expect."""
        return torch.flatten(x, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.conv1(x))
        x = self.drop1(torch.relu(self.pool(self.conv2(x))))
        x = torch.relu(self.conv3(x))
        x = self.drop2(torch.relu(self.pool(self.conv4(x))))
        x = self.drop3(torch.relu(self.fc1(self.flatten(x))))
        return self.fc2(x)


def init_cifar_cnn(model: CifarCNN, seed: int) -> CifarCNN:
    g = generator_for(seed)
    for layer in (model.conv1, model.conv2, model.conv3, model.conv4, model.fc1, model.fc2):
        init_conv_or_linear(layer, g)
    return model.eval()


def build_cnn(seed: int = 0) -> CifarCNN:
    return init_cifar_cnn(CifarCNN(), seed)


CNN = register_model(ModelSpec(
    name="cnn",
    description="VGG-style CIFAR-10 CNN (DLF workload 1)",
    factory=build_cnn,
    inputs=(TensorSpec("images", (None, 3, 32, 32), "float32", 0.0, 1.0),),
    outputs=(TensorSpec("logits", (None, 10), "float32"),),
    parameter_count=3_441_592,
    training=TrainingSpec(epochs=10, batch=64, optimizer="sgd",
                          optimizer_settings={"lr": 0.01, "momentum": 0.9, "nesterov": False}),
))
