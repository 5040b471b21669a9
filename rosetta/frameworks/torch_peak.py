"""The device's matmul peak in a run's precision, measured with PyTorch (rosetta.bench.peak divides a row's
work by it)."""

from __future__ import annotations

import time

PEAK_SIZES = {"cuda": 8192, "cpu": 1024}  # the square matmul timed (8192: the H100 figures of the issue)
PEAK_REPEATS = 10


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
