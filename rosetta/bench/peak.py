"""How close a timed row is to the hardware: the work of one sample of a workload, counted on the reference
model, and the device's peak in the run's precision, measured once per run; a row's fraction of the peak is
its samples/s x FLOPs per sample / peak FLOP/s.

FLOPs are PyTorch's own count (torch.utils.flop_counter.FlopCounterMode: matmuls and convolutions, forward
and, for training, backward), which is also what a matmul peak measures; the optimiser's elementwise update
and the activations are not counted, so the fraction is of the arithmetic a GPU's tensor cores do.
"""

from __future__ import annotations

import time

COUNTED_BATCH = 2  # FLOPs scale with the batch for these models: one small batch, divided
PEAK_SIZES = {"cuda": 8192, "cpu": 1024}  # the square matmul timed (8192: the H100 figures of the issue)
PEAK_REPEATS = 10


def flops_per_sample(workload) -> float:
    """Floating-point operations of one sample of `workload` (rosetta.bench.workloads) on its reference model:
    the forward for inference; forward, loss and backward for training."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from rosetta.models import get_model
    from rosetta.models.inputs import generate_inputs
    from rosetta.train.optim import synthetic_labels
    from rosetta.train.torch import torch_loss

    spec = get_model(workload.model)
    model = spec.build(0)
    feeds = generate_inputs(spec.inputs, COUNTED_BATCH, 0)
    inputs = [torch.from_numpy(feeds[tensor.name]) for tensor in spec.inputs]
    with FlopCounterMode(display=False) as counter:
        if workload.task == "train":
            output = model.train()(*inputs)
            labels = torch.from_numpy(synthetic_labels(spec, COUNTED_BATCH, 0))
            torch_loss(spec.training.loss)(output[0] if isinstance(output, tuple) else output, labels).backward()
        else:
            with torch.no_grad():
                model.eval()(*inputs)
    return counter.get_total_flops() / COUNTED_BATCH


def matmul_peak(device: str, precision: str, size: int | None = None, repeats: int = PEAK_REPEATS) -> dict:
    """The device's matmul throughput in the run's precision (fp32: float32 with TF32 off; tf32: TF32 on;
    amp-bf16 and amp-fp16: bfloat16 and float16 operands), from `repeats` size^3 matmuls after two warm-up
    ones, the device synchronised where the clock is read: {"flops_per_s", "matmul", "dtype", "precision in
    force", "device"}."""
    import torch

    from rosetta.frameworks.torch import precision_in_force, set_precision, synchronizer, torch_device

    where, size = torch_device(device), size or PEAK_SIZES[device]
    set_precision(precision)
    dtype = {"amp-bf16": torch.bfloat16, "amp-fp16": torch.float16}.get(precision, torch.float32)
    generator = torch.Generator(where).manual_seed(0)
    a, b = (torch.randn(size, size, device=where, dtype=dtype, generator=generator) for _ in range(2))
    synchronize = synchronizer(where)
    for _ in range(2):
        a @ b
    synchronize()
    start = time.perf_counter()
    for _ in range(repeats):
        a @ b
    synchronize()
    seconds = (time.perf_counter() - start) / repeats
    name = torch.cuda.get_device_name(where) if where.type == "cuda" else "CPU"
    return {"flops_per_s": 2 * size**3 / seconds, "matmul": f"{size}x{size} @ {size}x{size}",
            "dtype": str(dtype).removeprefix("torch."), "precision in force": precision_in_force(),
            "device": f"{a.device} ({name})"}


def peak_job(argument: dict) -> dict:
    """Job (rosetta.execution, a fresh worker of its own): matmul_peak(device, precision)."""
    return matmul_peak(argument["device"], argument["precision"], argument.get("size"))
