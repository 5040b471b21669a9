"""The PyTorch models of the hand-port tests, and their ports to PyTorch of a Keras reference: factories that
rosetta reads as `torch_nets.py:NAME` (with --trust-code). Weights come from a seed, or from an .npz beside
this file (written by make_ports.py) for the ports."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
import torch.nn as nn

HERE = Path(__file__).parent


class Cnn(nn.Module):
    """Conv -> BatchNorm -> ReLU -> MaxPool -> strided Conv -> ReLU -> Flatten -> Linear, on 3x16x16 images."""

    def __init__(self, epsilon: float = 1e-5) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8, eps=epsilon)
        self.relu1 = nn.ReLU()
        self.pool = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.relu2 = nn.ReLU()
        self.flatten = nn.Flatten()
        self.fc = nn.Linear(16 * 4 * 4, 10)

    def forward(self, image):
        x = self.pool(self.relu1(self.bn1(self.conv1(image))))
        return self.fc(self.flatten(self.relu2(self.conv2(x))))


class Recurrent(nn.Module):
    """Embedding -> GRU or LSTM -> the last step -> Linear, on int64 tokens (N, 10)."""

    def __init__(self, cell: str = "gru") -> None:
        super().__init__()
        self.embed = nn.Embedding(100, 8)
        self.rnn = (nn.GRU if cell == "gru" else nn.LSTM)(8, 12, batch_first=True)
        self.fc = nn.Linear(12, 2)

    def forward(self, tokens):
        out, _ = self.rnn(self.embed(tokens))
        return self.fc(out[:, -1])


def _seeded(module: nn.Module) -> nn.Module:
    torch.manual_seed(0)
    with torch.no_grad():
        for parameter in module.parameters():
            parameter.uniform_(-0.4, 0.4)
        for name, buffer in module.named_buffers():
            if name.endswith("running_mean"):
                buffer.uniform_(-0.3, 0.3)
            elif name.endswith("running_var"):
                buffer.uniform_(0.5, 1.5)
    return module.eval()


def cnn():
    return _seeded(Cnn())


def gru():
    return _seeded(Recurrent("gru"))


def lstm():
    return _seeded(Recurrent("lstm"))


def _from(name: str, module: nn.Module) -> nn.Module:
    with np.load(HERE / f"{name}.npz") as saved:
        module.load_state_dict({key: torch.from_numpy(saved[key]) for key in saved.files})
    return module.eval()


# ports of the Keras CNN reference (make_ports.py keras-reference): correct, and with two bugs
def port_of_keras(name: str = "torch-port"):
    return _from(name, Cnn(epsilon=1e-3))


def torch_port():
    return port_of_keras("torch-port")


def torch_port_flatten():
    return port_of_keras("torch-port-flatten")


def torch_port_epsilon():
    return _from("torch-port", Cnn(epsilon=1e-5))  # Keras's BatchNormalization has epsilon 1e-3
