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
    window_s: float | None = None  # time_window: the wall time of all timed steps, from one clock read to the next

    def to_json(self) -> dict:
        return asdict(self)


class HostClock:
    """Stamps read on the host: each step's time is exact for work the host waits for (a CPU's)."""

    def stamp(self) -> float:
        return time.perf_counter()

    def seconds(self, start: float, end: float) -> float:
        return end - start


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


def time_window(step: Callable[[int], object], repeats: int, warmup: int = 0,
                synchronize: Callable[[], None] = lambda: None, clock=None) -> tuple[Timing, list]:
    """Like time_steps, but the timed steps run back to back and the device is synchronised only where the host
    reads the clock: before the first timed step and after the last (an asynchronous device keeps its queue
    full). Each step's time is between `clock` stamps around it (a device's own timestamps, e.g. CUDA events,
    read after the window; HostClock by default); `window_s` is the whole window's wall time."""
    if repeats < 1:
        raise ValueError("repeats must be at least 1")
    clock = clock or HostClock()
    for index in range(warmup):
        step(index)
    synchronize()
    start = time.perf_counter()
    stamps, results = [clock.stamp()], []
    for index in range(warmup, warmup + repeats):
        results.append(step(index))
        stamps.append(clock.stamp())
    synchronize()
    window = time.perf_counter() - start
    timing = summarize([clock.seconds(a, b) for a, b in zip(stamps, stamps[1:])], warmup)
    timing.window_s = window
    return timing, results


def summarize(samples: list[float], warmup: int = 0) -> Timing:
    ordered = sorted(samples)
    decile = lambda q: ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]  # noqa: E731
    return Timing(len(samples), warmup, statistics.median(samples), statistics.fmean(samples), ordered[0], ordered[-1], decile(0.1), decile(0.9))
