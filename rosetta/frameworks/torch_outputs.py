"""A torch module as rosetta calls it: tensors in by position, a tuple of tensors out, which is what
torch.onnx.export, torch.export and rosetta's runners take (imported only where torch is wanted)."""

from __future__ import annotations

import torch


class TensorInterface(torch.nn.Module):
    """`module` called with its inputs by keyword where `input_names` are given (Hugging Face's forwards take
    input_ids, past_key_values, attention_mask, ...: a GPT-2's second positional parameter is its cache), and
    returning `module(...)[key]` for each of `output_keys` where they are given (a ModelOutput, torchvision's
    OrderedDicts of segmentation maps or pyramid levels), as a tuple."""

    def __init__(self, module: torch.nn.Module, input_names: tuple | None = None,
                 output_keys: tuple | None = None) -> None:
        super().__init__()
        self.module = module
        self.input_names = tuple(input_names) if input_names else None
        self.output_keys = tuple(output_keys) if output_keys else None

    def forward(self, *inputs):
        result = self.module(**dict(zip(self.input_names, inputs))) if self.input_names else self.module(*inputs)
        return tuple(result[key] for key in self.output_keys) if self.output_keys else result
