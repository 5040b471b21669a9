"""Conversions of the reference models, and a store that makes each artifact once and shares it.

An artifact is identified by (model, seed, chain of formats, options); its folder name is derived from that
identity, so independent jobs (test workers, verify cells, later Ray tasks) that ask for the same artifact
find it instead of converting again. Every step writes atomically, so a folder that exists is complete.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Callable

from rosetta.convert.onnx.from_torch import TorchSource
from rosetta.convert.registry import chain_versions, get_conversion
from rosetta.errors import EnvironmentFailed, RosettaError, vanished_folder
from rosetta.execution import Job, execute, load_npz, runs_here, save_npz
from rosetta.extras import framework_missing
from rosetta.manifest import MANIFEST_NAME, Manifest, code_digest
from rosetta.output import atomic_folder
from rosetta.scratch import exclusive, scratch_folder


def torch_source(spec, seed: int, module=None, origin: dict | None = None) -> TorchSource:
    """The reference model (or a given module with the model's signature) as a conversion source."""
    return TorchSource(module if module is not None else spec.build(seed), spec.inputs, spec.outputs,
                       origin or {"model": spec.name, "seed": seed})


def run_conversion(source, chain: tuple[str, ...], destination: Path, options: dict | None = None,
                   force: bool = False, history: tuple[str, ...] = ()) -> Manifest:
    """Convert `source` (format chain[0]) step by step along `chain`; the last artifact lands in `destination`.
    `history`: the formats the source itself went through before chain[0], recorded in the manifest."""
    options = options or {}
    with atomic_folder(destination, force=force) as staging:
        with scratch_folder("rosetta-steps-", dir=staging.parent) as scratch:
            current = private_copy(source, Path(scratch) / "source")
            for step, (src, dst) in enumerate(zip(chain, chain[1:])):
                last = step == len(chain) - 2
                out = staging if last else Path(scratch) / f"{step}-{dst}"
                out.mkdir(exist_ok=True)
                manifest = convert_step(get_conversion(src, dst), current, out, options)
                manifest.chain = list(history) + list(chain[: step + 2])
                manifest.write(out)
                current = out
    return manifest


def chain_from_onnx(target) -> tuple[str, ...]:
    """The formats of `target`'s chain from its (first) ONNX step on."""
    return target.chain[target.chain.index("onnx"):]


def from_onnx(target, options: dict | None = None) -> Callable[[Path, Path], Path]:
    """convert(ONNX artifact folder, destination) -> the target's artifact folder: the target's chain from its
    ONNX step on (for ONNX Runtime, whose chain ends there, the folder itself is the artifact)."""
    return along(chain_from_onnx(target), options)


def along(chain: tuple[str, ...], options: dict | None = None) -> Callable[[Path, Path], Path]:
    """convert(artifact folder of format chain[0], destination) -> the artifact at the end of `chain` (the folder
    itself when the chain is that one format): what `--locate` converts each cut graph with."""
    def convert(folder: Path, destination: Path) -> Path:
        if len(chain) == 1:
            return Path(folder)
        run_conversion(Path(folder), chain, Path(destination), options, force=True)
        return Path(destination)
    return convert


def convert_reference_model(name: str, to: str, route: str, output: Path, seed: int = 0,
                            export: dict | None = None, force: bool = False) -> Manifest:
    """`rosetta convert --model NAME --to X`: the reference model converted along the route's chain to X,
    its files installed in `output` together (rosetta.output; refused before any work if it is not empty,
    unless `force`, which replaces only what rosetta wrote)."""
    from rosetta.convert.targets import target_for_conversion
    from rosetta.models import get_model
    from rosetta.output import OutputFolder

    spec = get_model(name)
    target = target_for_conversion(to, route)
    with OutputFolder(output, force, entries=[MANIFEST_NAME]) as out:
        manifest = run_conversion(torch_source(spec, seed), target.chain, out.staging,
                                  target.export_options(export or {}), force=True)
        out.install(sorted(os.listdir(out.staging)))
    return manifest


def private_copy(source, destination: Path):
    """An artifact folder copied for one conversion to read (another source as it is): converters may change
    their input in place (onnx2tf simplifies the ONNX file it is given), and a verified artifact must stay
    the file its manifest's sha256 names."""
    if not isinstance(source, (str, Path)):
        return source
    shutil.copytree(source, destination)
    return destination


def convert_step(path, source, out: Path, options: dict) -> Manifest:
    """One step, where its path's isolation says (rosetta.execution); its wall time and, in a worker, the
    worker's peak memory during the step in `stats`."""
    if not runs_here(path.isolation):
        outcome = execute(Job("rosetta.convert.store:convert_job", {"source": path.source, "target": path.target,
                                                                   "source_folder": str(source), "out": str(out),
                                                                   "options": options},
                              path.isolation, f"conversion {path.source} -> {path.target}"))
        manifest = Manifest.read(out)
        manifest.stats.update(peak_rss_mb=outcome.peak_rss_mb, process=outcome.process)
        manifest.write(out)
        return manifest
    start = time.perf_counter()
    try:
        manifest = path.load()(source, out, options)
    except ModuleNotFoundError as error:  # its converter is not installed: one line that says what installs it
        missing = framework_missing(error)
        if missing is None:  # one of rosetta's own modules: a bug, not an install
            raise
        raise missing from error
    manifest.stats = {"seconds": round(time.perf_counter() - start, 3), "process": "in-process"}
    return manifest


def convert_job(argument: dict) -> dict:
    """Job (rosetta.execution): one conversion step from an artifact folder, its manifest written in `out`."""
    path = get_conversion(argument["source"], argument["target"])
    manifest = convert_step(path, Path(argument["source_folder"]), Path(argument["out"]), argument["options"])
    manifest.write(Path(argument["out"]))
    return {}


class ArtifactStore:
    """Artifacts of reference models and users' models under one root folder, converted on first request."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.failures: dict[Path, Exception] = {}  # conversions that failed in this process: not tried again
        self._checked: dict[Path, tuple] = {}  # folders whose sha256 matched, by their files' (name, size, mtime)
        self.notes: list[str] = []  # artifacts found changed and made again

    def intact(self, folder: Path) -> bool:
        """Whether `folder` is a stored artifact whose files are still the bytes its manifest's sha256 names
        (a kept --work-dir is the user's folder: a file in it may have been changed since). Hashed once per
        process while its files' sizes and times stay the same."""
        folder = Path(folder)
        if not (folder / MANIFEST_NAME).is_file():
            return False
        files = tuple(sorted((str(p.relative_to(folder)), p.stat().st_size, p.stat().st_mtime_ns)
                             for p in folder.rglob("*") if p.is_file()))
        if self._checked.get(folder) == files:
            return True
        try:
            Manifest.read(folder).check_integrity(folder)
        except (RosettaError, OSError):
            return False
        self._checked[folder] = files
        return True

    def drop_changed(self, folders) -> list[str]:
        """Remove each of `folders` that holds an artifact whose files no longer match its manifest's sha256,
        so that it is converted again; a line for each, printed and returned."""
        dropped = []
        for folder in dict.fromkeys(Path(f) for f in folders):
            if not (folder / MANIFEST_NAME).is_file() or self.intact(folder):
                continue
            with exclusive(folder.parent / f".{folder.name}.lock"):
                if (folder / MANIFEST_NAME).is_file() and not self.intact(folder):
                    shutil.rmtree(folder, ignore_errors=True)
                    dropped.append(self._note(folder))
        return dropped

    def _note(self, folder: Path) -> str:
        note = (f"{folder} no longer matched its manifest's sha256 (a file in it changed after conversion): "
                "converted again")
        self.notes.append(note)
        print(f"rosetta: {note}", file=sys.stderr, flush=True)
        return note

    def _folder(self, key: str, chain: tuple[str, ...], options: dict | None, tag: str) -> Path:
        """Named by what decides the artifact: the chain, the options, the variant, the versions of rosetta
        and of every converter on the chain, and rosetta's own conversion code (code_digest): an artifact made by
        other code is made again, never reused."""
        identity = json.dumps({"chain": chain, "options": options or {}, "tag": tag, "versions": chain_versions(chain),
                               "code": code_digest("convert", "frameworks", "models")}, sort_keys=True)
        digest = hashlib.sha256(identity.encode()).hexdigest()[:10]
        label = "-".join(chain[1:]) + (f"-{tag}" if tag else "")
        return self.root / key / f"{label}-{digest}"

    def folder_for(self, spec, seed: int, chain: tuple[str, ...], options: dict | None = None) -> Path:
        """Where `get` puts (or finds) this artifact of a reference model, without making it."""
        return self._folder(f"{spec.name}-seed{seed}", chain, options, "")

    def get(self, spec, seed: int, chain: tuple[str, ...], options: dict | None = None,
            module=None, tag: str = "") -> Path:
        """The artifact folder of a reference model, converting it now if it is not in the store.
        `module`+`tag` store a variant (a deliberately wrong model)."""
        origin = {"model": spec.name, "seed": seed, **({"variant": tag} if tag else {})}
        return self.get_from(f"{spec.name}-seed{seed}", lambda: torch_source(spec, seed, module, origin), chain,
                             options, tag)

    def get_from(self, key: str, make_source, chain: tuple[str, ...], options: dict | None = None,
                 tag: str = "") -> Path:
        """The artifact of `chain` from the source `make_source()` returns (a TorchSource, or an artifact
        folder of format chain[0]), stored under `key`. A chain's prefix is itself a stored artifact, so
        chains that share a prefix share its conversions."""
        if len(chain) == 1:  # the source itself, e.g. a user's ONNX file run in ONNX Runtime
            return Path(make_source())
        folder = self._folder(key, chain, options, tag)
        try:
            return self._get_from(folder, key, make_source, chain, options, tag)
        except EnvironmentFailed:
            raise
        except Exception as error:
            vanished = vanished_folder(self.root, folder.parent)
            if vanished is None:
                raise
            raise vanished from error

    def _get_from(self, folder: Path, key: str, make_source, chain: tuple[str, ...], options: dict | None,
                  tag: str) -> Path:
        if self.intact(folder):
            return folder
        if folder in self.failures:  # e.g. the ONNX step every target of a user's model goes through
            raise self.failures[folder]
        if len(chain) > 2:
            source, step = self.get_from(key, make_source, chain[:-1], options, tag), chain[-2:]
        else:
            source, step = make_source(), chain
        folder.parent.mkdir(parents=True, exist_ok=True)
        with exclusive(folder.parent / f".{folder.name}.lock"):
            if self.intact(folder):  # another process made it while this one waited
                return folder
            changed = (folder / MANIFEST_NAME).is_file()
            try:
                run_conversion(source, step, folder, options, force=changed,
                               history=chain[: len(chain) - len(step)])
            except Exception as error:
                vanished = vanished_folder(self.root, folder.parent)  # now: a later cell may make it again
                self.failures[folder] = vanished or error
                if vanished is not None:
                    raise vanished from error
                raise
            if changed:
                self._note(folder)
        return folder

    def arrays(self, key: str, name: str, identity: dict, make: Callable[[], dict]) -> dict:
        """Named arrays that `make()` computes, stored once per identity under `key` (e.g. a reference trained
        on given batches, which every process that verifies its training needs): the first to ask computes
        them, the others wait and read them. `identity` names everything the values depend on."""
        digest = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:10]
        path = self.root / key / f"{name}-{digest}.npz"
        path.parent.mkdir(parents=True, exist_ok=True)
        with exclusive(path.parent / f".{path.name}.lock"):
            if path.is_file():
                return load_npz(path)
            arrays = make()
            save_npz(path, arrays)  # atomic: a file that exists is complete
        return arrays

    def derived(self, folder: Path, tag: str, edit) -> Path:
        """A copy of an artifact folder with `edit(artifact_path)` applied (e.g. a deliberately corrupted
        conversion), written atomically beside it, with the manifest's sha256 and source updated."""
        target = Path(folder).with_name(f"{Path(folder).name}-{tag}")
        with exclusive(target.parent / f".{target.name}.lock"):
            if not (target / MANIFEST_NAME).is_file():
                self._write_derived(folder, target, tag, edit)
        return target

    @staticmethod
    def _write_derived(folder: Path, target: Path, tag: str, edit) -> None:
        with atomic_folder(target) as staging:
            shutil.copytree(folder, staging, dirs_exist_ok=True)
            manifest = Manifest.read(staging)
            edit(manifest.artifact_path(staging))
            manifest.sha256 = manifest.digest(staging)
            manifest.source = {**manifest.source, "variant": tag}
            manifest.write(staging)

    def clear(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
        os.makedirs(self.root, exist_ok=True)
