"""The work of one sample of a reference model, counted by PyTorch itself (torch.utils.flop_counter
.FlopCounterMode: matmuls and convolutions, forward and, for training, backward): what rosetta.bench.peak
divides by the device's peak. The reference models are PyTorch modules, so the count is PyTorch's."""

from __future__ import annotations

COUNTED_BATCH = 2  # FLOPs scale with the batch for these models: one small batch, divided


def flops_per_sample(model: str, task: str, batch: int = COUNTED_BATCH) -> float:
    """Floating-point operations of one sample of the reference model `model`: the forward for inference ("infer");
    forward, loss and backward for training ("train"); counted on a batch of `batch`, divided."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from rosetta.models import get_model
    from rosetta.models.inputs import generate_inputs
    from rosetta.train.optim import synthetic_labels
    from rosetta.train.torch import torch_loss

    spec = get_model(model)
    module = spec.build(0)
    feeds = generate_inputs(spec.inputs, batch, 0)
    inputs = [torch.from_numpy(feeds[tensor.name]) for tensor in spec.inputs]
    with FlopCounterMode(display=False) as counter:
        if task == "train":
            output = module.train()(*inputs)
            labels = torch.from_numpy(synthetic_labels(spec, batch, 0))
            torch_loss(spec.training.loss)(output[0] if isinstance(output, tuple) else output, labels).backward()
        else:
            with torch.no_grad():
                module.eval()(*inputs)
    return counter.get_total_flops() / batch
