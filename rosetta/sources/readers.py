"""One reader per model-file format, named in the row of the framework that runs what it reads (Framework.reader).
A reader copies the user's file into an artifact folder and writes its manifest (signature from the model itself).
Readers of TensorFlow, Keras and MXNet files run in that framework family's worker (rosetta.execution), like
everything else that imports those."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from rosetta.execution import run_job
from rosetta.frameworks import FRAMEWORKS
from rosetta.manifest import Manifest, sha256_of
from rosetta.registry import Registry


@dataclass(frozen=True)
class Reader:
    format: str  # ModelFile.format and the manifest's format
    entry: str  # "rosetta.sources.MODULE:read": read(argument: dict) -> manifest as a dict (the row's reader)
    runner: str  # the framework that runs the artifact (rosetta.frameworks)
    isolation: str = ""  # where it runs (rosetta.execution)


def readers_of(frameworks) -> Registry[Reader]:
    """The readers of users' files, one per artifact format of each framework row with a `reader` entry
    (rosetta.frameworks.Framework): a format's reader is added in its framework's row, nowhere else; it runs
    where that framework runs (its isolation), and a format two rows read is refused as a duplicate."""
    readers: Registry[Reader] = Registry("model format", key=lambda reader: reader.format)
    for framework in frameworks:
        for fmt in framework.formats if framework.reader else ():
            readers.register(Reader(fmt, framework.reader, framework.name, isolation=framework.isolation))
    return readers


READERS = readers_of(FRAMEWORKS)


def read_model_file(model_file, staging: Path, inputs: list, trust_code: bool, like: list = ()) -> Manifest:
    """Read `model_file` (a sources.files.ModelFile) into the empty folder `staging`; returns its manifest.
    `inputs`: the user's --input TensorSpecs (MXNet symbols need them: they carry no shapes); `like`: the specs of
    the model it is compared with, taken by position where none of `inputs` names one of its inputs."""
    reader = READERS.get(model_file.format)
    argument = {"model": model_file.to_json(), "staging": str(staging), "trust_code": trust_code,
                "inputs": [spec.to_json() for spec in inputs], "like": [spec.to_json() for spec in like]}
    run_job(reader.entry, argument, reader.isolation, f"reading {model_file.label} ({model_file.format})")
    return Manifest.read(staging)


def write_manifest(argument: dict, artifact: str, fmt: str, inputs: list[dict], outputs: list[dict],
                   **fields) -> dict:
    """The manifest of a read model file: where it came from (path and sha256 of the original)."""
    from rosetta.sources.files import ModelFile

    model_file = ModelFile.from_json(argument["model"])
    staging = Path(argument["staging"])
    manifest = Manifest(artifact=artifact, format=fmt,
                        source={"path": str(model_file.path.resolve()), "sha256": sha256_of(model_file.path)},
                        converter={"name": "rosetta read", "options": {}}, inputs=inputs, outputs=outputs,
                        sha256="", chain=[fmt], **fields)
    manifest.sha256 = manifest.digest(staging)
    manifest.write(staging)
    return asdict(manifest)
