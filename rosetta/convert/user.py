"""Conversion of a user's model file to the targets asked for, each target its own cell: one that fails is a
CANNOT (or ERROR) row with its reason and the others go on. Each converted artifact is run once on the inputs
verification will feed it (convert.runs): one its runtime rejects is a CANNOT with the runtime's reason, not
an artifact. The converted artifacts land in the output folder atomically, one sub-folder per target; nothing
is written when the command fails as a whole."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field

from rosetta.convert.targets import Target, get_target, list_targets
from rosetta.errors import RosettaError, environment_cause, is_fault, one_line
from rosetta.output import OutputFolder
from rosetta.progress import progress_bar
from rosetta.settings import listed

# `--to onnx`: the ONNX file itself, verified in ONNX Runtime (the onnxruntime target's artifact).
FORMAT_ALIASES = {"onnx": "onnxruntime"}


@dataclass(frozen=True)
class Converted:
    """A user's model converted to one target, or why it could not be (verification's ArtifactCell)."""

    model: str  # the reference's label: the row's model column
    target: str  # the row's name: a target, or the artifact's path
    folder: str = ""  # the artifact folder; empty when `failure` says why there is none
    failure: str = ""
    failed_stage: str = "conversion"  # where `failure` happened ("reading": the file itself could not be read)
    # verdict ERROR: a fault (crash, hang, out of memory, disk full) or a bug in rosetta (convert.runs.internal_error),
    # not the converter giving up (CANNOT)
    crashed: bool = False
    route: str = "onnx"
    threads: int = 0
    trust_code: bool = False
    # a model compared with a reference it was not converted from (verify.pairing): its inputs' pairs as JSON,
    # and the --pair options its outputs are paired with; None: rosetta's own conversion, fed as it is
    pairing: dict | None = None
    given_pairs: dict = field(default_factory=dict)
    device: str = "cpu"  # where it runs when verified ("cuda": on the GPU, or a CANNOT row; never the CPU)


def parse_user_targets(text: str | Sequence[str], route: str = "onnx") -> list[tuple[str, Target]]:
    """`--to` for a user's model: target names of the route, `onnx`, or `all`; (row name, target) pairs."""
    names = ["onnx"] + [n for n in list_targets(route) if n != "onnxruntime"] if listed(text) == ["all"] else \
        listed(text)
    if not names:
        raise RosettaError("no target given; pass to=FORMAT[,FORMAT...] or to=all")
    choices = ", ".join(["onnx"] + list_targets(route))
    pairs = []
    for name in dict.fromkeys(names):
        if name not in FORMAT_ALIASES and name not in list_targets(route):
            raise RosettaError(f"unknown target {name!r}; choose from: {choices}, all")
        pairs.append((name, get_target(FORMAT_ALIASES.get(name, name), route)))
    return pairs


def convert_user_model(model, targets: list[tuple[str, Target]], store, options: dict, feeds: dict,
                       threads: int = 0, progress: bool = True) -> list[Converted]:
    """One Converted per target: its converted folder in `store`, run once on `feeds`, or the reason it could not
    be made or does not run."""
    from rosetta.convert.runs import internal_error, run_converted

    if model.trust_code:
        options = {**options, "trust_code": True}
    cells = []
    with progress_bar(len(targets), "converting", enabled=progress) as advance:
        for name, target in targets:
            advance(f"{model.label} -> {name}")
            try:
                folder = store.get_from(model.key, model.conversion_source, model.chain_for(target),
                                        target.export_options(options))
                # code rosetta generated in this run (MMdnn's PyTorch emitter) is trusted like the user's own
                trusted = model.trust_code or dict(target.verify_options).get("trust_code", False)
                run_converted(target.runner, folder, feeds, threads, trusted)
                cells.append(Converted(model.label, name, str(folder), route=target.route, threads=threads,
                                          trust_code=trusted))
            except Exception as error:  # a conversion that fails is a CANNOT/ERROR row, never a missing one
                bug = internal_error(error)  # raised in rosetta's own code: an ERROR naming it, not a refusal
                reason = environment_cause(error) or (f"rosetta bug: {bug}" if bug else str(error)
                                                      if isinstance(error, RosettaError) else one_line(error))
                if not reason.startswith("conversion"):
                    reason = f"conversion failed: {reason}"
                cells.append(Converted(model.label, name, failure=reason, route=target.route,
                                       crashed=is_fault(error) or bool(bug)))
        advance(None)
    return cells


def write_converted(cells: list[Converted], output: OutputFolder) -> list[str]:
    """Copy each converted artifact to output/<target>/, all installed together (rosetta.output: an
    interruption leaves the old output or the new one); returns the targets written."""
    written = [cell for cell in cells if cell.folder]
    for cell in written:
        shutil.copytree(cell.folder, output.staging / cell.target)
    return output.install(cell.target for cell in written)
