"""Child processes that die with their parent, and SIGTERM handled like Ctrl-C.

Ctrl-C raises KeyboardInterrupt: context managers remove temporary folders and subprocess.run kills its child.
raise_on_sigterm() makes SIGTERM do the same (raising Terminated, a KeyboardInterrupt). SIGKILL runs no code:
there, children started with preexec_fn=die_with_parent() are killed by the kernel (Linux), and the folders
left behind are removed by the next run (rosetta.scratch).
"""

from __future__ import annotations

import functools
import os
import signal
import sys
import threading
from typing import Callable

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
    the child ends: start it from a thread that outlives it (subprocess.run waits for it, so any thread will)."""
    prctl = _prctl() if sys.platform.startswith("linux") else None
    if prctl is None:
        return None
    parent, kill = os.getpid(), int(signal.SIGKILL)

    def in_child() -> None:  # between fork and exec: no imports, no allocations worth the name
        prctl(PR_SET_PDEATHSIG, kill, 0, 0, 0)
        if os.getppid() != parent:
            os.kill(os.getpid(), kill)

    return in_child


def raise_on_sigterm() -> Callable[[], None]:
    """Make SIGTERM raise Terminated in the main thread; returns the function that puts the previous handler
    back. A no-op outside the main thread, where Python cannot set signal handlers."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def on_sigterm(signum, frame):
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    return lambda: signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)
