"""Where rosetta writes: users' output folders as transactions, and atomic folders for its own store.

A user's `-o FOLDER` (OutputFolder) is written into, never replaced: the folder keeps its mode, a symbolic link
to it stays one, a mount point or `-o .` works, and the user's other files are never touched. A run:

1. checks before any work (check_output_folder): the folder can be written (a real write), it holds no input
   of the run, and it is empty, or (with --force) whatever the run may write there was written by rosetta;
2. locks the folder (flock on the folder itself): a second run into the same folder is refused at once, so
   two runs never both print `written:`;
3. stages its new entries (one per target, or an artifact's files) in a hidden, locked .rosetta-partial-*
   folder inside it, on the same disk;
4. installs them (OutputFolder.install): the same checks again, then a journal naming the entries, then for
   each entry the new one swapped with the old one in one step (Linux's renameat2 RENAME_EXCHANGE, so the name
   never goes missing; elsewhere the old moved aside, then the new moved in), then the record of what rosetta
   wrote in the folder (RECORD_NAME), then the journal removed: that is the commit. SIGINT and SIGTERM wait
   until it is done; an error in between puts every old entry back. A run killed in between (SIGKILL, power)
   leaves its journal, and the next run into the folder puts the old entries back before anything else.

So an interruption at any point leaves each entry old or new, never half-written or missing (on a system
without RENAME_EXCHANGE an entry can be missing between two renames, until the next run), and the output as
a whole is the old one or the new one: all-new after the commit, else all-old once undone. `--force` replaces only entries
that rosetta wrote (named in RECORD_NAME, or a folder holding a rosetta manifest, as older versions wrote).

`atomic_folder` is the simpler form for rosetta's own folders (the artifact store): a folder made beside its
destination and renamed over it."""

from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import fcntl
import json
import os
import tempfile
from pathlib import Path
from typing import Iterable, Iterator

from rosetta.version import __version__
from rosetta.atomic import atomic_write_text, exchange
from rosetta.errors import RosettaError
from rosetta.processes import signals_deferred
from rosetta.scratch import DAY_S, JOURNAL_NAME, remove_stale, scratch_folder

__all__ = ["OutputFolder", "check_output_folder", "check_writable_folder", "check_writable_file",
           "check_not_an_input", "atomic_folder", "atomic_write_text", "RECORD_NAME"]

RECORD_NAME = ".rosetta-output.json"  # what rosetta wrote in an output folder: what --force may replace
STAGING_PREFIX = ".rosetta-partial-"
_CONTROL = (RECORD_NAME, STAGING_PREFIX, ".rosetta-probe-")  # rosetta's own entries: not "the user's files"


