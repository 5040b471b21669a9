"""PyTorch references whose Keras ports (make_unaligned.py) do not line up layer for layer: split padding, an
activation written as a function in forward, BatchNorm folded into the conv, a transformer block that Keras holds
as one layer, and a ResNet bottleneck with its stride elsewhere. Factories that rosetta reads as
`unaligned_nets.py:NAME` (with --trust-code); weights from a seed, so the ports can copy them."""

from __future__ import annotations

import math

import torch
import torch.nn as nn


def _seeded(module: nn.Module) -> nn.Module:
    """Every parameter uniform in +-0.4 and BatchNorm statistics away from 0/1: a bug in any of them shows."""
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


class PaddedCnn(nn.Module):
    """a. Conv(padding 1) -> BN -> ReLU -> MaxPool -> Conv(stride 2, padding 1) -> ReLU -> Flatten -> Linear on
    3x16x16: the port pads with ZeroPadding2D before each 'valid' conv."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.relu1 = nn.ReLU()
        self.pool = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.relu2 = nn.ReLU()
        self.flatten = nn.Flatten()
        self.fc = nn.Linear(16 * 4 * 4, 10)

    def forward(self, image):
        x = self.pool(self.relu1(self.bn1(self.conv1(image))))
        return self.fc(self.flatten(self.relu2(self.conv2(x))))


class ConvTanh(nn.Module):
    """b. Conv1d, then tanh as a function (no module to pair with), LayerNorm over channels, Linear head, on
    (N, 4, 12) signals: the port fuses the tanh into Conv1D and runs channels-last."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv1d(4, 8, 3, padding=1)
        self.norm = nn.LayerNorm(8)
        self.fc = nn.Linear(12 * 8, 3)

    def forward(self, signal):
        x = torch.tanh(self.conv(signal)).transpose(1, 2)  # (N, 12, 8)
        return self.fc(self.norm(x).flatten(1))


class BnCnn(nn.Module):
    """c. conv -> bn -> relu -> pool -> conv(stride 2, padding 1) -> bn -> relu -> flatten -> linear on 3x16x16:
    the port folds each BatchNorm into its conv and fuses each ReLU."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.relu1 = nn.ReLU()
        self.pool = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.bn2 = nn.BatchNorm2d(16)
        self.relu2 = nn.ReLU()
        self.flatten = nn.Flatten()
        self.fc = nn.Linear(16 * 4 * 4, 10)

    def forward(self, image):
        x = self.pool(self.relu1(self.bn1(self.conv1(image))))
        return self.fc(self.flatten(self.relu2(self.bn2(self.conv2(x)))))


HIDDEN, HEADS, SEQUENCE, VOCABULARY, EPSILON = 16, 2, 8, 50, 1e-5


class Block(nn.Module):
    """Post-LayerNorm encoder block with attention written out in forward (as model code often does): the port's
    block is one Keras layer."""

    def __init__(self) -> None:
        super().__init__()
        self.query, self.key, self.value = (nn.Linear(HIDDEN, HIDDEN) for _ in range(3))
        self.out = nn.Linear(HIDDEN, HIDDEN)
        self.norm1 = nn.LayerNorm(HIDDEN, eps=EPSILON)
        self.fc1 = nn.Linear(HIDDEN, 2 * HIDDEN)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(2 * HIDDEN, HIDDEN)
        self.norm2 = nn.LayerNorm(HIDDEN, eps=EPSILON)

    def forward(self, x):
        n, length, _ = x.shape

        def heads(t):
            return t.view(n, length, HEADS, HIDDEN // HEADS).transpose(1, 2)

        q, k, v = heads(self.query(x)), heads(self.key(x)), heads(self.value(x))
        weights = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(HIDDEN // HEADS), dim=-1)
        attended = (weights @ v).transpose(1, 2).reshape(n, length, HIDDEN)
        x = self.norm1(x + self.out(attended))
        return self.norm2(x + self.fc2(self.act(self.fc1(x))))


class Encoder(nn.Module):
    """d. Token + position embedding, then 2 blocks, on int64 tokens (N, 8): hidden 16, 2 heads."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCABULARY, HIDDEN)
        self.position = nn.Embedding(SEQUENCE, HIDDEN)
        self.blocks = nn.ModuleList([Block(), Block()])

    def forward(self, tokens):
        x = self.embed(tokens) + self.position(torch.arange(tokens.shape[1], device=tokens.device))
        for block in self.blocks:
            x = block(x)
        return x


class Bottleneck(nn.Module):
    """e. ResNet v1.5 bottleneck on 6x8x8 (1x1 -> 3x3 stride 2 -> 1x1, BN after each, a strided 1x1 downsample):
    torchvision puts the stride on the 3x3, keras.applications (v1) on the first 1x1."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(6, 4, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(4)
        self.relu1 = nn.ReLU()
        self.conv2 = nn.Conv2d(4, 4, 3, stride=2, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(4)
        self.relu2 = nn.ReLU()
        self.conv3 = nn.Conv2d(4, 16, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(16)
        self.downsample = nn.Sequential(nn.Conv2d(6, 16, 1, stride=2, bias=False), nn.BatchNorm2d(16))
        self.relu = nn.ReLU()

    def forward(self, x):
        y = self.relu2(self.bn2(self.conv2(self.relu1(self.bn1(self.conv1(x))))))
        return self.relu(self.bn3(self.conv3(y)) + self.downsample(x))


def padded_cnn():
    return _seeded(PaddedCnn())


def conv_tanh():
    return _seeded(ConvTanh())


def bn_cnn():
    return _seeded(BnCnn())


def encoder():
    return _seeded(Encoder())


def bottleneck():
    return _seeded(Bottleneck())
