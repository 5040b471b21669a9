"""The manifest written beside every artifact: where it came from, how it was made, what it takes and returns."""

from __future__ import annotations

import datetime as _dt
import functools
import hashlib
import json
import platform
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rosetta.version import __version__
from rosetta.atomic import atomic_write_json
from rosetta.errors import RosettaError
from rosetta.trust import contained

MANIFEST_NAME = "manifest.json"
WAY_IN = "way_in"  # in manifest.converter: which of a step's ways in made the artifact, and why those before were left


def way_in_entry(used: str, ways: list[str], why: str) -> dict:
    """The converter entry of an artifact a later way in made (the export step's exporters, a target's converters)."""
    return {WAY_IN: {"used": used, "ways": list(ways), "why": why}}


def sha256_of(path: Path) -> str:
    """sha256 of a file, or of a folder's files in sorted relative-path order (for SavedModel-like artifacts)."""
    digest = hashlib.sha256()
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for file in files:
        if path.is_dir():
            digest.update(str(file.relative_to(path)).encode())
        with open(file, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


@functools.lru_cache(maxsize=None)
def code_digest(*packages: str) -> str:
    """sha256 (12 hex digits) of the source of rosetta's `packages` ("convert", "frameworks", ...): part of the
    name of a stored artifact, so that one made by other code is made again, not reused, even where rosetta's
    version and every converter's are the same (a working folder kept across a change to a bridge)."""
    root = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            digest.update(str(path.relative_to(root)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


@dataclass
class Manifest:
    artifact: str  # file or folder name, relative to the manifest's folder
    format: str  # e.g. "onnx"
    source: dict  # {"model": ..., "seed": ...} or {"path": ...}
    converter: dict  # {"name": ..., "version": ..., "options": {...}}
    inputs: list[dict]
    outputs: list[dict]
    sha256: str
    opset: int | None = None
    chain: list[str] = field(default_factory=list)  # formats this artifact went through, source first
    stats: dict = field(default_factory=dict)  # conversion wall time and peak memory, for information
    extra_files: list[str] = field(default_factory=list)  # files beside the artifact it needs (ONNX external data)
    created: str = field(default_factory=lambda: _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))
    rosetta_version: str = __version__
    python: str = field(default_factory=platform.python_version)

    def write(self, folder: Path) -> Path:
        return atomic_write_json(Path(folder) / MANIFEST_NAME, asdict(self))

    @classmethod
    def read(cls, folder: Path) -> "Manifest":
        path = Path(folder) / MANIFEST_NAME
        if not path.is_file():
            raise RosettaError(f"{folder} has no {MANIFEST_NAME}; is it a folder written by `rosetta convert`?")
        try:
            manifest = cls(**json.loads(path.read_text()))
        except (ValueError, TypeError) as error:
            raise RosettaError(f"{path} is not a valid rosetta manifest ({error}); convert the model again") from None
        for name in manifest.named_files():  # before anything reads them: a forged manifest may point anywhere
            contained(folder, name, "the manifest's path")
        return manifest

    def named_files(self) -> list[str]:
        """Every path the manifest names, relative to its folder."""
        code = self.converter.get("code") if isinstance(self.converter, dict) else None
        return [self.artifact, *self.extra_files, *([code] if isinstance(code, str) else [])]

    def artifact_path(self, folder: Path) -> Path:
        return contained(folder, self.artifact, "the manifest's artifact")

    def digest(self, folder: Path) -> str:
        """sha256 of the artifact, and of the files beside it that it needs, in the manifest's order."""
        if not self.extra_files:
            return sha256_of(self.artifact_path(folder))
        combined = hashlib.sha256()
        for name in [self.artifact, *self.extra_files]:
            combined.update(f"{name}\0{sha256_of(contained(folder, name, 'the manifest path'))}\0".encode())
        return combined.hexdigest()

    def check_integrity(self, folder: Path) -> None:
        """Refuse an artifact whose bytes are not the ones the manifest describes."""
        actual = self.digest(folder)
        if actual != self.sha256:
            raise RosettaError(f"{self.artifact_path(folder)} does not match its manifest's sha256; "
                               "it was changed after conversion: convert it again")
