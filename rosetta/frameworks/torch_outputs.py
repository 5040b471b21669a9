"""A torch module whose forward returns a mapping of tensors, as one that returns them as a tuple: what
torch.onnx.export, torch.export and rosetta's runners take (imported only where torch is wanted)."""

from __future__ import annotations

import torch


class MappingOutputs(torch.nn.Module):
    """`module(*inputs)[key]` for each of `keys`, as a tuple (Hugging Face's ModelOutput, torchvision's
    OrderedDicts of segmentation maps or pyramid levels)."""

    def __init__(self, module: torch.nn.Module, keys: tuple) -> None:
        super().__init__()
        self.module = module
        self.keys = tuple(keys)

    def forward(self, *inputs):
        result = self.module(*inputs)
        return tuple(result[key] for key in self.keys)
