"""TensorFlow SavedModel -> ONNX with tf2onnx: the TF -> ONNX -> ONNX Runtime round trip.

Runs tf2onnx's documented command line (`python -m tf2onnx.convert --saved-model`), which freezes the
SavedModel's serving signature, at the same opset as the ONNX the SavedModel came from. (Wrapping the
loaded signature in a tf.function for tf2onnx.convert.from_function leaves the captured constants as extra
graph inputs.) Tensors that the TF artifact holds channels-last (recorded in its manifest) are turned back
to channels-first with --inputs-as-nchw/--outputs-as-nchw; the ONNX tensors keep the signature's names.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from rosetta.convert.targets import EXPORT_DEFAULTS
from rosetta.errors import RosettaError
from rosetta.frameworks.onnx_graph import graph_inputs, load_checked, value_info_signature
from rosetta.manifest import Manifest, sha256_of
from rosetta.processes import die_with_parent

ARTIFACT = "model.onnx"


def convert(source: Path, staging: Path, options: dict) -> Manifest:
    from importlib.metadata import version

    previous = Manifest.read(source)
    opset = min(int(previous.opset or options.get("opset", EXPORT_DEFAULTS["opset"])), newest_tf2onnx_opset())
    layouts = previous.converter.get("layouts", {})
    target = Path(staging) / ARTIFACT
    # tf2onnx transposes channels-last tensors back to channels-first for rank 4 only (it ignores any other
    # rank with a warning): those it takes; any other layout change is kept in the manifest, for the runner
    rank4 = {e["name"] for e in previous.inputs + previous.outputs if len(e["shape"]) == 4}
    nchw = {kind: [e["name"] for e in entries if layouts.get(e["name"]) == "channels_last" and e["name"] in rank4]
            for kind, entries in (("inputs", previous.inputs), ("outputs", previous.outputs))}
    kept = {name: layout for name, layout in layouts.items() if name not in nchw["inputs"] + nchw["outputs"]}
    run_tf2onnx(previous.artifact_path(source), target, opset, nchw["inputs"], nchw["outputs"])
    signature_in, signature_out = check_tensor_names(load_checked(target), previous)
    # a tensor whose layout the runner changes is fed and returned as the source model's: its signature
    before = {entry["name"]: entry for entry in previous.inputs + previous.outputs}
    signature_in, signature_out = ([before[e["name"]] if e["name"] in kept else e for e in signature]
                                   for signature in (signature_in, signature_out))
    return Manifest(
        artifact=ARTIFACT, format="onnx", source=previous.source,
        converter={"name": "tf2onnx", "version": version("tf2onnx"), "framework_version": tensorflow_version(),
                   "options": {"opset": opset}, **({"layouts": kept} if kept else {})},
        inputs=signature_in, outputs=signature_out, sha256=sha256_of(target), opset=opset,
    )


def run_tf2onnx(saved_model: Path, target: Path, opset: int, nchw_inputs=(), nchw_outputs=()) -> None:
    """tf2onnx's command line on a SavedModel; one-line error with tf2onnx's own reason."""
    command = [sys.executable, "-m", "tf2onnx.convert", "--saved-model", str(saved_model), "--output", str(target),
               "--opset", str(opset)]
    for flag, names in (("--inputs-as-nchw", nchw_inputs), ("--outputs-as-nchw", nchw_outputs)):
        if names:
            command += [flag, ",".join(names)]
    done = subprocess.run(command, capture_output=True, text=True, preexec_fn=die_with_parent())  # dies with the worker
    if done.returncode != 0 or not target.is_file():
        errors = [line for line in done.stderr.splitlines() if "Error" in line or "error" in line]
        raise RosettaError(f"tf2onnx failed: {(errors or done.stderr.strip().splitlines() or ['no output'])[-1][:300]}")


def newest_tf2onnx_opset() -> int:
    """The newest opset tf2onnx writes (a newer source opset is written at this one)."""
    from tf2onnx.constants import OPSET_TO_IR_VERSION

    return max(OPSET_TO_IR_VERSION)


def check_tensor_names(model, previous) -> tuple[list[dict], list[dict]]:
    """The ONNX signature, which must name the tensors as the source model did."""
    signature_in = value_info_signature(graph_inputs(model))
    signature_out = value_info_signature(model.graph.output)
    if sorted(s["name"] for s in signature_in) != sorted(e["name"] for e in previous.inputs) or \
            sorted(s["name"] for s in signature_out) != sorted(o["name"] for o in previous.outputs):
        raise RosettaError(f"tf2onnx named the tensors {[s['name'] for s in signature_in]} -> "
                           f"{[s['name'] for s in signature_out]}, not as the source model")
    return signature_in, signature_out


def tensorflow_version() -> str:
    """TensorFlow's version without importing it here (tf2onnx ran it in its own process)."""
    from importlib.metadata import PackageNotFoundError, version

    for distribution in ("tensorflow-cpu", "tensorflow"):
        try:
            return version(distribution)
        except PackageNotFoundError:
            continue
    return "unknown"
