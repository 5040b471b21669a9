"""Deliberately wrong variants of the reference models. They model the mistakes real conversions make, and
exist to prove that a verdict can say no (rosetta.verify.faults builds artifacts from them)."""

from __future__ import annotations

import torch

from rosetta.models.cnn import CifarCNN, init_cifar_cnn


class NHWCFlattenCNN(CifarCNN):
    """The CNN flattened in channels-last (H, W, C) order before the first dense layer, whose weights expect
    (C, H, W): the classic mistake of a channels-last port that keeps the channels-first dense weights."""

    def flatten(self, x: torch.Tensor) -> torch.Tensor:
        return torch.flatten(x.permute(0, 2, 3, 1), 1)


def build_cnn_nhwc_flatten(seed: int = 0) -> NHWCFlattenCNN:
    return init_cifar_cnn(NHWCFlattenCNN(), seed)  # same seed -> the same weights as the reference CNN


def perturb_parameter(module: torch.nn.Module, name: str, relative: float, seed: int = 0) -> torch.nn.Module:
    """Multiply each element of one tensor by (1 +/- relative), signs drawn from `seed`: weights that are almost,
    but not exactly, the original ones (a lossy cast, a wrong rounding, a stale copy)."""
    tensor = dict(module.named_parameters())[name]
    generator = torch.Generator().manual_seed(seed)
    signs = torch.randint(0, 2, tensor.shape, generator=generator).to(tensor.dtype) * 2 - 1
    with torch.no_grad():
        tensor.mul_(1 + relative * signs)
    return module
