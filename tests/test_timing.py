from __future__ import annotations

import pytest

from rosetta.timing import time_call


def test_warmup_is_excluded_and_sync_runs_around_every_repeat():
    calls, syncs = [], []
    timing = time_call(lambda: calls.append(1), repeats=5, warmup=3, synchronize=lambda: syncs.append(1))
    assert len(calls) == 8 and len(syncs) == 10
    assert timing.repeats == 5 and timing.min_s <= timing.median_s <= timing.max_s


def test_repeats_must_be_positive():
    with pytest.raises(ValueError):
        time_call(lambda: None, repeats=0)


def test_a_window_synchronises_only_where_the_clock_is_read_and_times_each_step_by_its_stamps():
    """--resident-data: steps back to back, the device synchronised twice (before the first timed step, after the
    last); each step's time comes from the clock's stamps around it, here a fake device clock."""
    from rosetta.timing import time_window

    class DeviceClock:  # a step of index i takes i ms on the "device"
        def __init__(self):
            self.now, self.stamps = 0.0, 0

        def stamp(self):
            self.stamps += 1
            return self.now

        def seconds(self, start, end):
            return end - start

    clock, syncs = DeviceClock(), []

    def step(index):
        clock.now += index / 1000
        return index

    timing, results = time_window(step, repeats=4, warmup=2, synchronize=lambda: syncs.append(1), clock=clock)
    assert results == [2, 3, 4, 5] and len(syncs) == 2 and clock.stamps == 5
    assert timing.median_s == pytest.approx(0.0035) and timing.min_s == pytest.approx(0.002)
    assert timing.window_s is not None and timing.window_s >= 0
