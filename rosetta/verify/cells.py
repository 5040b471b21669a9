"""The verification matrix: one self-contained cell per (model, route, target), run independently.

A cell carries everything it needs (plain, JSON-able fields) and returns a VerifyResult; it never raises for
a conversion or a framework that fails, it returns a FAIL row with the reason. That keeps cells ready to fan
out to other processes or machines (e.g. Ray tasks) with nothing shared but the artifact store's folder.
"""

from __future__ import annotations

import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rosetta.convert.store import ArtifactStore
from rosetta.convert.targets import get_target
from rosetta.errors import one_line
from rosetta.frameworks import load_runner
from rosetta.frameworks.torch import TorchModuleRunner
from rosetta.models import get_model
from rosetta.verify.compare import compare_outputs
from rosetta.verify.inputs import generate_inputs
from rosetta.verify.lint import artifact_problems
from rosetta.verify.results import FAIL, VerifyResult
from rosetta.verify.tolerance import TolerancePolicy

DEFAULT_BATCH = 8


@dataclass(frozen=True)
class VerifyCell:
    model: str
    target: str
    route: str = "onnx"
    seed: int = 0
    batch: int = DEFAULT_BATCH
    tolerance: TolerancePolicy = field(default_factory=TolerancePolicy)
    export: tuple = ()  # export options as sorted (key, value) pairs, hashable
    threads: int = 0


@dataclass
class Reference:
    """The reference model's inputs and outputs at float32 and float64 for one (model, seed, batch)."""

    feeds: dict[str, np.ndarray]
    float32: dict[str, np.ndarray]
    float64: dict[str, np.ndarray]


def reference_for(model: str, seed: int, batch: int, cache: dict | None = None) -> Reference:
    key = (model, seed, batch)
    if cache is not None and key in cache:
        return cache[key]
    spec = get_model(model)
    module = spec.build(seed)
    feeds = generate_inputs(spec.inputs, batch, seed)
    names = [o.name for o in spec.outputs]
    reference = Reference(feeds,
                          TorchModuleRunner(module, names, "float32").predict(feeds),
                          TorchModuleRunner(module, names, "float64").predict(feeds))
    if cache is not None:
        cache[key] = reference
    return reference


def run_cell(cell: VerifyCell, store: ArtifactStore, references: dict | None = None,
             artifact: Path | None = None) -> VerifyResult:
    """Convert (or reuse) the cell's artifact, run it, compare it. `artifact` overrides the converted one."""
    spec = get_model(cell.model)
    target = get_target(cell.target, cell.route)
    result = VerifyResult(model=cell.model, route=cell.route, target=cell.target, verdict=FAIL, reason="",
                          seed=cell.seed, batch=cell.batch, tolerance=cell.tolerance.to_json())
    stage = "reference"
    try:
        reference = reference_for(cell.model, cell.seed, cell.batch, references)
        stage = "conversion"
        start = time.perf_counter()
        folder = artifact or store.get(spec, cell.seed, target.chain, target.export_options(dict(cell.export)))
        result.seconds["convert"] = time.perf_counter() - start
        result.artifact = str(folder)
    except Exception as error:  # a failing path is a FAIL row, never a crash or a missing row
        result.reason = f"{stage} failed: {one_line(error)}"
        result.detail = traceback.format_exc(limit=-3)
        return result
    load = lambda: load_runner(target.runner, folder, threads=cell.threads, **dict(target.verify_options))  # noqa: E731
    return check_artifact(result, folder, load, reference.feeds, reference.float32, reference.float64, cell.tolerance)


def check_artifact(result: VerifyResult, folder: Path, load, feeds: dict, reference32: dict, reference64: dict,
                   policy: TolerancePolicy, by_position: bool = False) -> VerifyResult:
    """Load the artifact in `folder` (`load()` returns its runner), run it on `feeds` and compare it with the
    reference outputs, into `result`; a failing stage is a FAIL row with its reason. `by_position`: outputs
    named otherwise than the reference's are matched in order (a user's model through another converter)."""
    stage = "loading"
    try:
        start = time.perf_counter()
        problems = artifact_problems(folder)
        runner = load()
        result.seconds["load"] = time.perf_counter() - start
        stage = "inference"
        start = time.perf_counter()
        outputs = runner.predict(feeds)
        result.seconds["predict"] = time.perf_counter() - start
        result.framework_version = runner.running_version()
    except Exception as error:  # a failing artifact is a FAIL row, never a crash or a missing row
        result.reason = f"{stage} failed: {one_line(error)}"
        result.detail = traceback.format_exc(limit=-3)
        return result
    if by_position and set(outputs) != set(reference64) and len(outputs) == len(reference64):
        outputs = dict(zip(reference64, outputs.values()))
    result.outputs, result.verdict, result.reason = compare_outputs(outputs, reference32, reference64, policy)
    if problems:
        result.verdict = FAIL
        result.reason = "; ".join(problems + ([result.reason] if result.reason else []))
    return result


def plan_cells(models: list[str], targets: list[str], route: str = "onnx", seeds=(0,), **fields) -> list[VerifyCell]:
    return [VerifyCell(model=m, target=t, route=route, seed=s, **fields) for m in models for t in targets for s in seeds]


def run_cells(cells: list, store: ArtifactStore, progress: bool = True) -> list[VerifyResult]:
    """Run cells in order (inference VerifyCells and training TrainCells), sharing each kind's reference
    results between cells of the same model and seed."""
    from rosetta.report.progress import progress_bar
    from rosetta.verify.training import TrainCell, run_train_cell

    references: dict = {}
    trained: dict = {}
    results = []
    with progress_bar(len(cells), "verifying", enabled=progress) as advance:
        for cell in cells:
            if isinstance(cell, TrainCell):
                advance(f"{cell.model} -> {cell.target} ({cell.steps} training steps)")
                results.append(run_train_cell(cell, store, trained))
            else:
                advance(f"{cell.model} -> {cell.target}")
                results.append(run_cell(cell, store, references))
        advance(None)
    return results
