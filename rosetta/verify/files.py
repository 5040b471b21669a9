"""Users' model files end to end: convert one to targets and verify each conversion against it
(`rosetta convert MODEL`), or run several on the same inputs and compare them with the first or with saved
outputs (`rosetta verify MODEL MODEL ...`). Each function takes plain values, refuses bad input before any
work (RosettaError), and returns what the caller prints or writes; frameworks are imported only on use."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rosetta.errors import RosettaError
from rosetta.scratch import scratch_folder
from rosetta.verify.tolerance import TolerancePolicy, policy_from_options


@dataclass
class ConvertedFile:
    """What `convert_and_verify_file` did: one row per target, and the targets written to the output folder."""

    results: list  # VerifyResult rows: verdicts, or "converted" (CANNOT or ERROR where it could not be) without verification
    written: list[str]  # the targets written, each to output/<target>/
    model_label: str  # the model as the table names it
    model_file: dict  # sources.files.ModelFile.to_json() of the model
    policy: TolerancePolicy  # the policy applied (as given when not verified)


@dataclass
class VerifiedFiles:
    """What `verify_files` did: one row per compared model (none when only saving inputs or outputs)."""

    results: list  # VerifyResult rows
    reference: str  # the reference's label: the first model, or the --load-outputs file's name
    inputs: int  # how many inputs the models ran on
    outputs: list[str]  # the reference's output names
    policy: TolerancePolicy


def check_writable_file(path: Path | None) -> None:
    """Refuse, before any work, a file that the results cannot be written to (None: nothing to check)."""
    if path is None:
        return
    parent = path.resolve().parent
    if path.is_dir():
        raise RosettaError(f"{path} is a folder; give a file name for the JSON output")
    if not parent.is_dir():
        raise RosettaError(f"cannot write {path}: folder {parent} does not exist")
    if not os.access(parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise RosettaError(f"cannot write {path}: permission denied")


def convert_and_verify_file(path: str, targets: str, route: str, output: Path, *, force: bool = False,
                            export_options: dict | None = None, inputs: list | None = None, trust_code: bool = False,
                            batch: int = 8, seed: int = 0, threads: int = 0,
                            atol: Sequence[tuple[str, float]] = (), rtol: Sequence[tuple[str, float]] = (),
                            tolerance_multiple: float | None = None, max_memory: float | None = None,
                            verify: bool = True, progress: bool = False, executor=None,
                            results_file: Path | None = None, locate: bool = False) -> ConvertedFile:
    """Convert the model at `path` to each of `targets` (--to text) by `route`, verify each conversion against
    the model on generated inputs (unless not `verify`), and write the converted artifacts to `output`.

    `inputs`: parsed --input options; `atol`, `rtol`, `tolerance_multiple`: as `policy_from_options` takes
    them; `max_memory`: GiB (None: the default limit); `results_file`: where the caller will write the results,
    checked writable before any work; `locate`: each FAIL row says where the conversion first diverges
    (`_locate_files`)."""
    from rosetta.output import check_output_folder
    from rosetta.convert.store import ArtifactStore
    from rosetta.convert.user import convert_user_model, parse_user_targets, write_converted
    from rosetta.sources.model import open_model
    from rosetta.verify.artifacts import reference_outputs, run_artifact_cells
    from rosetta.models.inputs import check_memory, generate_inputs

    inputs = inputs if inputs is not None else []
    chosen = parse_user_targets(targets, route)
    check_output_folder(output, force)
    check_writable_file(results_file)
    policy = policy_from_options(atol, rtol, tolerance_multiple)
    check_memory(inputs, [], batch, max_memory)  # the --input shapes alone may not fit
    with scratch_folder("rosetta-") as scratch:
        model = open_model(path, inputs, trust_code, Path(scratch))
        check_memory(model.inputs, model.outputs, batch, max_memory, model.has_float64)
        feeds = generate_inputs(model.inputs, batch, seed)
        cells = convert_user_model(model, chosen, ArtifactStore(Path(scratch) / "store"), dict(export_options or {}),
                                   feeds, threads, progress)
        if not verify:
            results = [conversion_row(cell) for cell in cells]
        else:
            reference = reference_outputs(model, feeds, threads)
            policy = reference.policy(policy, tolerance_multiple is not None)
            results = run_artifact_cells(cells, reference, policy, progress, executor)
            if locate:
                _locate_files(model, cells, results, feeds, policy, Path(scratch) / "locate")
        written = write_converted(cells, output, force)
    return ConvertedFile(results, written, model.label, model.file.to_json(), policy)


def conversion_row(cell):
    """The result row of a conversion that was not verified: "converted", or CANNOT/ERROR with its reason."""
    from rosetta.verify.results import VerifyResult, failure_verdict

    return VerifyResult(model=cell.model, route=cell.route, target=cell.target,
                        verdict=failure_verdict(cell.failed_stage, cell.crashed) if cell.failure else "converted",
                        reason=cell.failure, artifact=cell.folder)


def verify_files(paths: list[str], *, inputs: list | None = None, inputs_file: Path | None = None,
                 load_outputs: Path | None = None, save_inputs: Path | None = None, save_outputs: Path | None = None,
                 trust_code: bool = False, batch: int = 8, seed: int = 0, threads: int = 0,
                 atol: Sequence[tuple[str, float]] = (), rtol: Sequence[tuple[str, float]] = (),
                 tolerance_multiple: float | None = None, max_memory: float | None = None, progress: bool = False,
                 executor=None, results_file: Path | None = None, locate: bool = False) -> VerifiedFiles:
    """Run the models at `paths` on the same inputs and compare paths[1:] with paths[0]'s outputs, or every
    one with the outputs in `load_outputs` (from an earlier `save_outputs`; then `inputs_file` is needed).

    `inputs`: parsed --input options; `inputs_file`: inputs to run (.npz; default: generated from `batch` and
    `seed`); `save_inputs`, `save_outputs`: .npz files to write the inputs and the reference's outputs to;
    `results_file`: where the caller will write the results, checked writable before any work. A model that
    cannot be read is its row's ERROR; a path that names nothing readable is a RosettaError, before any work.
    `locate`: where both the reference and a failing model are ONNX, the first node at which it diverges
    (verify.locate.locate_in_export: tensors matched by name), in the row's `locate`."""
    from rosetta.sources.files import identify
    from rosetta.sources.model import open_model
    from rosetta.verify.artifacts import (ArtifactCell, ReferenceOutputs, load_inputs, reference_outputs,
                                          run_artifact_cells, save_npz)
    from rosetta.models.inputs import check_memory, generate_inputs
    from rosetta.execution import load_npz

    inputs = inputs if inputs is not None else []
    for path in (results_file, save_inputs, save_outputs):
        check_writable_file(path)
    if load_outputs is not None and inputs_file is None:
        raise RosettaError("--load-outputs needs the inputs those outputs came from: add --inputs FILE.npz "
                           "(written by --save-inputs)")
    if load_outputs is None and len(paths) < 2 and not (save_inputs or save_outputs):
        raise RosettaError("give two or more models to compare (the first is the reference), or one with "
                           "--save-outputs or --load-outputs")
    policy = policy_from_options(atol, rtol, tolerance_multiple)
    if inputs_file is None:
        check_memory(inputs, [], batch, max_memory)
    with scratch_folder("rosetta-") as scratch:
        for path in paths:  # a path that names nothing readable is a usage error, before any work
            identify(path)
        first = open_model(paths[0], inputs, trust_code, Path(scratch))
        if inputs_file is None:
            check_memory(first.inputs, first.outputs, batch, max_memory, first.has_float64)
        feeds = load_inputs(inputs_file, first) if inputs_file else generate_inputs(first.inputs, batch, seed)
        if load_outputs is not None:
            try:
                reference = ReferenceOutputs(feeds, load_npz(load_outputs))
            except (OSError, ValueError) as error:
                raise RosettaError(f"--load-outputs {load_outputs}: not a readable .npz file ({error})") from None
            label, compared = load_outputs.name, paths
        else:
            reference = reference_outputs(first, feeds, threads)
            label, compared = first.label, paths[1:]
        if save_inputs:
            save_npz(save_inputs, feeds)
        if save_outputs:
            save_npz(save_outputs, reference.float32)
        policy = reference.policy(policy, tolerance_multiple is not None)
        cells = []
        for path in compared:  # a model that cannot be read (or crashes its worker) is its row's ERROR
            try:
                model = first if path == paths[0] else open_model(path, inputs, trust_code, Path(scratch))
                failure = "" if model.folder else "a PyTorch factory can only be the reference"
                folder = str(model.folder or "")
            except RosettaError as error:
                failure, folder = f"reading failed: {error}", ""
            cells.append(ArtifactCell(label, path, folder, failure, failed_stage="reading", threads=threads,
                                      trust_code=trust_code, route=_route_of(folder)))
        results = run_artifact_cells(cells, reference, policy, progress, executor)
        if locate:
            _locate_files(first, cells, results, feeds, policy, Path(scratch) / "locate")
    return VerifiedFiles(results, label, len(feeds), list(reference.float32), policy)


