"""Seeded inputs generated from a model's signature: the same (signature, batch, seed) gives the same arrays.
They are drawn directly in their dtype (no float64 intermediate), after a check that they, and the outputs
they produce, fit in memory."""

from __future__ import annotations

import math
import os

import numpy as np

from rosetta.errors import RosettaError

# Offset so the input stream differs from the weight stream of the same seed.
INPUT_SEED_OFFSET = 1_000_003
DEFAULT_MEMORY_SHARE = 0.5  # of the machine's memory, for the generated inputs and the reference outputs
GIB = 1 << 30


def generate_inputs(inputs, batch: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed + INPUT_SEED_OFFSET)
    feeds = {}
    for spec in inputs:
        shape = spec.concrete_shape(batch)
        dtype = np.dtype(spec.dtype)
        if dtype.kind in "iu":
            low = 0 if spec.low is None else int(spec.low)
            high = 2 if spec.high is None else int(spec.high)
            feeds[spec.name] = rng.integers(low, high, size=shape, dtype=dtype)
        elif dtype.kind == "b":
            feeds[spec.name] = rng.integers(0, 2, size=shape, dtype=np.uint8).view(bool)
        else:
            low = 0.0 if spec.low is None else spec.low
            high = 1.0 if spec.high is None else spec.high
            drawn = np.float64 if dtype == np.float64 else np.float32  # numpy draws floats in these two only
            values = rng.random(size=shape, dtype=drawn)
            values *= drawn(high - low)
            values += drawn(low)
            feeds[spec.name] = values.astype(dtype, copy=False)
    return feeds


def machine_memory() -> int:
    """Physical memory of this machine in bytes."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def default_memory_limit() -> float:
    """The default --max-memory, in GiB."""
    return round(machine_memory() * DEFAULT_MEMORY_SHARE / GIB, 1)


def tensor_bytes(specs, batch: int) -> int:
    """Bytes of arrays of these specs at `batch` (axes the signature leaves free count as 1)."""
    return sum(math.prod(d if isinstance(d, int) and d > 0 else 1 for d in spec.concrete_shape(batch))
               * np.dtype(spec.dtype).itemsize for spec in specs)


def readable_size(size: float) -> str:
    """Bytes as a person reads them: 512 bytes, 4.8 MiB, 1.5 GiB (never "0.0 GiB")."""
    for unit, factor in (("GiB", GIB), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= factor:
            return f"{size / factor:.1f} {unit}"
    return f"{size:.0f} bytes"


def check_memory(inputs, outputs, batch: int, limit_gib: float | None, float64: bool = False) -> None:
    """Refuse, before any work, inputs and reference outputs that would not fit in `limit_gib` (None: the
    default share of the machine). A float64 reference holds a float64 copy of each as well."""
    needed = tensor_bytes(inputs, batch) + tensor_bytes(outputs, batch)
    if float64:
        needed *= 3  # float32 arrays, then their float64 copies (8 bytes for 4)
    limit = default_memory_limit() if limit_gib is None else limit_gib
    if needed > limit * GIB:
        shapes = ", ".join(f"{s.name} {'x'.join(str(d) for d in s.concrete_shape(batch))} {s.dtype}" for s in inputs)
        raise RosettaError(f"inputs and reference outputs at batch {batch} ({shapes}) need {readable_size(needed)}, "
                           f"more than the {readable_size(limit * GIB)} allowed; lower batch= or the inputs= shapes, or raise "
                           f"max_memory=GIB (default {DEFAULT_MEMORY_SHARE:.0%} of this machine's "
                           f"{machine_memory() / GIB:.0f} GiB)")
