"""Atomic output folders and files: a conversion writes into a hidden sibling and renames it into place only on
success, so a failure (or Ctrl-C) leaves nothing half-written behind."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Iterator

from rosetta.errors import RosettaError
from rosetta.scratch import DAY_S, remove_stale, scratch_folder


def check_output_folder(folder: Path, force: bool = False) -> None:
    """Refuse an existing non-empty folder (unless forced) or a place we cannot write, before any work."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise RosettaError(f"output {folder} exists and is not a folder; choose another path")
    if folder.is_dir() and any(folder.iterdir()) and not force:
        raise RosettaError(f"output folder {folder} exists and is not empty; choose another or pass --force to replace it")
    parent = folder.resolve().parent
    existing = parent
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise RosettaError(f"cannot write to {folder}: {existing} is a file, not a folder; choose another output folder")
    try:  # a real write, not os.access: root passes os.access everywhere, and /proc or a read-only mount refuse
        os.rmdir(tempfile.mkdtemp(prefix=".rosetta-probe-", dir=existing))
    except OSError as error:
        raise RosettaError(f"cannot write to {folder}: {error.strerror or error} in {existing}; choose a writable "
                           "output folder") from None


@contextlib.contextmanager
def atomic_folder(folder: Path, force: bool = False) -> Iterator[Path]:
    """Yield a temporary folder that becomes `folder` when the block succeeds and disappears if it fails.

    It is .NAME.partial-XXXXXXXX/NAME, beside `folder`: a scratch folder (rosetta.scratch) whose lock, in
    .NAME.partial-XXXXXXXX and so never in the output, lets the next atomic_folder for this output remove it if
    this process is killed. A replaced output is moved in there too, and removed with it after the rename."""
    folder = Path(folder)
    check_output_folder(folder, force)
    folder.parent.mkdir(parents=True, exist_ok=True)
    remove_stale(folder.parent, f".{folder.name}.old-", unlocked_after=DAY_S)  # older rosettas' replaced outputs
    with scratch_folder(f".{folder.name}.partial-", dir=folder.parent, unlocked_after=DAY_S) as partial:
        staging = partial / folder.name
        staging.mkdir()
        yield staging
        if folder.exists():
            os.replace(folder, partial / "old")
        _usual_folder_modes(staging)
        os.replace(staging, folder)


def _usual_folder_modes(root: Path) -> None:
    """mkdtemp makes folders 0700 (and copytree copies that): give the output's folders the umask's mode."""
    mask = os.umask(0)
    os.umask(mask)
    for path in [root, *(p for p in root.rglob("*") if p.is_dir() and not p.is_symlink())]:
        path.chmod(0o777 & ~mask)


def atomic_write_text(path: Path, text: str) -> None:
    """Write `text` to `path` through a temporary file beside it and a rename: a reader (or a run that is
    stopped half-way) sees the old file or the new one, never a half-written one."""
    path = Path(path)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w") as stream:
            stream.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
