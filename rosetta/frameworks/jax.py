"""JAX, as rosetta meets it: the backend under Keras 3 (KERAS_BACKEND=jax). What a run needs to say honestly
what JAX did: the matmul precision in force, the device an array lives on, the devices JAX sees and its peak
device memory. Imported only by the Keras module, in the process that runs Keras.

On a GPU, JAX's default matmul precision for float32 is TF32-class (one bfloat16 pass on an H100's tensor
cores): `rosetta verify --targets keras` on JAX FAILed at 1,160-2,770x the noise floor until the precision was
`highest`. So an fp32 run sets `highest` and a tf32 run `tensorfloat32`, and each row reads the setting back.
"""

from __future__ import annotations

from rosetta.errors import Unsupported

# jax_default_matmul_precision for each rosetta precision (amp-*: Keras's mixed policy casts the compute to
# bfloat16 or float16; what stays float32 is computed at `highest`)
MATMUL_PRECISION = {"fp32": "highest", "tf32": "tensorfloat32", "amp-bf16": "highest", "amp-fp16": "highest"}


# The same names as rosetta.frameworks.torch and .tensorflow: set_precision, precision_in_force, check_device,
# device_of, devices, reset_peak_memory, peak_memory_mb (what Keras on the JAX backend asks of it).


def set_precision(precision: str) -> None:
    import jax

    jax.config.update("jax_default_matmul_precision", MATMUL_PRECISION[precision])


def precision_in_force() -> dict:
    import jax

    return {"matmul": jax.config.jax_default_matmul_precision or "default (TF32-class on a GPU)"}


def platform(device: str) -> str:
    return "gpu" if device == "cuda" else "cpu"


def check_device(device: str) -> None:
    """Refuse (Unsupported) a device JAX does not see: never a CPU run under a cuda label."""
    import jax

    try:
        jax.devices(platform(device))
    except RuntimeError:
        raise Unsupported(f"device={device!r}: JAX sees no GPU (its devices: {', '.join(describe(d) for d in jax.devices())}); "
                          "install jax[cuda13] on a machine with a GPU") from None


def describe(device) -> str:
    """'cpu:0', 'gpu:0 NVIDIA H100 80GB HBM3': the platform, the index and, where it says more, the kind."""
    kind = device.device_kind
    return f"{device.platform}:{device.id}" + (f" {kind}" if kind.lower() != device.platform else "")


def device_of(array) -> str:
    """Where a JAX array lives, as JAX says."""
    return ", ".join(sorted(describe(device) for device in array.devices()))


def reset_peak_memory(device: str) -> None:
    """JAX cannot reset its peak: it is the process's, which for a bench cell (a fresh worker) is the cell's."""


def peak_memory_mb(device: str) -> float | None:
    """Peak memory in use on the first device of `device`'s platform (None where JAX keeps no statistics: CPU)."""
    import jax

    stats = jax.devices(platform(device))[0].memory_stats()
    return stats["peak_bytes_in_use"] / 2**20 if stats and "peak_bytes_in_use" in stats else None


def devices() -> list[str]:
    """Every device JAX sees: its CPU and, where its CUDA plugin finds one, each GPU."""
    import jax

    try:
        gpus = jax.devices("gpu")
    except RuntimeError:  # no GPU platform
        gpus = []
    return [describe(device) for device in jax.devices("cpu") + gpus]


def environment() -> dict:
    """What `rosetta env` shows of Keras on JAX: JAX's version and devices, its matmul precision, and whether
    its processes take GPU memory on demand (rosetta.execution sets it for every worker)."""
    import os

    import jax

    found = devices()
    return {"version": f"jax {jax.__version__}", "devices": found,
            "cuda": "JAX's CUDA plugin" if any(not name.startswith("cpu") for name in found) else None,
            "cudnn": None,
            "settings": {"jax version": jax.__version__,
                         "jax matmul precision": "highest unless a run's precision is tf32 (JAX's default here: "
                                                 f"{jax.config.jax_default_matmul_precision or 'TF32-class on a GPU'})",
                         "XLA_PYTHON_CLIENT_PREALLOCATE": os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE", "not set")}}
