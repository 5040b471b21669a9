"""What every IR -> framework step shares: run MMdnn's emitter on an IR artifact, write the code it generates
into the artifact's own folder, and import that code from there (never from sys.path or a temporary place),
so the artifact carries the exact code that built it."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

from rosetta.convert.mmdnn.ir import GRAPH, WEIGHTS
from rosetta.errors import RosettaError
from rosetta.manifest import Manifest, sha256_of


def ir_paths(source: Path) -> tuple[Manifest, str, str]:
    """(the IR artifact's manifest, its graph file, its weights file)."""
    previous = Manifest.read(source)
    folder = previous.artifact_path(source)
    return previous, str(folder / GRAPH), str(folder / WEIGHTS)


def generate_code(emitter, code: Path) -> None:
    """MMdnn's Emitter.run without its weight step (a pickled .npy): only the generated source is written."""
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            emitter.save_code(str(code), "test")
        except NotImplementedError as error:
            raise RosettaError(f"MMdnn's {type(emitter).__name__} cannot emit this model: {error}") from None


def emitted_manifest(previous: Manifest, artifact: Path, fmt: str, emitter: str, framework_version: str,
                     **converter) -> Manifest:
    from importlib.metadata import version

    return Manifest(artifact=artifact.name, format=fmt, source=previous.source,
                    converter={"name": f"mmdnn {emitter}", "version": version("mmdnn"),
                               "framework_version": framework_version, "options": {}, **converter},
                    inputs=previous.inputs, outputs=previous.outputs, sha256=sha256_of(artifact))


def layouts(previous: Manifest, emitted: str) -> dict:
    """How the emitted model's image inputs differ from the source model's: MMdnn's IR is NHWC; its PyTorch
    and MXNet emitters write NCHW models, the others NHWC. The source's layout is in the IR's manifest."""
    source = previous.converter.get("layout", "channels_first")
    if emitted == source:
        return {}
    return {entry["name"]: emitted for entry in previous.inputs if len(entry["shape"]) == 4}
