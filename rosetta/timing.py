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
    mean_s: float
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
    return time_steps(lambda _index: step(), repeats, warmup, synchronize)[0]


def time_steps(step: Callable[[int], object], repeats: int, warmup: int = 0,
               synchronize: Callable[[], None] = lambda: None) -> tuple[Timing, list]:
    """Call step(0..warmup-1) untimed, then step(warmup..warmup+repeats-1) each timed between synchronised
    clock reads: the Timing and the timed calls' return values (e.g. the loss of each training step)."""
    if repeats < 1:
        raise ValueError("repeats must be at least 1")
    for index in range(warmup):
        step(index)
    samples, results = [], []
    for index in range(warmup, warmup + repeats):
        synchronize()
        start = time.perf_counter()
        results.append(step(index))
        synchronize()
        samples.append(time.perf_counter() - start)
    return summarize(samples, warmup), results


def summarize(samples: list[float], warmup: int = 0) -> Timing:
    ordered = sorted(samples)
    decile = lambda q: ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]  # noqa: E731
    return Timing(len(samples), warmup, statistics.median(samples), statistics.fmean(samples), ordered[0], ordered[-1], decile(0.1), decile(0.9))
