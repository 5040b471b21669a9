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