def _route_of(folder: str) -> str:
    """The route an artifact came by, from its manifest's chain ("onnx" for any model that is not MMdnn's)."""
    from rosetta.manifest import Manifest

    return "mmdnn" if folder and "mmdnn" in (Manifest.read(Path(folder)).chain or []) else "onnx"


def _locate_files(first, cells: list, results: list, feeds: dict, policy: TolerancePolicy, work: Path) -> None:
    """`--locate` for model files: each FAIL row gets its report. An ONNX model against an ONNX reference:
    tensors matched by name (verify.locate.locate_in_export); an artifact of the MMdnn route: bisection of the
    IR the reference parses into (verify.locate_mmdnn), made once for the rows that share it; any other FAIL
    row says why it has none."""
    from rosetta.manifest import Manifest
    from rosetta.verify.locate import LocateReport, locate_in_export
    from rosetta.verify.results import FAIL

    # the reference evaluator gives every tensor a float64 value, so the calibrated rule applies per tensor
    # even where the reference's outputs had no float64 run
    tensor_policy = policy if not policy.calibrated else TolerancePolicy()
    reference_is_onnx = bool(first.folder) and Manifest.read(Path(first.folder)).format == "onnx"
    irs: dict = {}  # IR chain -> (IR folder, the reference's values of its nodes), or the reason there is none
    for n, (cell, result) in enumerate(zip(cells, results)):
        if result.verdict != FAIL:
            continue
        candidate = Manifest.read(Path(cell.folder)) if cell.folder else None
        if candidate is not None and cell.route == "mmdnn":
            result.locate = _locate_mmdnn_file(first, Path(cell.folder), candidate, feeds,
                                               tensor_policy if first.module is not None else policy,
                                               work / str(n), result.target, irs).to_json()
        elif candidate is not None and reference_is_onnx and candidate.format == "onnx":
            result.locate = locate_in_export(Path(first.folder), Path(cell.folder), feeds, tensor_policy,
                                             work / str(n), result.target).to_json()
        else:
            result.locate = LocateReport(result.target, "not located",
                                         reason="--locate compares two ONNX models (tensors by name), or a model "
                                                "with its MMdnn conversion").to_json()


