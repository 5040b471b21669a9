"""The reference models' verification matrix (`rosetta verify --model ...`): models x routes x targets x seeds
inference cells, plus training cells (--train-steps) for the trainable targets, planned from plain values and
refused before any work when they cannot run; `run_cells` (verify.cells) runs them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rosetta.errors import RosettaError
from rosetta.scratch import scratch_folder
from rosetta.verify.tolerance import TolerancePolicy, policy_from_options


@dataclass
class ReferencePlan:
    cells: list  # VerifyCell, then TrainCell
    policy: TolerancePolicy  # the inference cells' policy (the one the table and the JSON describe)


@dataclass
class VerifiedModels:
    results: list  # VerifyResult rows, in the order of the plan's cells
    policy: TolerancePolicy


def plan_reference_cells(models: str, targets: str, routes: str, *, seeds: Sequence[int] = (0,), batch: int = 8,
                         threads: int = 0, device: str = "cpu", atol: Sequence[tuple[str, float]] = (),
                         rtol: Sequence[tuple[str, float]] = (), tolerance_multiple: float | None = None,
                         export: dict | None = None, train_steps: int | None = None, train_batch: int = 4,
                         precision: str = "float32", max_memory: float | None = None,
                         results_file: Path | None = None) -> ReferencePlan:
    """The cells that verify `models` (comma-separated names, or all) converted to `targets` (comma-separated,
    or all) by each of `routes` (comma-separated): an inference cell per model, route, target and seed, and
    with `train_steps` a training cell per model, trainable target and seed. `device`: where the targets run
    (the reference runs on the CPU); `export`: export options; `results_file`: where the caller will write the
    results, checked writable before any work."""
    from rosetta.convert.targets import parse_routes, parse_target_list
    from rosetta.models import parse_model_list
    from rosetta.verify.cells import plan_cells
    from rosetta.output import check_writable_file
    from rosetta.models.inputs import check_memory

    specs = parse_model_list(models)
    chosen = {route: parse_target_list(targets, route) for route in parse_routes(routes)}
    for spec in specs:
        check_memory(spec.inputs, spec.outputs, max(batch, train_batch), max_memory, float64=True)
    check_writable_file(results_file)
    policy = policy_from_options(atol, rtol, tolerance_multiple)
    if policy.per_output:
        raise RosettaError("per-output tolerances (--atol OUTPUT:VALUE) are for model files; use --atol VALUE")
    export_items = tuple(sorted((export or {}).items()))
    cells = [cell for route, route_targets in chosen.items()
             for cell in plan_cells([s.name for s in specs], [t.name for t in route_targets], route=route,
                                    seeds=tuple(seeds), batch=batch, tolerance=policy, export=export_items,
                                    threads=threads, device=device)]
    if train_steps:
        cells += plan_training_cells(specs, [t for route_targets in chosen.values() for t in route_targets],
                                     steps=train_steps, seeds=seeds, batch=train_batch, precision=precision,
                                     atol=atol, rtol=rtol, tolerance_multiple=tolerance_multiple,
                                     export=export_items, threads=threads, device=device)
    return ReferencePlan(cells, policy)


def plan_training_cells(specs: list, targets: list, *, steps: int, seeds: Sequence[int] = (0,), batch: int = 4,
                        precision: str = "float32", atol: Sequence[tuple[str, float]] = (),
                        rtol: Sequence[tuple[str, float]] = (), tolerance_multiple: float | None = None,
                        export: tuple = (), threads: int = 0, device: str = "cpu") -> list:
    """Training cells (`steps` optimiser steps) for the trainable targets among `targets`; a usage error if there
    are none. `specs`: ModelSpecs; `targets`: convert.targets.Target; `export`: sorted export option items."""
    from rosetta.frameworks import trainable_frameworks
    from rosetta.verify.training import TRAINING_MULTIPLE, TrainCell

    trainable = [t for t in targets if t.trains and t.runner in trainable_frameworks()]
    if not trainable:
        raise RosettaError(f"--train-steps: {', '.join(f'{t.name} ({t.route})' for t in targets)} can only infer; "
                           f"trainable targets: {', '.join(trainable_frameworks())} (onnx route)")
    untrained = [s.name for s in specs if s.training is None]
    if untrained:
        raise RosettaError(f"--train-steps: model {', '.join(untrained)} has no training settings")
    policy = policy_from_options(atol, rtol, tolerance_multiple, TRAINING_MULTIPLE)
    return [TrainCell(model=s.name, target=t.name, route=t.route, seed=seed, batch=batch,
                      steps=steps, precision=precision, tolerance=policy, export=export,
                      threads=threads, device=device)
            for s in specs for t in trainable for seed in seeds]


def verify_reference_models(models: str, targets: str, routes: str, *, work_dir: Path | None = None,
                            progress: bool = False, executor=None, locate: bool = False, **options) -> VerifiedModels:
    """Plan the cells (`plan_reference_cells` takes `options`) and run them, the artifacts converted into
    `work_dir` (None: a temporary folder); `locate`: then find where each failing inference cell diverges."""
    from rosetta.convert.store import ArtifactStore
    from rosetta.verify.cells import drop_changed_artifacts, run_cells
    from rosetta.verify.locate_cells import locate_failures

    plan = plan_reference_cells(models, targets, routes, **options)
    with scratch_folder("rosetta-") as scratch:
        store = ArtifactStore(work_dir or Path(scratch))
        if work_dir is not None:
            drop_changed_artifacts(plan.cells, store)
        results = run_cells(plan.cells, store, progress=progress, executor=executor)
        if locate:
            locate_failures(plan.cells, results, store, Path(scratch) / "locate", executor, progress)
    return VerifiedModels(results, plan.policy)
