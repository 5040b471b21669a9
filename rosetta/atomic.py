"""Files written whole or not at all: every file rosetta writes for a user (JSON, .npz, charts, reports,
manifests) goes through `atomic_write`.

The content goes to a hidden temporary file beside the destination, is flushed to the disk, and only then
renamed over it: a full disk, a crash or Ctrl-C at any point leaves the old file or the new one, never a
truncated or empty one, and never the temporary file (removed on every error). A write error names the file
it was for: "No space left on device: results.json", not "No space left on device: ".
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import io
import json
import math
import os
import tempfile
from pathlib import Path
from typing import BinaryIO, Callable

PARTIAL_SUFFIX = ".partial"  # the temporary files' names: .NAME.XXXXXXXX.partial, beside NAME


def atomic_write(path: str | Path, write: Callable[[BinaryIO], object], sync: bool = True) -> Path:
    """`write(stream)` writes the file's bytes to `stream`; they become `path` only if it returns. The new
    file keeps the old one's mode where there was one, else the umask's (mkstemp's 0600 would hide it).
    `sync`: flushed to the disk before the rename (not needed for a scratch file that dies with the run)."""
    path = Path(path)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=PARTIAL_SUFFIX, dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as raw:
            stream = _StagedStream(raw)
            write(stream)
            stream.finish(sync)
        os.chmod(temporary, _mode_for(path))
        os.replace(temporary, path)
    except BaseException as error:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        if isinstance(error, OSError) and not error.filename:
            raise OSError(error.errno, error.strerror or str(error), str(path)) from None
        raise
    return path


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    return atomic_write(path, lambda stream: stream.write(data))


def atomic_write_text(path: str | Path, text: str) -> Path:
    return atomic_write_bytes(path, text.encode())


# JSON has no NaN or infinity: Python writes bare NaN and Infinity, which strict readers (jq, JavaScript's
# JSON.parse, Go, ...) refuse. rosetta writes them as these strings, where the number would be.
NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def strict_json(value):
    """`value` with every non-finite float replaced by its NON_FINITE string (numpy scalars made Python's)."""
    if isinstance(value, dict):
        return {key: strict_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict_json(item) for item in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)) and getattr(value, "ndim", None) == 0:
        value = value.item()  # a numpy scalar
    if isinstance(value, float) and not math.isfinite(value):
        return NON_FINITE[repr(value)]
    return value


def atomic_write_json(path: str | Path, data, indent: int = 2) -> Path:
    """`data` as strict JSON (non-finite numbers as strings, see NON_FINITE; anything else JSON has no type
    for as its str), atomically."""
    return atomic_write_text(path, json.dumps(strict_json(data), indent=indent, allow_nan=False, default=str) + "\n")


RENAME_EXCHANGE = 2  # <linux/fs.h>: renameat2 swaps the two paths in one step
AT_FDCWD = -100


@functools.lru_cache(maxsize=None)
def _renameat2():
    try:
        return ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):  # not Linux, or a C library before glibc 2.28
        return None


def exchange(first: str | Path, second: str | Path) -> bool:
    """Swap two existing paths in one step (Linux's renameat2 RENAME_EXCHANGE): neither name is ever missing.
    False where the system or the file system cannot (then the caller renames one after the other)."""
    renameat2 = _renameat2()
    if renameat2 is None:
        return False
    if renameat2(AT_FDCWD, os.fsencode(first), AT_FDCWD, os.fsencode(second), RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(first), None, str(second))


def _mode_for(path: Path) -> int:
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


class _StagedStream:
    """The temporary file as `write` sees it. After its first error it takes and drops whatever follows: a
    writer that fails half-way (np.savez on a full disk) leaves a zipfile.ZipFile that closes itself later,
    from its __del__, and would print "Exception ignored ... seek of closed file" at exit. It keeps the position
    the writer would see had the writes gone through, so that what the writer computes from it afterwards holds
    (zipfile's end record, sizes taken as differences of positions: 'struct.error: argument out of range' at
    exit where a disk filled in the central directory). The first error is the one raised."""

    def __init__(self, raw: BinaryIO) -> None:
        self._raw, self._failed = raw, False
        self._position = self._end = 0  # where the writer is, and how far it has written

    def _guarded(self, call, *args, fallback=0):
        if self._failed or self._raw.closed:
            self._failed = True
            return fallback
        try:
            return call(*args)
        except OSError:
            self._failed = True
            raise

    def _moved(self, position: int) -> int:
        self._position, self._end = position, max(self._end, position)
        return position

    def write(self, data) -> int:
        size = memoryview(data).nbytes
        try:
            return self._guarded(self._raw.write, data, fallback=size)
        finally:  # counted as written even where it failed: the writer counts it (zipfile's sizes) before
            self._moved(self._position + size)

    def tell(self) -> int:
        return self._moved(self._guarded(self._raw.tell, fallback=self._position))

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        base = {os.SEEK_SET: 0, os.SEEK_CUR: self._position, os.SEEK_END: self._end}[whence]
        return self._moved(self._guarded(self._raw.seek, offset, whence, fallback=base + offset))

    def flush(self) -> None:
        self._guarded(self._raw.flush, fallback=None)

    def truncate(self, size: int | None = None) -> int:
        size = self._position if size is None else size
        self._end = size
        return self._guarded(self._raw.truncate, size, fallback=size)

    def seekable(self) -> bool:
        return True

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    def read(self, size: int = -1) -> bytes:  # np.savez takes an object without `read` for a path
        raise io.UnsupportedOperation("read")

    @property
    def closed(self) -> bool:
        return False  # closed by atomic_write alone; a writer that closes it (savefig does not) changes nothing

    def close(self) -> None:
        pass

    def finish(self, sync: bool) -> None:
        """Everything written is on the disk before the rename makes it the file (a crash after the rename
        must not leave an empty file under the new name)."""
        self._raw.flush()
        if sync:
            os.fsync(self._raw.fileno())
