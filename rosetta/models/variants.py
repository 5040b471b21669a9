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


def flip_conv_kernels(module: torch.nn.Module, name: str) -> torch.nn.Module:
    """Flip one Conv2d's kernels in both spatial axes: a port that mixes up convolution and cross-correlation
    (Theano and Caffe-era code convolve; PyTorch, TensorFlow and ONNX correlate)."""
    conv = dict(module.named_modules())[name]
    with torch.no_grad():
        conv.weight.copy_(torch.flip(conv.weight, dims=(2, 3)))
    return module


def swap_gru_gates(module: torch.nn.Module, first: int = 0, second: int = 1) -> torch.nn.Module:
    """Swap two gate blocks (torch order r=0, z=1, n=2) in every GRU weight and bias: a converter that
    reorders gates wrongly (ONNX z,r,h vs torch r,z,n vs MXNet r,z,n)."""
    for gru in (m for m in module.modules() if isinstance(m, torch.nn.GRU)):
        for name, tensor in gru.named_parameters():
            blocks = list(tensor.data.chunk(3, dim=0))
            blocks[first], blocks[second] = blocks[second], blocks[first]
            with torch.no_grad():
                tensor.copy_(torch.cat(blocks, dim=0))
    return module


def transpose_gru_recurrent_kernels(module: torch.nn.Module) -> torch.nn.Module:
    """Transpose each square gate block of every GRU's recurrent weight: a converter that forgets that one
    framework stores (out, in) and another (in, out); the shapes still fit, the function does not."""
    for gru in (m for m in module.modules() if isinstance(m, torch.nn.GRU)):
        for name, tensor in gru.named_parameters():
            if name.startswith("weight_hh"):
                with torch.no_grad():
                    tensor.copy_(torch.cat([block.t() for block in tensor.data.chunk(3, dim=0)], dim=0))
    return module
