"""Scratch folders that a killed run does not leave behind: the next run removes them.

A scratch folder holds a lock file (LOCK_NAME) that the process which made it keeps flock()ed for as long as
the folder lives. The kernel drops an flock when its holder dies, however it dies (SIGKILL included), so a
later run that finds the folder and can take its lock knows the owner is gone, and removes it (remove_stale).
No PIDs: they are reused. The lock's file descriptor is close-on-exec, so workers do not hold it.

No race with a live run: the lock file is created and locked under a temporary name and only then renamed to
LOCK_NAME, so a lock file that exists is locked while its owner lives; a folder without one is being made
right now (or its owner died in those microseconds) and is kept. Such lock-less folders are removed only
where the caller says its names can only be rosetta's (`unlocked_after`, e.g. an output's hidden
.NAME.partial-* siblings, which older rosetta versions made without a lock), and only when that old: never in
the system temp folder, where a user's own /tmp/rosetta-checkout must not be taken for one of ours.
Removal deletes the lock file last, so a run killed while removing leaves a folder that is still recognised.

A folder that holds a journal (JOURNAL_NAME) is work half done that must be finished or undone, not thrown
away (rosetta.output: a user's old output, moved aside while the new one is installed): neither its owner nor
remove_stale removes it; the code that wrote the journal undoes the work, removes the journal, then the folder.

Only folders named PREFIX + mkdtemp's 8 random characters, owned by this user, not symbolic links, are looked at.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import stat
import tempfile
import time
from pathlib import Path
from typing import Iterator

LOCK_NAME = ".rosetta-lock"
JOURNAL_NAME = ".rosetta-journal.json"
DAY_S = 24 * 3600.0
_RANDOM_TAIL = re.compile(r"[a-z0-9_]{8}")  # tempfile.mkdtemp's random part


@contextlib.contextmanager
def scratch_folder(prefix: str, dir: str | Path | None = None, unlocked_after: float | None = None) -> Iterator[Path]:
    """A new folder PREFIX + 8 random characters in `dir` (default: the system temp folder), locked for the life
    of the block and removed after it; stale folders of the same prefix (see remove_stale) are removed first."""
    parent = Path(dir) if dir is not None else Path(tempfile.gettempdir())
    remove_stale(parent, prefix, unlocked_after)
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    lock = None
    try:
        lock = _new_lock(folder)
        yield folder
    finally:
        if not (folder / JOURNAL_NAME).exists():
            _remove(folder)
        if lock is not None:
            os.close(lock)  # only now: the folder is gone


@contextlib.contextmanager
def exclusive(lock_path: str | Path) -> Iterator[None]:
    """Block until this process holds the lock file `lock_path` (made if missing), for the life of the block:
    processes that share a folder (test workers, Ray tasks) make a shared artifact once, not concurrently.
    The kernel drops the lock if the holder dies, so a killed holder never blocks the next one."""
    descriptor = os.open(lock_path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)


def remove_stale(dir: str | Path, prefix: str, unlocked_after: float | None = None) -> list[Path]:
    """Remove the scratch folders PREFIX* in `dir` whose owner is dead (their lock can be taken); with
    `unlocked_after` (seconds), also those without a lock file that are older than that. Returns those removed."""
    try:
        entries = list(os.scandir(dir))
    except OSError:
        return []
    removed = []
    for entry in entries:
        if not (entry.name.startswith(prefix) and _RANDOM_TAIL.fullmatch(entry.name[len(prefix):])):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and _remove_if_stale(Path(entry.path), info,
                                                                                         unlocked_after):
            removed.append(Path(entry.path))
    return removed


def _new_lock(folder: Path) -> int:
    """Create, lock, then publish the folder's lock file; returns its descriptor, to keep open."""
    fresh = folder / f"{LOCK_NAME}.new"
    descriptor = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.rename(fresh, folder / LOCK_NAME)
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor


def _remove_if_stale(folder: Path, info: os.stat_result, unlocked_after: float | None) -> bool:
    if os.path.lexists(folder / JOURNAL_NAME):  # work to undo first (see the module docstring)
        return False
    try:
        descriptor = os.open(folder / LOCK_NAME, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:  # being made right now, or not ours
        if unlocked_after is None or time.time() - info.st_mtime < unlocked_after:
            return False
        _remove(folder)
        return True
    except OSError:
        return False
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held: its owner is alive
            return False
        _remove(folder)  # holding the lock: no other run removes it at the same time
        return True
    finally:
        os.close(descriptor)


def _remove(folder: Path) -> None:
    """Remove the folder, its lock file last (a removal cut short leaves a folder still recognised as stale)."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        entries = []
    for entry in entries:
        if entry.name == LOCK_NAME:
            continue
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                os.unlink(entry.path)
    with contextlib.suppress(OSError):
        os.unlink(folder / LOCK_NAME)
    with contextlib.suppress(OSError):
        os.rmdir(folder)