def check_output_folder(folder: Path, force: bool = False, inputs: Iterable[Path] = (),
                        entries: Iterable[str] | None = None) -> None:
    """Refuse, before any work and with one line, an output folder that cannot be written, that holds one of
    `inputs` (or lies inside one), or that is not empty (with `force`: whose `entries`, the names the run
    may write, are there and were not written by rosetta)."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise RosettaError(f"output {folder} exists and is not a folder; choose another path")
    check_not_an_input(folder, inputs, "output folder")
    if folder.is_dir():
        _check_entries(folder, force, entries)
    check_writable_folder(folder)


def check_writable_folder(folder: Path) -> None:
    """Refuse, before any work, a folder that cannot be made or written: the folder if it exists, else its
    nearest existing parent, takes a real write (not os.access: root passes os.access everywhere, and /proc
    or a read-only mount refuse)."""
    folder = Path(folder)
    existing = folder if folder.is_dir() else folder.resolve().parent
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise RosettaError(f"cannot write to {folder}: {existing} is a file, not a folder; choose another output folder")
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".rosetta-probe-", dir=existing))
    except OSError as error:
        raise RosettaError(f"cannot write to {folder}: {error.strerror or error} in {existing}; choose a writable "
                           "output folder") from None


def check_writable_file(path: Path | None, inputs: Iterable[Path] = ()) -> None:
    """Refuse, before any work, a file the run cannot write (a real write in its folder) or that is one of its
    `inputs` or lies inside one (None: nothing to check)."""
    if path is None:
        return
    path = Path(path)
    if path.is_dir():
        raise RosettaError(f"{path} is a folder; give a file name")
    parent = path.resolve().parent
    if not parent.is_dir():
        raise RosettaError(f"cannot write {path}: folder {parent} does not exist")
    check_not_an_input(path, inputs, "output file")
    if path.exists() and not os.access(path, os.W_OK):
        raise RosettaError(f"cannot write {path}: permission denied")
    check_writable_folder(parent)


def check_not_an_input(output: Path, inputs: Iterable[Path], what: str) -> None:
    """Refuse an output (a folder or a file) that is one of `inputs`, holds one, or lies inside one: writing
    it could replace or change what the run reads."""
    target = Path(output).resolve()
    for path in inputs:
        source = Path(path).resolve()
        if target == source or source.is_relative_to(target) or target.is_relative_to(source):
            where = "is" if target == source else "holds" if source.is_relative_to(target) else "lies inside"
            raise RosettaError(f"{what} {output} {where} the input {path}: writing there could replace or change "
                               "it; choose a path outside the model's folder")


def _check_entries(folder: Path, force: bool, entries: Iterable[str] | None) -> None:
    present = [name for name in os.listdir(folder) if not name.startswith(_CONTROL)]
    if not present:
        return
    if not force:
        raise RosettaError(f"output folder {folder} exists and is not empty; choose another or pass force= to "
                           "replace it")
    written = _rosetta_entries(folder)
    for name in entries if entries is not None else ():
        if os.path.lexists(folder / name) and name not in written:
            raise RosettaError(f"{folder / name} was not written by rosetta, and force= replaces only what rosetta "
                               "wrote; move it or choose another output folder")


def _rosetta_entries(folder: Path) -> set[str]:
    """The entries of `folder` that rosetta wrote: those its record names, and (as older versions wrote them,
    with no record) folders holding a rosetta manifest and the files a manifest.json of the folder names."""
    from rosetta.manifest import MANIFEST_NAME, Manifest

    names = set(_read_record(folder).get("entries", {}))
    for name in os.listdir(folder):
        if (folder / name / MANIFEST_NAME).is_file() and not (folder / name).is_symlink():
            names.add(name)
    if (folder / MANIFEST_NAME).is_file():
        try:
            names.update({MANIFEST_NAME, *(Path(n).parts[0] for n in Manifest.read(folder).named_files())})
        except RosettaError:
            pass
    return names


def _read_record(folder: Path) -> dict:
    """The record of what rosetta wrote in `folder` ({} if there is none, or it cannot be read: then nothing
    counts as rosetta's, and --force replaces nothing)."""
    try:
        record = json.loads((folder / RECORD_NAME).read_text())
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) and isinstance(record.get("entries"), dict) else {}


