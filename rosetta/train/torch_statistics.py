"""What a PyTorch model's BatchNorms normalise over in one training step: rosetta.verify.training's tolerance
for running variances updated with the biased batch variance (Keras, MXNet) against PyTorch's unbiased one."""

from __future__ import annotations

import numpy as np


def fewest_normalised_values(model, arrays: list[np.ndarray]) -> int:
    """The fewest values any BatchNorm of `model` (put in train mode) normalises each channel over in one step on
    `arrays` (batch x the spatial size of its input): the n of the n/(n-1) between an unbiased and a biased batch
    variance; 0 where it has no BatchNorm."""
    import torch

    model, counts = model.train(), []
    hooks = [layer.register_forward_pre_hook(lambda _, args: counts.append(args[0].numel() // args[0].shape[1]))
             for layer in model.modules() if isinstance(layer, torch.nn.modules.batchnorm._BatchNorm)]
    with torch.no_grad():
        model(*[torch.from_numpy(array) for array in arrays])
    for hook in hooks:
        hook.remove()
    return min(counts) if counts else 0
