"""More PyTorch references for hand ports (make_more.py writes their Keras ports): architectures the other tables
lack (depthwise-separable conv with ReLU6, squeeze-and-excitation, a bidirectional LSTM, a residual block with a
projection shortcut, a dilated temporal Conv1d, GroupNorm with SiLU, embedding + mean-pool + tanh-GELU MLP, a
U-Net style upsample + concat, PReLU, average pooling that counts its padding, a transposed conv). Factories that
rosetta reads as `more_nets.py:NAME` (with --trust-code); weights from a seed, so the ports can copy them."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F


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


class MobileBlock(nn.Module):
    """Depthwise 3x3 -> BN -> ReLU6 -> pointwise 1x1 -> BN -> ReLU6 -> global average -> Linear, on 4x8x8. The
    weights are scaled up so that ReLU6's clip at 6 is reached."""

    def __init__(self) -> None:
        super().__init__()
        self.depthwise = nn.Conv2d(4, 4, 3, padding=1, groups=4, bias=False)
        self.bn1 = nn.BatchNorm2d(4)
        self.relu1 = nn.ReLU6()
        self.pointwise = nn.Conv2d(4, 8, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(8)
        self.relu2 = nn.ReLU6()
        self.fc = nn.Linear(8, 3)

    def forward(self, x):
        x = self.relu2(self.bn2(self.pointwise(self.relu1(self.bn1(self.depthwise(x))))))
        return self.fc(x.mean(dim=(2, 3)))


class SqueezeExcite(nn.Module):
    """Conv -> ReLU -> squeeze-and-excitation (global average, 1x1 reduce, ReLU, 1x1 expand, sigmoid, scale) ->
    global average -> Linear, on 3x8x8."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.relu = nn.ReLU()
        self.reduce = nn.Conv2d(8, 2, 1)
        self.expand = nn.Conv2d(2, 8, 1)
        self.fc = nn.Linear(8, 3)

    def forward(self, x):
        x = self.relu(self.conv(x))
        gate = torch.sigmoid(self.expand(F.relu(self.reduce(x.mean(dim=(2, 3), keepdim=True)))))
        return self.fc((x * gate).mean(dim=(2, 3)))


class BiLstm(nn.Module):
    """Embedding -> bidirectional LSTM -> the last step (forward and backward halves) -> Linear, int64 tokens (N, 6)."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(30, 6)
        self.rnn = nn.LSTM(6, 5, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(10, 2)

    def forward(self, tokens):
        out, _ = self.rnn(self.embed(tokens))
        return self.fc(out[:, -1])


class ResidualProjection(nn.Module):
    """Basic residual block at stride 2 with a projection shortcut (1x1 conv + BN), on 4x8x8."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(4, 8, 3, stride=2, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.relu1 = nn.ReLU()
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(8)
        self.shortcut = nn.Sequential(nn.Conv2d(4, 8, 1, stride=2, bias=False), nn.BatchNorm2d(8))
        self.relu = nn.ReLU()

    def forward(self, x):
        return self.relu(self.bn2(self.conv2(self.relu1(self.bn1(self.conv1(x))))) + self.shortcut(x))


class Temporal(nn.Module):
    """Two causal dilated Conv1d (dilation 1 then 2, left padding) with ReLU, on (N, 3, 16); the last step -> Linear."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv1d(3, 6, 3)
        self.relu1 = nn.ReLU()
        self.conv2 = nn.Conv1d(6, 6, 3, dilation=2)
        self.relu2 = nn.ReLU()
        self.fc = nn.Linear(6, 2)

    def forward(self, signal):
        x = self.relu1(self.conv1(F.pad(signal, (2, 0))))
        x = self.relu2(self.conv2(F.pad(x, (4, 0))))
        return self.fc(x[:, :, -1])


class GroupNormNet(nn.Module):
    """Conv -> GroupNorm(2 groups) -> SiLU -> Conv -> global average -> Linear, on 3x8x8."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.norm = nn.GroupNorm(2, 8)
        self.act = nn.SiLU()
        self.conv2 = nn.Conv2d(8, 4, 3, padding=1)
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return self.fc(self.conv2(self.act(self.norm(self.conv1(x)))).mean(dim=(2, 3)))


class BagOfWords(nn.Module):
    """Embedding -> mean over tokens -> Linear -> GELU (tanh approximation) -> LayerNorm -> Linear, int64 (N, 7)."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(40, 8)
        self.fc1 = nn.Linear(8, 16)
        self.act = nn.GELU(approximate="tanh")
        self.norm = nn.LayerNorm(16)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, tokens):
        return self.fc2(self.norm(self.act(self.fc1(self.embed(tokens).mean(dim=1)))))


class TinyUnet(nn.Module):
    """Conv -> ReLU (skip) -> MaxPool -> Conv -> ReLU -> nearest upsample x2 -> concat [up, skip] -> Conv, on 3x8x8."""

    def __init__(self) -> None:
        super().__init__()
        self.down = nn.Conv2d(3, 4, 3, padding=1)
        self.relu1 = nn.ReLU()
        self.pool = nn.MaxPool2d(2)
        self.middle = nn.Conv2d(4, 6, 3, padding=1)
        self.relu2 = nn.ReLU()
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.head = nn.Conv2d(10, 2, 3, padding=1)

    def forward(self, x):
        skip = self.relu1(self.down(x))
        up = self.up(self.relu2(self.middle(self.pool(skip))))
        return self.head(torch.cat([up, skip], dim=1))


class PreluMlp(nn.Module):
    """Linear -> PReLU (one slope per feature) -> Linear -> PReLU -> Linear, on (N, 6)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(6, 10)
        self.act1 = nn.PReLU(10)
        self.fc2 = nn.Linear(10, 10)
        self.act2 = nn.PReLU(10)
        self.fc3 = nn.Linear(10, 2)

    def forward(self, x):
        return self.fc3(self.act2(self.fc2(self.act1(self.fc1(x)))))


class PaddedAverage(nn.Module):
    """Conv -> AvgPool(3, stride 1, padding 1; the zeros counted, PyTorch's default) -> Conv, on 3x8x8."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 3, padding=1)
        self.pool = nn.AvgPool2d(3, stride=1, padding=1)
        self.conv2 = nn.Conv2d(6, 2, 3, padding=1)

    def forward(self, x):
        return self.conv2(self.pool(self.conv1(x)))


class Decoder(nn.Module):
    """Conv -> ReLU -> ConvTranspose (4x4, stride 2, padding 1: doubles the size) -> ReLU -> Conv, on 4x6x6."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(4, 6, 3, padding=1)
        self.relu1 = nn.ReLU()
        self.deconv = nn.ConvTranspose2d(6, 3, 4, stride=2, padding=1)
        self.relu2 = nn.ReLU()
        self.head = nn.Conv2d(3, 2, 3, padding=1)

    def forward(self, x):
        return self.head(self.relu2(self.deconv(self.relu1(self.conv(x)))))


def mobile_block():
    module = _seeded(MobileBlock())
    with torch.no_grad():  # larger weights: ReLU6's clip at 6 is reached on a few samples
        module.depthwise.weight.mul_(8.0)
        module.bn1.weight.mul_(4.0)
        module.pointwise.weight.mul_(3.0)
    return module


def squeeze_excite():
    return _seeded(SqueezeExcite())


def bilstm():
    return _seeded(BiLstm())


def residual_projection():
    return _seeded(ResidualProjection())


def temporal():
    return _seeded(Temporal())


def group_norm():
    return _seeded(GroupNormNet())


def bag_of_words():
    return _seeded(BagOfWords())


def tiny_unet():
    return _seeded(TinyUnet())


def prelu_mlp():
    return _seeded(PreluMlp())


def padded_average():
    return _seeded(PaddedAverage())


def decoder():
    return _seeded(Decoder())
