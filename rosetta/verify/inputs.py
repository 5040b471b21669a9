"""Seeded inputs generated from a model's signature: the same (signature, batch, seed) gives the same arrays."""

from __future__ import annotations

import numpy as np

# Offset so the input stream differs from the weight stream of the same seed.
INPUT_SEED_OFFSET = 1_000_003


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
            feeds[spec.name] = rng.integers(0, 2, size=shape).astype(bool)
        else:
            low = 0.0 if spec.low is None else spec.low
            high = 1.0 if spec.high is None else spec.high
            feeds[spec.name] = rng.uniform(low, high, size=shape).astype(dtype)
    return feeds
