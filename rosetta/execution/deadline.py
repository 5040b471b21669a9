"""A deadline for code that runs in this process, where no worker can be killed when it hangs: a user's
PyTorch factory that builds the reference, and the reference's forward. Jobs in workers have theirs already
(rosetta.execution.pool kills the worker); ONNX Runtime's in-process runs stop through RunOptions.terminate.

SIGALRM interrupts the main thread wherever it waits in Python or in a call that returns on a signal (sleep,
a lock, a read): `deadline` raises WorkerTimedOut there, and again each second until the block is left, in
case the code it interrupts swallows exceptions. A loop inside one C call is not interrupted; off the main
thread, where no signal is delivered, nothing is bounded.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time

from rosetta.errors import WorkerTimedOut

RAISE_AGAIN_EVERY_S = 1.0


@contextlib.contextmanager
def deadline(seconds: float, what: str):
    """Run the block within `seconds`, else WorkerTimedOut("WHAT timed out after N s (timeout=)"). Nests: an
    enclosing deadline that is sooner is left to fire, and one that is later is set again for the time it has
    left when the block ends."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def expire(signum, frame):
        raise WorkerTimedOut(f"{what} timed out after {seconds:g} s (timeout=)")

    started = time.monotonic()
    previous = signal.signal(signal.SIGALRM, expire)
    outer_left, outer_every = signal.setitimer(signal.ITIMER_REAL, seconds, RAISE_AGAIN_EVERY_S)
    if outer_left and outer_left <= seconds:  # the enclosing deadline comes first: it stays in force
        signal.signal(signal.SIGALRM, previous)
        signal.setitimer(signal.ITIMER_REAL, max(outer_left - (time.monotonic() - started), 1e-6), outer_every)
        yield
        return
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer_left:
            signal.setitimer(signal.ITIMER_REAL, max(outer_left - (time.monotonic() - started), 1e-6), outer_every)