def _locate_mmdnn_file(first, artifact: Path, manifest, feeds: dict, policy: TolerancePolicy, work: Path,
                       target: str, irs: dict):
    """Where an MMdnn conversion of the model `first` diverges: the IR `first` parses into (made again with the
    same parser; kept in `irs` for the other rows of the same parser), bisected with the artifact's own emitter
    against `first`'s values of the IR's nodes."""
    from rosetta.convert.store import along
    from rosetta.frameworks import load_runner, reads_code, runner_for_format
    from rosetta.verify.locate import LocateReport
    from rosetta.verify.locate_mmdnn import locate_mmdnn

    chain = tuple(manifest.chain)
    hub = chain[: chain.index("mmdnn") + 1]
    if hub not in irs:
        irs[hub] = _reference_ir(first, hub, feeds, work.parent / f"ir-{len(irs)}")
    if isinstance(irs[hub], str):
        return LocateReport(target, "not located", reason=irs[hub], graph="mmdnn")
    ir, references = irs[hub]
    runner = runner_for_format(manifest.format)
    # the emitted prefixes are rosetta's own conversions of the user's model: their code is rosetta's to run
    options = {"trust_code": True} if reads_code(runner) else {}
    return locate_mmdnn(ir, references, along(chain[chain.index("mmdnn"):]),
                        lambda folder: load_runner(runner, folder, **options), policy, work / "probes", target)


def _reference_ir(first, chain: tuple, feeds: dict, folder: Path):
    """(the IR `first` parses into along `chain`, in `folder`; the reference's values of its nodes), or why not."""
    from rosetta.convert.mmdnn.ir import ir_nodes
    from rosetta.convert.store import run_conversion
    from rosetta.manifest import Manifest
    from rosetta.verify.locate_mmdnn import framework_references, torch_references

    try:
        run_conversion(first.conversion_source(), chain, folder)
        ir_manifest = Manifest.read(folder)
        if first.module is not None:
            return folder, torch_references(first.module, first.inputs[0].name, ir_manifest, feeds)
        return folder, framework_references(first.runner, Path(first.folder), ir_manifest,
                                            ir_nodes(ir_manifest.artifact_path(folder)), feeds, first.has_float64,
                                            first.trust_code)
    except RosettaError as error:
        return f"its IR could not be made again: {error}"
