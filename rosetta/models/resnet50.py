"""ResNet-50 v1.5 in the torchvision layout (same module and parameter names), cut after the global average
pool: (N, 3, 224, 224) -> (N, 2048). Written here because torchvision cannot be installed beside CPU torch."""

from __future__ import annotations

import torch
from torch import nn

from rosetta.models.init import generator_for, init_batchnorm, init_conv_or_linear
from rosetta.models.registry import ModelSpec, TensorSpec, TrainingSpec, register_model


class Bottleneck(nn.Module):
    """1x1 -> 3x3 (carries the stride: v1.5) -> 1x1 x4, with a projection shortcut where shapes change."""

    expansion = 4

    def __init__(self, inplanes: int, planes: int, stride: int = 1) -> None:
        super().__init__()
        width = planes
        self.conv1 = nn.Conv2d(inplanes, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, planes * self.expansion, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or inplanes != planes * self.expansion:
            self.downsample = nn.Sequential(
                nn.Conv2d(inplanes, planes * self.expansion, 1, stride=stride, bias=False),
                nn.BatchNorm2d(planes * self.expansion),
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + identity)


class ResNet50Features(nn.Module):
    def __init__(self, layers: tuple[int, ...] = (3, 4, 6, 3)) -> None:
        super().__init__()
        self.inplanes = 64
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        self.layer1 = self._make_layer(64, layers[0])
        self.layer2 = self._make_layer(128, layers[1], stride=2)
        self.layer3 = self._make_layer(256, layers[2], stride=2)
        self.layer4 = self._make_layer(512, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))

    def _make_layer(self, planes: int, blocks: int, stride: int = 1) -> nn.Sequential:
        layers = [Bottleneck(self.inplanes, planes, stride)]
        self.inplanes = planes * Bottleneck.expansion
        layers += [Bottleneck(self.inplanes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return torch.flatten(self.avgpool(x), 1)


def build_resnet50(seed: int = 0) -> ResNet50Features:
    model = ResNet50Features()
    g = generator_for(seed)
    for name, module in model.named_modules():
        if isinstance(module, nn.Conv2d):
            init_conv_or_linear(module, g)
        elif isinstance(module, nn.BatchNorm2d):
            # The last BatchNorm of each residual branch gets a smaller scale (like torchvision's
            # zero_init_residual, but non-zero), so 16 residual additions do not blow activations up.
            residual_end = name.endswith("bn3")
            init_batchnorm(module, g, gamma=(0.1, 0.4) if residual_end else (0.5, 1.5))
    return model.eval()


RESNET50 = register_model(ModelSpec(
    name="resnet50",
    description="ResNet-50 v1.5 feature extractor, 2048-D after global average pool (DLF workload 3)",
    factory=build_resnet50,
    inputs=(TensorSpec("images", (None, 3, 224, 224), "float32", -2.0, 2.0),),
    outputs=(TensorSpec("features", (None, 2048), "float32"),),
    parameter_count=23_508_032,
    # DLF times ResNet-50 forward only (feature extraction). These settings serve the training-equivalence
    # check alone (BatchNorm on batch statistics): SGD with plain momentum, mean squared error to seeded targets.
    training=TrainingSpec(epochs=1, batch=32, optimizer="sgd", loss="mse", dlf=False,
                          optimizer_settings={"lr": 0.01, "momentum": 0.9, "nesterov": False}),
))
