"""The manifest written beside every artifact: where it came from, how it was made, what it takes and returns."""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import platform
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rosetta import __version__
from rosetta.errors import RosettaError

MANIFEST_NAME = "manifest.json"


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
    created: str = field(default_factory=lambda: _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))
    rosetta_version: str = __version__
    python: str = field(default_factory=platform.python_version)

    def write(self, folder: Path) -> Path:
        path = Path(folder) / MANIFEST_NAME
        path.write_text(json.dumps(asdict(self), indent=2) + "\n")
        return path

    @classmethod
    def read(cls, folder: Path) -> "Manifest":
        path = Path(folder) / MANIFEST_NAME
        if not path.is_file():
            raise RosettaError(f"{folder} has no {MANIFEST_NAME}; is it a folder written by `rosetta convert`?")
        try:
            return cls(**json.loads(path.read_text()))
        except (ValueError, TypeError) as error:
            raise RosettaError(f"{path} is not a valid rosetta manifest ({error}); convert the model again") from None

    def artifact_path(self, folder: Path) -> Path:
        return Path(folder) / self.artifact

    def check_integrity(self, folder: Path) -> None:
        """Refuse an artifact whose bytes are not the ones the manifest describes."""
        actual = sha256_of(self.artifact_path(folder))
        if actual != self.sha256:
            raise RosettaError(f"{self.artifact_path(folder)} does not match its manifest's sha256; "
                               "it was changed after conversion: convert it again")
