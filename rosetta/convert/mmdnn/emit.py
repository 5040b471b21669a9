"""What every IR -> framework step shares: run MMdnn's emitter on an IR artifact, write the code it generates
into the artifact's own folder, and import that code from there (never from sys.path or a temporary place),
so the artifact carries the exact code that built it."""

from __future__ import annotations

import contextlib
import io
import re
import traceback
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
    """MMdnn's Emitter.run without its weight step (a pickled .npy): only the generated source is written.
    An op the emitter has no emit_ method for is only printed by MMdnn, which writes code that cannot run
    (a NameError later): it is refused here, naming the emitter and the op."""
    name = type(emitter).__name__
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        try:
            emitter.save_code(str(code), "test")
        except (NotImplementedError, AttributeError) as error:
            where = [frame.name for frame in traceback.extract_tb(error.__traceback__) if frame.name.startswith("emit_")]
            if isinstance(error, AttributeError) and not where:  # not the emitter's own gap: a crash
                raise
            what = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
            raise RosettaError(f"MMdnn's {name} cannot emit this model: {' -> '.join(where) or 'it'} raised "
                               f"{what}") from None
    skipped = sorted(set(re.findall(r"has not supported operator \[(\w+)\]", printed.getvalue())))
    if skipped:
        raise RosettaError(f"MMdnn's {name} cannot emit {', '.join(skipped)}: it has no "
                           f"{', '.join('emit_' + op for op in skipped)}")


def emitted_manifest(previous: Manifest, artifact: Path, fmt: str, emitter: str, framework_version: str,
                     layout: str, input_layout: str = "", **converter) -> Manifest:
    """The emitted artifact's manifest, with the image layout of its tensors (`layout`: "channels_first" for
    MMdnn's PyTorch, MXNet and ONNX emitters, "channels_last" for the others) and of its inputs where it
    differs (`input_layout`: the ONNX emitter's model takes NHWC and transposes), and `layouts`: the inputs and
    outputs that differ from the source model's, which runners transpose at the boundary (and `--locate`, for
    an output cut from inside the model)."""
    from importlib.metadata import version

    return Manifest(artifact=artifact.name, format=fmt, source=previous.source,
                    converter={"name": f"mmdnn {emitter}", "version": version("mmdnn"),
                               "framework_version": framework_version, "options": {}, "layout": layout,
                               "layouts": layouts(previous, layout, input_layout or layout), **converter},
                    inputs=previous.inputs, outputs=previous.outputs, sha256=sha256_of(artifact))


def layouts(previous: Manifest, emitted: str, emitted_inputs: str) -> dict:
    """How the emitted model's image inputs and outputs differ from the source model's: MMdnn's IR is NHWC; its
    PyTorch and MXNet emitters write NCHW models, the others NHWC. The source's layout is in the IR's manifest."""
    source = previous.converter.get("layout", "channels_first")
    return {**{entry["name"]: emitted_inputs for entry in previous.inputs
               if len(entry["shape"]) == 4 and emitted_inputs != source},
            **{entry["name"]: emitted for entry in previous.outputs
               if len(entry["shape"]) == 4 and emitted != source}}