class OutputFolder:
    """A user's output folder for the life of a run (see the module docstring): `with OutputFolder(path,
    force, inputs) as out:` checks and locks it before any work; the run puts each new entry in `out.staging`
    and calls `out.install(names)` at the end. A folder this run made and left empty is removed at exit."""

    def __init__(self, folder: Path, force: bool = False, inputs: Iterable[Path] = (),
                 entries: Iterable[str] | None = None) -> None:
        self.folder, self.force, self.inputs = Path(folder), force, [Path(p) for p in inputs]
        self.entries = list(entries) if entries is not None else None  # the names the run may write, if known
        self._stack = contextlib.ExitStack()
        self._made: list[Path] = []  # folders this run created, the outermost first
        self._lock: int | None = None
        self._partial: Path | None = None
        self.installed: list[str] = []

    @property
    def staging(self) -> Path:
        """Where the run puts each entry it will install (a fresh folder inside the output folder)."""
        assert self._partial is not None, "OutputFolder used outside its `with` block"
        return self._partial / "new"

    def __enter__(self) -> "OutputFolder":
        check_output_folder(self.folder, self.force, self.inputs, self.entries)
        try:
            self._make_folder()
            self._take_lock()
            _recover(self.folder)
            self._partial = self._stack.enter_context(scratch_folder(STAGING_PREFIX, dir=self.folder,
                                                                     unlocked_after=DAY_S))
            self.staging.mkdir()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc) -> None:
        self._stack.close()  # the staging folder (kept only with a journal: work a failed undo left)
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None
        if not self.installed:
            for folder in reversed(self._made):
                with contextlib.suppress(OSError):
                    folder.rmdir()  # only if empty

    def _make_folder(self) -> None:
        missing = []
        path = self.folder
        while not os.path.lexists(path):
            missing.append(path)
            path = path.parent
        for path in reversed(missing):
            try:
                path.mkdir()
            except FileExistsError:
                continue
            self._made.append(path)

    def _take_lock(self) -> None:
        """flock on the folder itself (no lock file to leave or to race over); refused at once if held."""
        descriptor = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            os.close(descriptor)
            if error.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise
            raise RosettaError(f"output folder {self.folder} is being written by another rosetta run; wait for it "
                               "to finish or choose another output folder") from None
        self._lock = descriptor

    def _check_again(self, names: list[str]) -> None:
        """The output check, repeated right before installing: the folder is still the one locked, no input has
        moved into it, and no entry that is not rosetta's (without --force: no entry at all) took a new name."""
        try:
            same = os.path.samestat(os.fstat(self._lock), os.stat(self.folder))
        except OSError:
            same = False
        if not same:
            raise RosettaError(f"output folder {self.folder} was moved or replaced during the run; nothing was "
                               "written to it")
        check_not_an_input(self.folder, self.inputs, "output folder")
        written = _rosetta_entries(self.folder)
        for name in names:
            if not os.path.lexists(self.folder / name):
                continue
            if not self.force:
                raise RosettaError(f"{self.folder / name} appeared during the run; nothing was written: move it or "
                                   "choose another output folder")
            if name not in written:
                raise RosettaError(f"{self.folder / name} was not written by rosetta, and force= replaces only what "
                                   "rosetta wrote; nothing was written: move it or choose another output folder")

    def install(self, names: Iterable[str]) -> list[str]:
        """Move the entries `names` from `staging` into the folder, all or none (see the module docstring)."""
        names = list(dict.fromkeys(names))
        missing = [name for name in names if not os.path.lexists(self.staging / name)]
        if missing:
            raise RosettaError(f"nothing staged for {', '.join(missing)}")  # a bug, not the user's
        if not names:
            return []
        self._check_again(names)
        for name in names:
            if (self.staging / name).is_dir() and not (self.staging / name).is_symlink():
                _usual_folder_modes(self.staging / name)  # copied from scratch folders made 0700
        record = _read_record(self.folder)
        journal = self._partial / JOURNAL_NAME
        staged = {name: os.lstat(self.staging / name).st_ino for name in names}  # how _undo knows a new entry
        atomic_write_text(journal, json.dumps({"entries": staged, "record": record or None}))
        try:
            with signals_deferred():
                (self._partial / "old").mkdir(exist_ok=True)
                for name in names:
                    _install_entry(self.staging / name, self.folder / name, self._partial / "old" / name)
                stamp = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
                entries = {**record.get("entries", {}), **{name: {"written": stamp, "rosetta_version": __version__}
                                                            for name in names}}
                atomic_write_text(self.folder / RECORD_NAME, json.dumps({"written_by": "rosetta", "entries": entries},
                                                                      indent=2) + "\n")
                os.unlink(journal)  # the commit
        except BaseException:
            if journal.exists():
                _undo(self.folder, self._partial)
            raise
        self.installed = names
        return names


