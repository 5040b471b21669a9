"""Child processes that die with their parent, and SIGTERM handled like Ctrl-C.

Ctrl-C raises KeyboardInterrupt: context managers remove temporary folders and subprocess.run kills its child.
raise_on_sigterm() makes SIGTERM do the same (raising Terminated, a KeyboardInterrupt). SIGKILL runs no code:
there, children started with preexec_fn=die_with_parent() are killed by the kernel (Linux), and the folders
left behind are removed by the next run (rosetta.scratch).
"""

from __future__ import annotations

import contextlib
import functools
import os
import queue
import signal
import subprocess
import sys
import threading
from typing import Callable, Iterator

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread as Ctrl-C is, so that the same cleanup runs."""


@functools.lru_cache(maxsize=None)
def _prctl():
    """libc's prctl, looked up in the parent: the child, between fork and exec, only calls it."""
    import ctypes

    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def die_with_parent() -> Callable[[], None] | None:
    """A preexec_fn for subprocess.run/Popen: on Linux the child asks the kernel to SIGKILL it when this process
    dies (PR_SET_PDEATHSIG), then exits at once if this process already died between fork and prctl (its parent
    is then another process). None (no preexec_fn) elsewhere. The signal fires when the *thread* that started
    the child ends: a child that outlives the call that starts it is started with popen_for_life (subprocess.run
    waits for its child, so any thread will do)."""
    prctl = _prctl() if sys.platform.startswith("linux") else None
    if prctl is None:
        return None
    parent, kill = os.getpid(), int(signal.SIGKILL)

    def in_child() -> None:  # between fork and exec: no imports, no allocations worth the name
        prctl(PR_SET_PDEATHSIG, kill, 0, 0, 0)
        if os.getppid() != parent:
            os.kill(os.getpid(), kill)

    return in_child


_spawn_requests: queue.Queue = queue.Queue()
_spawner_lock = threading.Lock()
_spawner: threading.Thread | None = None


def _spawn_forever() -> None:
    while True:
        args, kwargs, reply = _spawn_requests.get()
        try:
            reply.put((subprocess.Popen(args, preexec_fn=die_with_parent(), **kwargs), None))
        except BaseException as error:  # noqa: BLE001 - raised again in the thread that asked
            reply.put((None, error))


def popen_for_life(args, **kwargs) -> subprocess.Popen:
    """subprocess.Popen for a child that dies with this process and not before: started from one daemon thread
    that lives as long as the process. PR_SET_PDEATHSIG fires when the starting *thread* ends, so a warm worker
    started from an executor's thread was killed when that thread pool was shut down, and the next job sent to it
    read a SIGKILL (the first two cells of every 60-pair chunk of `rosetta conformance`)."""
    global _spawner
    with _spawner_lock:
        if _spawner is None or not _spawner.is_alive():
            _spawner = threading.Thread(target=_spawn_forever, name="rosetta-spawner", daemon=True)
            _spawner.start()
    reply: queue.Queue = queue.Queue(maxsize=1)
    _spawn_requests.put((args, kwargs, reply))
    process, error = reply.get()
    if error is not None:
        raise error
    return process


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold SIGINT and SIGTERM until the block ends, then act on them as usual: for a few steps that must all
    happen or none (the renames that install an output). Python handlers, not a signal mask: a signal masked
    in this thread would be taken by another thread, and Python runs its handler in this one all the same.
    A no-op outside the main thread, where the handlers never run."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    previous = {signum: signal.signal(signum, lambda number, frame: held.append(number))
                for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
        if held:
            signal.raise_signal(held[0])


_RECEIVED: list[int] = []  # the signals raise_on_sigterm's handlers took since it was called


def signal_received() -> int | None:
    """The last SIGINT or SIGTERM taken since raise_on_sigterm(), or None. The exception a handler raises can be
    turned into another by the code it lands in (a signal during an extension module's import: pybind11 makes it
    'ImportError: initialization failed'); the run was stopped all the same, and says so."""
    return _RECEIVED[-1] if _RECEIVED else None


def raise_on_sigterm() -> Callable[[], None]:
    """Make SIGTERM raise Terminated in the main thread (and SIGINT KeyboardInterrupt, as Python's own handler
    does, where it is in force), each remembered for signal_received(); returns the function that puts the
    previous handlers back. A no-op outside the main thread, where Python cannot set signal handlers."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    _RECEIVED.clear()

    def on_sigterm(signum, frame):
        _RECEIVED.append(signum)
        raise Terminated()

    def on_sigint(signum, frame):
        _RECEIVED.append(signum)
        raise KeyboardInterrupt()

    previous_hook = sys.unraisablehook

    def on_unraisable(unraisable) -> None:
        """A handler's exception raised where Python can only drop it (a weakref callback, a __del__: a SIGTERM
        during an import ran in importlib's module-lock callback, and the endless run it should have stopped went
        on): the signal is delivered again, once this hook has returned (from another thread: raised here, it
        would be dropped too), to land at a later step of the main thread's own code."""
        if isinstance(unraisable.exc_value, KeyboardInterrupt) and _RECEIVED:
            threading.Timer(0.01, deliver_again, (_RECEIVED[-1],)).start()
        else:
            previous_hook(unraisable)

    def deliver_again(signum: int) -> None:
        if signal.getsignal(signum) in (on_sigterm, on_sigint):  # not once the run is over
            os.kill(os.getpid(), signum)

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    # an ignored SIGINT (a job started in the background) stays ignored
    previous_int = signal.getsignal(signal.SIGINT)
    if previous_int is signal.default_int_handler:
        signal.signal(signal.SIGINT, on_sigint)
    sys.unraisablehook = on_unraisable

    def restore() -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)
        if previous_int is signal.default_int_handler:
            signal.signal(signal.SIGINT, previous_int)
        sys.unraisablehook = previous_hook

    return restore
