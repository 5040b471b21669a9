"""The reference models' verification matrix (`rosetta verify --model ...`): models x routes x targets x seeds
inference cells, plus training cells (--train-steps) for the trainable targets, planned from plain values and
refused before any work when they cannot run; `run_cells` (verify.cells) runs them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rosetta.errors import RosettaError
from rosetta.scratch import scratch_folder
from rosetta.settings import RunSettings, Tolerance
from rosetta.verify.tolerance import TolerancePolicy, policy_from_options


@dataclass
class ReferencePlan:
    cells: list  # VerifyCell, then TrainCell
    policy: TolerancePolicy  # the inference cells' policy (the one the table and the JSON describe)


@dataclass
class VerifiedModels:
    results: list  # VerifyResult rows, in the order of the plan's cells
    policy: TolerancePolicy


@dataclass(frozen=True)
class TrainingPlan:
    """The training cells a verify of reference models adds: `steps` optimiser steps (None or 0: none) on
    batches of `batch`, in `precision`."""

    steps: int | None = None
    batch: int = 4
    precision: str = "float32"


def plan_reference_cells(models: str | Sequence[str], targets: str | Sequence[str], routes: str | Sequence[str],
                         run: RunSettings = RunSettings(), tolerance: Tolerance = Tolerance(), *,
                         seeds: Sequence[int] = (0,), export: dict | None = None,
                         training: TrainingPlan = TrainingPlan()) -> ReferencePlan:
    """The cells that verify `models` (names, or all) converted to `targets` (names, or all) by each of
    `routes`: an inference cell per model, route, target and seed, and with `training.steps` a training cell per
    model, trainable target and seed. `run`: batch (default 8), threads, device (where the targets run; the
    reference runs on the CPU), max_memory, results_file (where the caller will write the results, checked
    writable before any work); `export`: export options."""
    from rosetta.convert.targets import parse_routes, parse_target_list
    from rosetta.models import parse_model_list
    from rosetta.verify.cells import plan_cells
    from rosetta.output import check_writable_file
    from rosetta.models.inputs import check_memory

    batch, threads, device = run.batch or 8, run.threads, run.device
    train_steps, train_batch = training.steps, training.batch
    specs = parse_model_list(models)
    chosen = {route: parse_target_list(targets, route) for route in parse_routes(routes)}
    for spec in specs:
        check_memory(spec.inputs, spec.outputs, max(batch, train_batch), run.max_memory, float64=True)
    check_writable_file(run.results_file)
    policy = policy_from_options(tolerance.atol, tolerance.rtol, tolerance.multiple)
    if policy.per_output:
        raise RosettaError("per-output tolerances (atol=OUTPUT:VALUE) are for model files; use atol=VALUE")
    export_items = tuple(sorted((export or {}).items()))
    cells = [cell for route, route_targets in chosen.items()
             for cell in plan_cells([s.name for s in specs], [t.name for t in route_targets], route=route,
                                    seeds=tuple(seeds), batch=batch, tolerance=policy, export=export_items,
                                    threads=threads, device=device)]
    if train_steps:
        cells += plan_training_cells(specs, [t for route_targets in chosen.values() for t in route_targets], run,
                                     tolerance, seeds=seeds, training=training, export=export_items)
    return ReferencePlan(cells, policy)


def plan_training_cells(specs: list, targets: list, run: RunSettings = RunSettings(),
                        tolerance: Tolerance = Tolerance(), *, seeds: Sequence[int] = (0,),
                        training: TrainingPlan = TrainingPlan(steps=1), export: tuple = ()) -> list:
    """Training cells (`training.steps` optimiser steps) for the trainable targets among `targets`; a usage
    error if there are none. `specs`: ModelSpecs; `targets`: convert.targets.Target; `export`: sorted export
    option items; `run`: threads and device."""
    from rosetta.frameworks import trainable_frameworks
    from rosetta.verify.training import TRAINING_MULTIPLE, TrainCell

    trainable = [t for t in targets if t.trains and t.runner in trainable_frameworks()]
    if not trainable:
        raise RosettaError(f"train_steps=: {', '.join(f'{t.name} ({t.route})' for t in targets)} can only infer; "
                           f"trainable targets: {', '.join(trainable_frameworks())} (onnx route)")
    untrained = [s.name for s in specs if s.training is None]
    if untrained:
        raise RosettaError(f"train_steps=: model {', '.join(untrained)} has no training settings")
    policy = policy_from_options(tolerance.atol, tolerance.rtol, tolerance.multiple, TRAINING_MULTIPLE)
    return [TrainCell(model=s.name, target=t.name, route=t.route, seed=seed, batch=training.batch,
                      steps=training.steps, precision=training.precision, tolerance=policy, export=export,
                      threads=run.threads, device=run.device)
            for s in specs for t in trainable for seed in seeds]


def verify_reference_models(models: str | Sequence[str], targets: str | Sequence[str], routes: str | Sequence[str],
                            run: RunSettings = RunSettings(), tolerance: Tolerance = Tolerance(), *,
                            seeds: Sequence[int] = (0,), export: dict | None = None,
                            training: TrainingPlan = TrainingPlan(), executor=None,
                            locate: bool = False) -> VerifiedModels:
    """Plan the cells (`plan_reference_cells`) and run them, the artifacts converted into `run.work_dir` (None:
    a temporary folder); `locate`: then find where each failing inference cell diverges."""
    from rosetta.convert.store import ArtifactStore
    from rosetta.verify.cells import drop_changed_artifacts, run_cells
    from rosetta.verify.locate_cells import locate_failures

    plan = plan_reference_cells(models, targets, routes, run, tolerance, seeds=seeds, export=export,
                                training=training)
    work_dir, progress = run.work_dir, run.progress
    with scratch_folder("rosetta-") as scratch:
        store = ArtifactStore(work_dir or Path(scratch))
        if work_dir is not None:
            drop_changed_artifacts(plan.cells, store)
        results = run_cells(plan.cells, store, progress=progress, executor=executor)
        if locate:
            locate_failures(plan.cells, results, store, Path(scratch) / "locate", executor, progress)
    return VerifiedModels(results, plan.policy)


def convert_reference(names: str, targets: Sequence[str], route: str, output: Path, run: RunSettings = RunSettings(),
                      *, export: dict | None = None, force: bool = False) -> dict:
    """A reference model converted along `route`'s chain to its one target (convert.store.convert_reference_model)
    into `output`: its manifest as JSON, written to `run.results_file` too, which is checked writable before any
    work (a reference model's size is known: max_memory bounds nothing)."""
    from dataclasses import asdict

    from rosetta.atomic import atomic_write_json
    from rosetta.convert.store import convert_reference_model
    from rosetta.output import check_writable_file

    check_writable_file(run.results_file)
    manifest = asdict(convert_reference_model(names, ",".join(targets), route, output, seed=run.seed, export=export,
                                              force=force))
    if run.results_file:
        atomic_write_json(Path(run.results_file), manifest)
    return manifest
