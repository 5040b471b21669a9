"""Seeded, deterministic initialisation shared by the reference models.

Weights are Glorot/Xavier uniform, as in the DLF benchmark. Biases and BatchNorm statistics get small
non-trivial seeded values rather than the usual zeros/ones, so that a conversion that drops a bias or
mishandles BatchNorm changes the outputs and is caught. All values are drawn on the CPU from one
torch.Generator in a fixed parameter order, so the same seed gives bit-identical weights.
"""

from __future__ import annotations

import math

import torch


def glorot_uniform_(tensor: torch.Tensor, generator: torch.Generator, fan_in: int, fan_out: int) -> None:
    bound = math.sqrt(6.0 / (fan_in + fan_out))
    with torch.no_grad():
        tensor.copy_(torch.rand(tensor.shape, generator=generator, dtype=torch.float32) * 2 * bound - bound)


def uniform_(tensor: torch.Tensor, generator: torch.Generator, low: float, high: float) -> None:
    with torch.no_grad():
        tensor.copy_(torch.rand(tensor.shape, generator=generator, dtype=torch.float32) * (high - low) + low)


def conv_fans(weight: torch.Tensor) -> tuple[int, int]:
    """Glorot fans of a (out, in, *kernel) weight, as Keras and torch compute them."""
    receptive = weight[0, 0].numel()
    return weight.shape[1] * receptive, weight.shape[0] * receptive


def init_conv_or_linear(module: torch.nn.Module, generator: torch.Generator, bias_range: float = 0.1) -> None:
    fan_in, fan_out = conv_fans(module.weight)
    glorot_uniform_(module.weight, generator, fan_in, fan_out)
    if module.bias is not None:
        uniform_(module.bias, generator, -bias_range, bias_range)


def init_batchnorm(module: torch.nn.modules.batchnorm._BatchNorm, generator: torch.Generator,
                   gamma: tuple[float, float] = (0.5, 1.5)) -> None:
    """Non-trivial affine parameters and running statistics (mean != 0, var != 1)."""
    uniform_(module.weight, generator, *gamma)
    uniform_(module.bias, generator, -0.2, 0.2)
    uniform_(module.running_mean, generator, -0.2, 0.2)
    uniform_(module.running_var, generator, 0.5, 1.5)


def generator_for(seed: int) -> torch.Generator:
    return torch.Generator(device="cpu").manual_seed(int(seed))
