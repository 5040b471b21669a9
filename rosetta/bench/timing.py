"""The timing primitive every benchmark uses: warm-up excluded, synchronised clock reads, repeats, median."""

from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass
from typing import Callable


@dataclass
class Timing:
    repeats: int
    warmup: int
    median_s: float
    min_s: float
    max_s: float
    p10_s: float
    p90_s: float

    def to_json(self) -> dict:
        return asdict(self)


def time_call(step: Callable[[], object], repeats: int = 10, warmup: int = 2,
              synchronize: Callable[[], None] = lambda: None) -> Timing:
    """Time `step` `repeats` times after `warmup` untimed calls; `synchronize` (e.g. torch.cuda.synchronize)
    runs before every clock read so that asynchronous devices are timed for the work they did."""
    if repeats < 1:
        raise ValueError("repeats must be at least 1")
    for _ in range(warmup):
        step()
    samples = []
    for _ in range(repeats):
        synchronize()
        start = time.perf_counter()
        step()
        synchronize()
        samples.append(time.perf_counter() - start)
    ordered = sorted(samples)
    decile = lambda q: ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]  # noqa: E731
    return Timing(repeats, warmup, statistics.median(samples), ordered[0], ordered[-1], decile(0.1), decile(0.9))
