"""How close a timed row is to the hardware: the work of one sample of a workload, counted on the reference
model, and the device's peak in the run's precision, measured once per run; a row's fraction of the peak is
its samples/s x FLOPs per sample / peak FLOP/s.

FLOPs are PyTorch's own count (rosetta.train.torch_flops: matmuls and convolutions, forward and, for training,
backward), which is also what a matmul peak measures (rosetta.frameworks.torch_peak); the optimiser's
elementwise update and the activations are not counted, so the fraction is of the arithmetic a GPU's tensor
cores do.
"""

from __future__ import annotations

from rosetta.frameworks.torch_peak import PEAK_REPEATS, PEAK_SIZES, matmul_peak  # noqa: F401 - bench's names
from rosetta.train.torch_flops import COUNTED_BATCH, flops_per_sample as model_flops_per_sample  # noqa: F401


def flops_per_sample(workload) -> float:
    """Floating-point operations of one sample of `workload` (rosetta.bench.workloads) on its reference model:
    the forward for inference; forward, loss and backward for training."""
    return model_flops_per_sample(workload.model, workload.task)


def peak_job(argument: dict) -> dict:
    """Job (rosetta.execution, a fresh worker of its own): matmul_peak(device, precision)."""
    return matmul_peak(argument["device"], argument["precision"], argument.get("size"))
