"""Users' model files end to end: convert one to targets and verify each conversion against it
(`rosetta convert MODEL`), or run several on the same inputs and compare them with the first or with saved
outputs (`rosetta verify MODEL MODEL ...`). Each function takes plain values, refuses bad input before any
work (RosettaError), and returns what the caller prints or writes; frameworks are imported only on use."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rosetta.errors import BadInput, RosettaError, Unsupported
from rosetta.output import check_writable_file
from rosetta.scratch import scratch_folder
from rosetta.settings import RunSettings, Tolerance
from rosetta.verify.tolerance import TolerancePolicy, policy_from_options
from rosetta.verify.ways_in import user_model_ways


DEFAULT_BATCH = 8  # rows of generated inputs where the run settings leave the batch to the call


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


@dataclass(frozen=True)
class ConvertRequest:
    """What `convert_and_verify_file` makes: `targets` (names, or ["all"]) by `route`, written to `output`
    (`force`: over what rosetta wrote there before), with `export` options; `verify`: each conversion checked
    against the model; `locate`: each FAIL row says where the conversion first diverges (`_locate_files`)."""

    targets: tuple[str, ...]
    output: Path
    route: str = "onnx"
    export: dict = field(default_factory=dict)
    force: bool = False
    verify: bool = True
    locate: bool = False


@dataclass(frozen=True)
class FileOptions:
    """The files a verify of model files reads or writes besides the models: `inputs_file` (.npz inputs to run;
    default: generated), `load_outputs` (an earlier `save_outputs`: then it is the reference, and `inputs_file`
    is needed), `save_inputs` and `save_outputs` (.npz files to write the inputs and the reference's outputs
    to), `layer_map` (a file pairing layers for locate)."""

    inputs_file: Path | None = None
    load_outputs: Path | None = None
    save_inputs: Path | None = None
    save_outputs: Path | None = None
    layer_map: Path | None = None


def convert_and_verify_file(path: str, request: ConvertRequest, run: RunSettings = RunSettings(),
                            tolerance: Tolerance = Tolerance(), *, inputs: list | None = None,
                            executor=None) -> ConvertedFile:
    """Convert the model at `path` as `request` says, verify each conversion against the model on generated
    inputs (unless not `request.verify`), and write the converted artifacts to `request.output`.

    `inputs`: parsed input specs; `run`: batch (default 8), seed, threads, max_memory (GiB; None: the default
    limit), trust_code, progress, and results_file (where the caller will write the results, checked writable
    before any work)."""
    from rosetta.convert.store import ArtifactStore
    from rosetta.convert.user import convert_user_model, parse_user_targets, write_converted
    from rosetta.frameworks.base import copied
    from rosetta.models.inputs import check_memory, generate_inputs
    from rosetta.output import OutputFolder
    from rosetta.sources.memory import open_any
    from rosetta.verify.artifacts import (corroborate_with_export, floor_in_doubt, reference_outputs,
                                          run_artifact_cells)

    inputs = inputs if inputs is not None else []
    route, output, force, export_options = request.route, request.output, request.force, request.export
    verify, locate = request.verify, request.locate
    batch, seed, threads, trust_code = run.batch or DEFAULT_BATCH, run.seed, run.threads, run.trust_code
    max_memory, progress, results_file = run.max_memory, run.progress, run.results_file
    atol, rtol, tolerance_multiple = tolerance.atol, tolerance.rtol, tolerance.multiple
    chosen = parse_user_targets(list(request.targets), route)
    sources = model_files([path])
    check_writable_file(results_file, sources)
    policy = policy_from_options(atol, rtol, tolerance_multiple)
    check_memory(inputs, [], batch, max_memory)  # the --input shapes alone may not fit
    with OutputFolder(output, force, sources, [name for name, _ in chosen]) as out, \
            scratch_folder("rosetta-") as scratch:
        model = open_any(path, inputs, trust_code, Path(scratch))
        check_output_names([o.name for o in model.outputs], atol, rtol)
        check_memory(model.inputs, model.outputs, batch, max_memory, model.has_float64)
        store = ArtifactStore(Path(scratch) / "store")
        feeds = generate_inputs(model.inputs, batch, seed)  # each artifact is run on them once as it is made
        cells = convert_user_model(model, chosen, store, dict(export_options or {}), copied(feeds), threads,
                                   progress)
        if not verify:
            results = [conversion_row(cell) for cell in cells]
        else:
            reference = reference_outputs(model, feeds, threads)
            if route == "onnx" and floor_in_doubt(reference):  # the export vouches for the float64 run, or not
                corroborate_with_export(reference, lambda: store.get_from(model.key, model.conversion_source,
                                                                          *_export_step(model, route, export_options)))
            reference.second = second_batch_outputs(model, feeds, reference.float32, seed, threads)
            policy = reference.policy(policy, tolerance_multiple is not None)
            conversions = {"store": store, "targets": dict(chosen), "options": dict(export_options or {})}
            # a row whose outputs do not depend on the input is decided on its intermediates where it can be
            decided = lambda more, rows, ways=None: _decide_on_intermediates(  # noqa: E731
                model, more, rows, feeds, policy, Path(scratch) / "intermediates",
                {**conversions, "targets": {**conversions["targets"], **(ways or {})}})
            results = decided(cells, run_artifact_cells(cells, reference, policy, progress, executor))
            # a target with more ways in (the tensorflow target's Keras mapper) tries them where the first fails
            cells, results = user_model_ways(model, chosen, store, dict(export_options or {}), copied(feeds), threads,
                                             cells, results,
                                             lambda more, ways: decided(more, run_artifact_cells(
                                                 more, reference, policy, False, executor), ways))
            if locate:
                _locate_files(model, cells, results, feeds, policy, Path(scratch) / "locate", conversions)
        written = write_converted(cells, out)
    return ConvertedFile(results, written, model.label, model.file.to_json(), policy)


def _export_step(model, route: str, export_options: dict | None) -> tuple:
    """(chain, options) of the model's ONNX export as the store keys it: the conversion every target of the ONNX
    route starts with (made once; already there where a target was converted)."""
    from rosetta.convert.user import parse_user_targets

    (_, onnx_target), = parse_user_targets("onnx", route)
    return model.chain_for(onnx_target), onnx_target.export_options(dict(export_options or {}))


def model_files(paths: Sequence[str]) -> list[Path]:
    """The files and folders the models at `paths` are read from (what no output may hold or replace); a path
    that names nothing readable is a RosettaError here, before any work."""
    from rosetta.sources.files import identify

    return [file for path in paths if isinstance(path, (str, Path)) for file in identify(str(path)).files()]


def check_output_names(names: Sequence[str], atol: Sequence[tuple[str, float]],
                       rtol: Sequence[tuple[str, float]]) -> None:
    """Refuse an atol or rtol for an output the reference does not have (it would be ignored)."""
    for option, pairs in (("atol", atol), ("rtol", rtol)):
        for name, _ in pairs:
            if name and name not in names:
                raise RosettaError(f"{option}={name}: the reference has no output {name!r}; its outputs: "
                                   f"{', '.join(names)}")


def read_npz(path: Path, option: str) -> dict:
    """The arrays of the .npz file an option names, before any work; anything else is one line."""
    from rosetta.errors import one_line
    from rosetta.execution import load_npz

    try:
        arrays = load_npz(Path(path))
    except Exception as error:  # noqa: BLE001 - whatever numpy or zipfile make of a file that is not an .npz
        raise RosettaError(f"{option}={path}: not a readable .npz file ({one_line(error)}); give a file written "
                           "by save_inputs= or save_outputs=") from None
    if not arrays:
        raise RosettaError(f"{option}={path}: the file holds no arrays")
    return arrays


SECOND_BATCH_TRIES = 4  # seeds tried for a second batch that differs from the first (tiny integer inputs may not)


def second_batch_outputs(model, feeds: dict, outputs: dict, seed: int, threads: int = 0) -> dict | None:
    """The reference's float32 outputs on a second, different batch of inputs, for the outputs whose own
    batch cannot show whether they depend on the input (compare.uninformative): a 0-d output, one without a
    batch axis in the model's signature, any output when the batch is 1. None when no output needs it, no
    different batch can be drawn, or the reference cannot run on it (then only the batch can show it)."""
    from rosetta.models.inputs import generate_inputs

    batch = next((len(a) for a in feeds.values() if np.ndim(a)), 1)
    batched = {o.name for o in model.outputs if o.shape and o.shape[0] is None}
    needed = [name for name, value in outputs.items()
              if batch < 2 or name not in batched or np.ndim(value) == 0 or len(value) != batch]
    if not needed:
        return None
    for offset in range(1, SECOND_BATCH_TRIES + 1):
        second = generate_inputs(model.inputs, batch, seed + offset)
        if any(not np.array_equal(second[name], feeds[name]) for name in feeds if name in second):
            try:
                found = model.predict(second, "float32", threads)
            except Exception:  # noqa: BLE001 - no evidence either way: the first batch's verdict stands
                return None
            return {name: found[name] for name in needed if name in found}
    return None


def conversion_row(cell):
    """The result row of a conversion that was not verified: "converted", or CANNOT/ERROR with its reason."""
    from rosetta.verify.results import VerifyResult, failure_verdict

    return VerifyResult(model=cell.model, route=cell.route, target=cell.target,
                        verdict=failure_verdict(cell.failed_stage, cell.crashed) if cell.failure else "converted",
                        reason=cell.failure, artifact=cell.folder)


def verify_files(paths: list, run: RunSettings = RunSettings(), tolerance: Tolerance = Tolerance(), *,
                 inputs: list | None = None, feeds=None, files: FileOptions = FileOptions(), executor=None,
                 locate: bool = False, pairs: Sequence[str] = ()) -> VerifiedFiles:
    """Run the models at `paths` on the same inputs and compare paths[1:] with paths[0]'s outputs, or every
    one with the outputs in `files.load_outputs` (from an earlier `save_outputs`; then `inputs_file` is needed).

    `paths`: paths as the command line names models, or model objects (sources.memory); `inputs`: parsed input
    specs; `feeds`: inputs to run as arrays, a dict by name or a sequence in the reference's input order (the
    Python API); default: `files.inputs_file`, else generated from `run.batch` (default 8) and `run.seed`;
    `run.results_file`: where the caller will write the results, checked writable before any work. A model that
    cannot be read is its row's ERROR; a path that names nothing readable is a RosettaError, before any work.
    `pairs`: pair texts (verify.pairing: how each model's inputs and outputs pair with the reference's where
    names, layouts or integer widths differ and the pairing is not unique). `locate`: where each failing model
    first diverges, in the row's `locate` (_locate_files; `files.layer_map`: a file pairing layers).
    `run.device`: where the compared models run ("cuda": each framework that sees a GPU runs its model there,
    and records the device it reports; one that does not is a CANNOT row, never a CPU run); the reference runs
    on the CPU."""
    from rosetta.execution import save_npz
    from rosetta.frameworks.base import check_feeds
    from rosetta.models.inputs import check_memory, generate_inputs
    from rosetta.models.registry import signature_of
    from rosetta.manifest import Manifest
    from rosetta.sources.memory import as_artifact, label_of
    from rosetta.verify.pairing import arrays_signature, pair_tensors, parse_pairs
    from rosetta.verify.artifacts import (ArtifactCell, ReferenceOutputs, corroborate_with_export, floor_in_doubt,
                                          reference_outputs, run_artifact_cells)

    inputs = inputs if inputs is not None else []
    inputs_file, load_outputs, layer_map = files.inputs_file, files.load_outputs, files.layer_map
    save_inputs, save_outputs = files.save_inputs, files.save_outputs
    batch, seed, threads, trust_code = run.batch or DEFAULT_BATCH, run.seed, run.threads, run.trust_code
    max_memory, progress, results_file, device = run.max_memory, run.progress, run.results_file, run.device
    atol, rtol, tolerance_multiple = tolerance.atol, tolerance.rtol, tolerance.multiple
    if load_outputs is not None and inputs_file is None:
        raise RosettaError("load_outputs= needs the inputs those outputs came from: add inputs_file=FILE.npz "
                           "(written by save_inputs=)")
    if load_outputs is None and len(paths) < 2 and not (save_inputs or save_outputs):
        raise RosettaError("give two or more models to compare (the first is the reference), or one with "
                           "save_outputs= or load_outputs=")
    read = model_files(paths) + [Path(p) for p in (inputs_file, load_outputs) if p is not None]
    check_distinct_outputs({"results_file=": results_file, "save_inputs=": save_inputs, "save_outputs=": save_outputs})
    for path in (results_file, save_inputs, save_outputs):
        check_writable_file(path, read)
    policy = policy_from_options(atol, rtol, tolerance_multiple)
    given = parse_pairs(pairs)
    if layer_map is not None and not locate:
        raise RosettaError(f"layer_map={layer_map} pairs layers for locate=: add locate=, or leave it out")
    if layer_map is not None:
        from rosetta.verify.port_locate import read_layer_map

        read_layer_map(layer_map)  # a file that is missing or malformed is refused here, before any work
    arrays = read_npz(inputs_file, "inputs_file") if inputs_file is not None else feeds
    saved = read_npz(load_outputs, "load_outputs") if load_outputs is not None else None
    if arrays is None:
        check_memory(inputs, [], batch, max_memory)
    with scratch_folder("rosetta-") as scratch:
        applied: list = []  # the models that took the --input options
        first = _open_candidate(paths[0], inputs, None, trust_code, Path(scratch), applied)
        if arrays is None:
            check_memory(first.inputs, first.outputs, batch, max_memory, first.has_float64)
            feeds = generate_inputs(first.inputs, batch, seed)
        else:
            feeds = arrays if isinstance(arrays, dict) else dict(zip([spec.name for spec in first.inputs], arrays))
            feeds, pool = split_feeds(feeds, [spec.name for spec in first.inputs])
            check_feeds(feeds, signature_of(first.inputs))
            # the outputs and the float64 copies at the given arrays' batch, as for generated inputs
            check_memory(first.inputs, first.outputs, next((len(a) for a in feeds.values() if np.ndim(a)), 1),
                         max_memory, first.has_float64)
        if saved is not None:
            reference_outputs_signature = arrays_signature(saved)
            label, compared = load_outputs.name, paths
        else:
            reference_outputs_signature = [(o.name, o.shape, o.dtype) for o in first.outputs]
            label, compared = first.label, paths[1:]
        check_output_names([name for name, _, _ in reference_outputs_signature], atol, rtol)
        check_given_names(given, list(feeds), [name for name, _, _ in reference_outputs_signature])
        cells, modules, extra = [], {}, {}  # extra: the inputs of compared models only (a port's padding_mask)
        if arrays is None:
            pool = {}
        takes = [(first.label, input_names(first))]  # each model's input names, where they can be known
        for path in compared:  # a model that cannot be read (or crashes its worker) is its row's ERROR
            name, own = path if isinstance(path, (str, Path)) else label_of(path), feeds
            try:
                model = first if path is paths[0] else _open_candidate(path, inputs, first, trust_code,
                                                                        Path(scratch), applied)
                if model is not first:
                    takes.append((str(name), input_names(model)))
                own = {**feeds, **own_extra(model, feeds, pool, inputs, extra, batch, seed)}
                if model.folder is None:  # a torch module (a factory, an in-memory one): run as its export, on
                    # the reference's inputs as it takes them (verify.pairing; refused in one line, before any work)
                    paired = pairing_question(pair_tensors, arrays_signature(own),
                                              [(s.name, s.shape, s.dtype) for s in model.inputs], given, "input",
                                              str(name))
                    module, model = model.module, as_artifact(model, {p.other: p.to_other(own[p.reference])
                                                                       for p in paired}, Path(scratch))
                    modules[str(model.folder)] = module  # its layers, for --locate
                failure, folder, refused = "", str(model.folder), False
            except PairingRefused as refusal:
                raise refusal.error from None
            except RosettaError as error:  # a model rosetta does not take (Unsupported) is CANNOT, not ERROR
                failure, folder, refused = f"reading failed: {error}", "", isinstance(error, Unsupported)
            # its inputs paired with the reference's (names, layouts, integer widths): refused here, before any
            # run, where no pairing or more than one fits
            pairing = None if not folder else pair_before_running(
                arrays_signature(own), reference_outputs_signature, Manifest.read(Path(folder)), given, str(name),
                itself=saved is None and (model is first or (bool(model.key) and model.key == first.key)))
            cells.append(ArtifactCell(label, str(name), folder, failure,
                                      failed_stage="conversion" if refused else "reading", threads=threads,
                                      trust_code=trust_code, route=_route_of(folder), pairing=pairing,
                                      given_pairs={k: [o, list(p) if p else None] for k, (o, p) in given.items()},
                                      device=device))
        if inputs_file is None and isinstance(arrays, dict):  # the arrays' own names first: their specs follow
            check_array_names(list(arrays), takes)
        check_inputs_used(inputs, applied)
        # every question about the models answered: the work starts here, with the reference's own runs
        if saved is not None:
            reference = ReferenceOutputs(feeds, saved)
        else:
            reference = reference_outputs(first, feeds, threads)
            if first.module is not None and floor_in_doubt(reference):  # a PyTorch reference: its export vouches
                from rosetta.convert.store import ArtifactStore

                store = ArtifactStore(Path(scratch) / "store")
                corroborate_with_export(reference, lambda: store.get_from(first.key, first.conversion_source,
                                                                          *_export_step(first, "onnx", None)))
            reference.second = second_batch_outputs(first, feeds, reference.float32, seed, threads)
        reference.feeds = {**reference.feeds, **extra}  # each compared model takes those it pairs with by name
        if save_inputs:
            save_npz(save_inputs, reference.feeds)
        if save_outputs:
            save_npz(save_outputs, reference.float32)
        policy = reference.policy(policy, tolerance_multiple is not None)
        results = run_artifact_cells(cells, reference, policy, progress, executor)
        if locate:
            _locate_files(first, cells, results, reference.feeds, policy, Path(scratch) / "locate", modules=modules,
                          layer_map=layer_map)
    return VerifiedFiles(results, label, len(feeds), list(reference.float32), policy)


def split_feeds(feeds: dict, names: list[str]) -> tuple[dict, dict]:
    """(the arrays the reference takes, the others: compared models' own inputs), where the arrays hold every
    input of the reference by name; else all of them as the reference's (check_feeds then says what is wrong)."""
    if not set(names) <= set(feeds):
        return feeds, {}
    return {name: feeds[name] for name in feeds if name in names}, \
        {name: value for name, value in feeds.items() if name not in names}


def own_extra(model, feeds: dict, pool: dict, inputs: list, extra: dict, batch: int, seed: int) -> dict:
    """The inputs `model` takes that the reference does not, by name (a keras-hub backbone's padding_mask):
    arrays the caller gave for them (`pool`), or values drawn for the --input that describes them; added to
    `extra`, which every compared model shares. An input of its own with neither is paired with the reference's
    like any other (and refused where it pairs with none)."""
    from rosetta.models.inputs import generate_inputs

    described = {spec.name for spec in inputs}
    own = {}
    for spec in model.inputs:
        if spec.name in feeds:
            continue
        if spec.name not in extra and spec.name in pool:
            extra[spec.name] = pool[spec.name]
        elif spec.name not in extra and spec.name in described:
            rows = next((len(a) for a in feeds.values() if np.ndim(a)), batch)
            extra[spec.name] = generate_inputs((spec,), rows, seed)[spec.name]
        if spec.name in extra:
            own[spec.name] = extra[spec.name]
    return own


class PairingRefused(Exception):
    """A pairing question raised while a compared model is read: not that model's row, the whole run's refusal."""

    def __init__(self, error: RosettaError) -> None:
        super().__init__(str(error))
        self.error = error


def pairing_question(pair, *args):
    """`pair(*args)`, its refusal carried past the handler that makes a model's reading failure its row."""
    try:
        return pair(*args)
    except RosettaError as error:
        raise PairingRefused(error) from None


def check_given_names(given: dict, inputs: list[str], outputs: list[str]) -> None:
    """Refuse a --pair that names no input or output of the reference (it would be silently ignored)."""
    for name in given:
        if name not in inputs and name not in outputs:
            raise RosettaError(f"pair={name}=...: the reference has no input or output {name!r}; its inputs: "
                               f"{', '.join(inputs) or 'none'}; its outputs: {', '.join(outputs) or 'none'}")


def pair_before_running(feeds: list, outputs: list, manifest, given: dict, label: str, itself: bool) -> dict:
    """How a model compared with the reference pairs with it (verify.pairing), its inputs and its outputs, from
    the signatures, before any model runs: refused here (BadInput, one line with the candidates and --pair)
    where none fits or more than one does. A model compared with itself pairs by name. Where the other model's
    output signature leaves sizes free (a dynamic axis), its outputs may only be told apart by the shapes a run
    gives: that pairing is left to the run ("outputs" absent), as the only question it cannot answer here."""
    from dataclasses import asdict

    from rosetta.errors import BadInput
    from rosetta.verify.pairing import Pair, pair_outputs, pair_tensors, signature

    inputs = pair_tensors(feeds, signature(manifest.inputs), given, "input", label)
    theirs = signature(manifest.outputs)
    if itself and [name for name, _, _ in theirs] == [name for name, _, _ in outputs] and not given:
        return {"inputs": [asdict(p) for p in inputs],
                "outputs": [asdict(Pair(name, name, how="name")) for name, _, _ in outputs], "unpaired": []}
    try:
        paired, missing, extra = pair_outputs(outputs, theirs, given, label)
    except BadInput:
        if any(size is None for _, shape, _ in theirs for size in shape[1:]):
            return {"inputs": [asdict(p) for p in inputs]}
        raise
    return {"inputs": [asdict(p) for p in inputs], "outputs": [asdict(p) for p in paired], "missing": missing,
            "unpaired": extra}


def check_distinct_outputs(files: dict) -> None:
    """Refuse two options that name the same output file (one would silently replace the other)."""
    named: dict = {}
    for option, path in files.items():
        if path is None:
            continue
        other = named.setdefault(Path(path).resolve(), option)
        if other != option:
            raise RosettaError(f"{other} and {option} name the same file {path}; give each its own")


def _route_of(folder: str) -> str:
    """The route an artifact came by, from its manifest's chain ("onnx" for any model that is not MMdnn's)."""
    from rosetta.manifest import Manifest

    return "mmdnn" if folder and "mmdnn" in (Manifest.read(Path(folder)).chain or []) else "onnx"


def _locate_files(first, cells: list, results: list, feeds: dict, policy: TolerancePolicy, work: Path,
                  conversions: dict | None = None, modules: dict | None = None, layer_map: Path | None = None) -> None:
    """`--locate` for model files: each FAIL row gets its report.
    - an artifact of the MMdnn route: bisection of the IR the reference parses into (verify.locate_mmdnn), made
      once for the rows that share it;
    - a conversion of the ONNX route (`conversions`: {"store", "targets": {row name: Target}, "options"}) beyond
      its ONNX export: the export's nodes, cut and converted along the target's chain (verify.locate);
    - an ONNX model against an ONNX reference: tensors matched by name (verify.locate.locate_in_export);
    - any other pair, a port written by hand and the ONNX export itself included: their layers, paired
      (verify.port_locate; `modules`: {artifact folder: the torch module it was exported from}, whose layers
      are read instead; `layer_map`: a --layer-map file)."""
    from rosetta.errors import RosettaError, one_line
    from rosetta.manifest import Manifest
    from rosetta.verify.locate import LocateReport, locate_in_export
    from rosetta.verify.results import FAIL

    # the reference evaluator gives every tensor a float64 value, so the calibrated rule applies per tensor
    # even where the reference's outputs had no float64 run
    tensor_policy = policy if not policy.calibrated else TolerancePolicy()
    reference_is_onnx = bool(first.folder) and Manifest.read(Path(first.folder)).format == "onnx"
    irs: dict = {}  # IR chain -> (IR folder, the reference's values of its nodes), or the reason there is none
    reference_side: list = []  # the reference's layers, read once for every row that needs them
    for n, (cell, result) in enumerate(zip(cells, results)):
        if result.verdict != FAIL or result.locate:  # located already: decided on its intermediates
            continue
        candidate = Manifest.read(Path(cell.folder)) if cell.folder else None
        target = (conversions or {}).get("targets", {}).get(result.target)
        try:
            if candidate is not None and cell.route == "mmdnn":
                report = _locate_mmdnn_file(first, Path(cell.folder), candidate, feeds,
                                            tensor_policy if first.module is not None else policy,
                                            work / str(n), result.target, irs)
            elif candidate is not None and target is not None and "onnx" in first.chain_for(target)[:-1]:
                report = _locate_conversion(first, target, cell, feeds, tensor_policy, conversions, work / str(n))
            elif candidate is not None and reference_is_onnx and candidate.format == "onnx":
                report = locate_in_export(Path(first.folder), Path(cell.folder), feeds, tensor_policy,
                                          work / str(n), result.target)
            elif candidate is not None:
                report = _locate_port(first, cell, feeds, policy, reference_side, (modules or {}).get(cell.folder),
                                      layer_map)
            else:
                report = LocateReport(result.target, "not located", reason="it has no artifact to read")
        except RosettaError as error:
            report = LocateReport(result.target, "not located", reason=one_line(error))
        result.locate = report.to_json()


def _decide_on_intermediates(first, cells: list, results: list, feeds: dict, policy: TolerancePolicy, work: Path,
                             conversions: dict) -> list:
    """`results`, where each INCONCLUSIVE row of a conversion along the ONNX route beyond its export, whose outputs
    do not depend on the input (not one whose reference is in doubt), is decided on its intermediates: the
    export's tensors, which its conversion shares, read as `--locate` reads them (verify.locate.intermediates_verdict):
    FAIL with where it diverges, PASS saying how many tensors that depend on the input agree, or INCONCLUSIVE
    still, saying why. The export's own row stays as its outputs say: its reference is the model, whose
    structure it does not share."""
    from rosetta.errors import RosettaError, one_line
    from rosetta.verify.locate import intermediates_verdict
    from rosetta.verify.results import FAIL, INCONCLUSIVE

    tensor_policy = policy if not policy.calibrated else TolerancePolicy()  # as _locate_files: per tensor
    for cell, result in zip(cells, results):
        outputs = result.outputs
        if (result.verdict != INCONCLUSIVE or not outputs or not all(o.uninformative for o in outputs)
                or any(o.reference_doubt for o in outputs)):
            continue
        target = conversions["targets"].get(result.target)
        if not cell.folder or target is None or "onnx" not in first.chain_for(target)[:-1]:
            continue
        try:
            report = _locate_conversion(first, target, cell, feeds, tensor_policy, conversions,
                                        work / f"{result.target}-{'-'.join(target.chain)}")
        except RosettaError as error:
            result.reason += f"; its intermediates could not decide: {one_line(error)}"
            continue
        verdict, why = intermediates_verdict(report)
        result.reason = f"{result.reason}; {why}" if verdict == INCONCLUSIVE else f"{why} (its outputs: {result.reason})"
        result.verdict = verdict
        if verdict == FAIL:
            result.locate = report.to_json()
    return results


def _locate_conversion(first, target, cell, feeds: dict, policy: TolerancePolicy, conversions: dict, work: Path):
    """Where a conversion of the user's model along the ONNX route diverges: the nodes of its ONNX export (the
    one the target was made from), cut and converted along the rest of the target's chain (verify.locate)."""
    from rosetta.convert.store import along
    from rosetta.convert.targets import load_verify_runner
    from rosetta.frameworks import runner_for_format
    from rosetta.manifest import Manifest
    from rosetta.verify.locate import TargetFiles, locate

    chain = first.chain_for(target)
    hub = chain.index("onnx")
    options = target.export_options(conversions.get("options") or {})
    source = conversions["store"].get_from(first.key, first.conversion_source, chain[: hub + 1], options)
    load = lambda folder: load_verify_runner(runner_for_format(Manifest.read(folder).format), folder,  # noqa: E731
                                             cell.threads, cell.trust_code)
    modules = {name for name, _ in first.module.named_modules() if name} if first.module is not None else None
    return locate(Path(source), along(chain[hub:], options), load, feeds, policy, work, cell.target, modules,
                  files=TargetFiles(artifact=Path(cell.folder)))


def _locate_port(first, cell, feeds: dict, policy: TolerancePolicy, reference_side: list, module,
                 layer_map: Path | None):
    """Where a model that is not the reference's own conversion diverges from it, layer by layer."""
    from rosetta.manifest import Manifest
    from rosetta.verify.pairing import Pairing
    from rosetta.verify.port_locate import locate_port, read_layer_map, side_of

    if not reference_side:
        own = {spec.name: feeds[spec.name] for spec in first.inputs if spec.name in feeds}  # not a port's extra
        reference_side.append(side_of(first.label, first.folder, first.module, own or feeds,
                                      [s.name for s in first.inputs], True, first.trust_code))
    pairs = Pairing.from_json(cell.pairing).inputs if cell.pairing else []
    port_feeds = {pair.other: pair.to_other(feeds[pair.reference]) for pair in pairs} if pairs else dict(feeds)
    names = [entry["name"] for entry in Manifest.read(Path(cell.folder)).inputs]
    port = side_of(cell.target, Path(cell.folder), module, port_feeds,
                   [pair.other for pair in pairs] if module is not None and pairs else names, False, cell.trust_code)
    return locate_port(reference_side[0], port, policy, cell.target, read_layer_map(layer_map))


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


def _open_candidate(path, inputs: list, first, trust_code: bool, scratch: Path, applied: list):
    """A model to compare with `first` (None: the reference itself). The --input options describe whichever
    models take them: a port may name or lay out its inputs otherwise (verify.pairing pairs them), and a Keras
    reference needs none where its PyTorch port does, so a model that does not take them is read with its own
    signature (and an MXNet symbol, which has none, with `first`'s by position). A torch module, a factory or
    a Gluon block says not its inputs: the reference's, unless given. `applied` gets the models that took them."""
    from rosetta.sources.files import identify
    from rosetta.sources.memory import kind_of, open_any
    from rosetta.sources.signature import UnknownInput

    like = tuple(first.inputs) if first is not None else ()
    kind = kind_of(path) or ("torch" if identify(str(path)).format == "torch-factory" else "")
    if kind in ("torch", "gluon"):
        model = open_any(path, inputs or list(like), trust_code, scratch)
    else:
        try:  # the --input options that name its inputs (the others are another model's)
            model = open_any(path, inputs, trust_code, scratch, like, partial=True)
        except UnknownInput:
            return open_any(path, [], trust_code, scratch, like)  # its own signature, paired afterwards
    if inputs:
        applied.append(model)
    return model


def input_names(model) -> list[str] | None:
    """The input names `model` takes, or None where they cannot be known: a torch module's are its forward's
    parameters (sources.torch feeds them by keyword), unless it takes *args or **kwargs; an MXNet symbol's or a
    Gluon block's are borrowed from the reference (by position)."""
    if model.module is not None:
        import inspect

        module = model.module
        if type(module).__name__ == "TensorInterface":  # frameworks.torch_outputs: the module it calls, by name
            if module.input_names:
                return list(module.input_names)
            module = module.module
        try:
            parameters = list(inspect.signature(module.forward).parameters.values())
        except (TypeError, ValueError):
            return None
        if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in parameters):
            return None
        return [p.name for p in parameters]
    return [spec.name for spec in model.inputs] if model.format in ("onnx", "keras", "tensorflow", "torch-export") \
        else None


def check_array_names(names: list[str], takes: list[tuple[str, list[str] | None]]) -> None:
    """Refuse an array given by a name that no model compared takes, where every model's names are known (it
    would be paired by position, silently); where one model's are not, its inputs go by position."""
    if any(taken is None for _, taken in takes):
        return
    unknown = [name for name in names if not any(name in taken for _, taken in takes)]
    if unknown:
        which = "either model" if len(takes) == 2 else "any model compared"
        listed = "; ".join(f"{label} takes {', '.join(taken) or 'none'}" for label, taken in takes)
        raise BadInput(f"inputs: {', '.join(map(repr, unknown))} names no input of {which} ({listed})")


def check_inputs_used(inputs: list, models: list) -> None:
    """Refuse an --input that no model compared took (it would be silently ignored), saying what they take."""
    names = {spec.name for model in models for spec in model.inputs}
    unused = [spec for spec in inputs if spec.name not in names]
    if unused:
        raise RosettaError(f"inputs={unused[0].name!r}: no model compared takes it (as named, shaped and typed); "
                           "give the inputs of one of them")
