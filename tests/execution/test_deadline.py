"""execution.deadline: code in this process that waits past its deadline is stopped with WorkerTimedOut, even
code that swallows the first one; deadlines nest; off the main thread nothing is bounded (no signal there)."""

from __future__ import annotations

import signal
import threading
import time

import pytest

from rosetta.errors import WorkerTimedOut
from rosetta.execution.deadline import deadline


def test_a_wait_past_the_deadline_raises_worker_timed_out_naming_it():
    started = time.monotonic()
    with pytest.raises(WorkerTimedOut, match=r"^building net.py:build timed out after 0.3 s \(timeout=\)$"):
        with deadline(0.3, "building net.py:build"):
            threading.Event().wait()
    assert time.monotonic() - started < 5
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)  # nothing left armed


def test_code_that_swallows_the_first_timeout_gets_another():
    swallowed = []
    with pytest.raises(WorkerTimedOut):
        with deadline(0.2, "a model"):
            try:
                threading.Event().wait()
            except Exception as error:  # noqa: BLE001 - what a careless model does
                swallowed.append(error)
            threading.Event().wait()  # and then waits on
    assert [type(error) for error in swallowed] == [WorkerTimedOut]


def test_deadlines_nest_and_the_sooner_one_fires():
    with pytest.raises(WorkerTimedOut, match="^outer"):
        with deadline(0.6, "outer"):
            with deadline(0.1, "inner, done in time"):
                pass
            with pytest.raises(WorkerTimedOut, match="^inner"):
                with deadline(0.1, "inner"):
                    threading.Event().wait()
            with deadline(30, "inner, later than the outer"):
                threading.Event().wait()


def test_off_the_main_thread_nothing_is_bounded():
    done = []

    def work():
        with deadline(0.05, "off the main thread"):
            time.sleep(0.3)
        done.append(True)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert done == [True]
