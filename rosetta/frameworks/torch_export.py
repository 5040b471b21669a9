"""A PyTorch module exported to ONNX as MMdnn's PyTorch parser reads it (rosetta.convert.mmdnn.parse_torch:
the TorchScript exporter, no constant folding, training mode preserved), so that its nodes line up by position
with the IR's (rosetta.verify.locate_mmdnn reads their values as the IR nodes' references)."""

from __future__ import annotations

import io

import numpy as np


def onnx_as_mmdnn_reads(module, example: np.ndarray, input_name: str):
    """`module` (put in eval mode) exported on `example` (one sample of the input `input_name`, its batch axis
    free), as an onnx.ModelProto."""
    import onnx
    import torch
    from torch.onnx import TrainingMode

    buffer = io.BytesIO()
    with torch.no_grad():
        torch.onnx.export(module.eval(), (torch.as_tensor(example),), buffer, dynamo=False, do_constant_folding=False,
                          training=TrainingMode.PRESERVE, input_names=[input_name],
                          dynamic_axes={input_name: {0: "batch"}})
    return onnx.load_from_string(buffer.getvalue())


def named_modules(module) -> set[str]:
    """The names of `module`'s submodules (its own, the empty name, left out)."""
    return {name for name, _ in module.named_modules() if name}