def _install_entry(new: Path, target: Path, old: Path) -> None:
    """The new entry in, the old one (if any) kept at `old`: swapped in one step where the system can, so the
    name never goes missing; else the old moved aside, then the new moved in."""
    if os.path.lexists(target):
        if exchange(new, target):
            os.rename(new, old)  # `new` holds the old entry now
            return
        os.rename(target, old)
    os.rename(new, target)


def _undo(folder: Path, partial: Path) -> None:
    """Undo an install that its journal says was not committed: each new entry (known by its inode) moved out,
    each old one moved back, the record as it was; then the journal removed. Safe to run again if it is itself
    cut short: each step looks at where things are."""
    journal = json.loads((partial / JOURNAL_NAME).read_text())
    undone = partial / "undone"
    undone.mkdir(exist_ok=True)
    for name, inode in reversed(list(journal["entries"].items())):
        new, old, target = partial / "new" / name, partial / "old" / name, folder / name
        if os.path.lexists(target) and os.lstat(target).st_ino == inode:  # installed: take it out again
            os.rename(target, undone / name)
        if not os.path.lexists(target):
            for kept in (old, new):  # the old entry, moved aside, or swapped into the staging place
                if os.path.lexists(kept) and os.lstat(kept).st_ino != inode:
                    os.rename(kept, target)
                    break
    if journal["record"] is None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(folder / RECORD_NAME)
    else:
        atomic_write_text(folder / RECORD_NAME, json.dumps(journal["record"], indent=2) + "\n")
    os.unlink(partial / JOURNAL_NAME)


def _recover(folder: Path) -> None:
    """Undo the installs of runs killed half-way (their journal is still there), then remove their staging
    folders. Called with the folder's lock held: no live run is installing here."""
    for partial in folder.glob(f"{STAGING_PREFIX}*"):
        if partial.is_dir() and not partial.is_symlink() and (partial / JOURNAL_NAME).is_file():
            try:
                _undo(folder, partial)
            except (OSError, ValueError, KeyError, AttributeError, TypeError) as error:
                raise RosettaError(f"{partial} holds an interrupted install that could not be undone ({error}); "
                                   "move the entries under its old/ back by hand, then remove it") from None
    remove_stale(folder, STAGING_PREFIX, unlocked_after=DAY_S)


@contextlib.contextmanager
def atomic_folder(folder: Path, force: bool = False) -> Iterator[Path]:
    """Yield a temporary folder that becomes `folder` when the block succeeds and disappears if it fails: for
    rosetta's own folders (the artifact store), which nobody else writes into.

    It is .NAME.partial-XXXXXXXX/NAME, beside `folder`: a scratch folder (rosetta.scratch) whose lock, in
    .NAME.partial-XXXXXXXX and so never in the output, lets the next atomic_folder for this output remove it if
    this process is killed. A replaced folder is moved in there too, and removed with it after the rename."""
    folder = Path(folder)
    check_output_folder(folder, force)
    folder.parent.mkdir(parents=True, exist_ok=True)
    remove_stale(folder.parent, f".{folder.name}.old-", unlocked_after=DAY_S)  # older rosettas' replaced outputs
    with scratch_folder(f".{folder.name}.partial-", dir=folder.parent, unlocked_after=DAY_S) as partial:
        staging = partial / folder.name
        staging.mkdir()
        yield staging
        _usual_folder_modes(staging)
        with signals_deferred():  # the old folder out and the new one in: both or neither
            if folder.exists():
                os.replace(folder, partial / "old")
            try:
                os.replace(staging, folder)
            except BaseException:
                if (partial / "old").exists():
                    os.replace(partial / "old", folder)
                raise


def _usual_folder_modes(root: Path) -> None:
    """mkdtemp makes folders 0700 (and copytree copies that): give the new folders the umask's mode."""
    mask = os.umask(0)
    os.umask(mask)
    for path in [root, *(p for p in root.rglob("*") if p.is_dir() and not p.is_symlink())]:
        path.chmod(0o777 & ~mask)
