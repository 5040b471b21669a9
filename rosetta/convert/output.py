"""Atomic output folders: a conversion writes into a hidden sibling and renames it into place only on success,
so a failure (or Ctrl-C) leaves nothing half-written behind."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterator

from rosetta.errors import RosettaError


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
    if not os.access(existing, os.W_OK | os.X_OK):
        raise RosettaError(f"cannot write to {parent}: permission denied; choose a writable output folder")


@contextlib.contextmanager
def atomic_folder(folder: Path, force: bool = False) -> Iterator[Path]:
    """Yield a temporary folder that becomes `folder` when the block succeeds and disappears if it fails."""
    folder = Path(folder)
    check_output_folder(folder, force)
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.partial-", dir=folder.parent))
    try:
        yield staging
        if folder.exists():
            trash = Path(tempfile.mkdtemp(prefix=f".{folder.name}.old-", dir=folder.parent))
            os.replace(folder, trash / "old")
            shutil.rmtree(trash, ignore_errors=True)
        os.replace(staging, folder)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
