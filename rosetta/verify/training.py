"""Training equivalence: K optimiser steps from the same weights on the same batches in each framework.

A training cell converts (or reuses) a target's artifact, trains it K steps with the model's DLF optimiser
in the target's framework, and compares with the PyTorch reference trained on the same batches:
- the loss of every step ("loss"), and
- every trainable value after K steps, as sorted lists ("weights (sorted)": layout-independent, see
  rosetta.train.base).
Dropout is off in every framework (its random masks cannot match); BatchNorm trains on batch statistics.

Tolerance. float32: the reference's own float32-vs-float64 drift over the same K steps is the noise floor,
and a target passes within TRAINING_MULTIPLE x that floor. Training amplifies float32 noise, so the multiple
is wider than inference's: over 3 seeds (scripts/calibrate_tolerance.py --training) correct targets reach
17 (MXNet's float32 loss is a few ulps off PyTorch's from step 0), and once 1,540 (cnn -> keras, seed 1:
one float32 decision flipped, while the same cell in float64 agrees to 1e-16); optimiser faults start at
603. A float32 FAIL is therefore worth re-running with --precision float64, which separates the two.
float64: converted
models agree with PyTorch to float64 rounding (~1e-15; the trainers keep every optimiser constant in
float64, see rosetta.train), so FLOAT64_RTOL of the largest reference value is far below float32 noise
(~1e-7 relative) and anything a conversion or an optimiser mapping gets wrong.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from rosetta.convert.store import ArtifactStore
from rosetta.convert.targets import get_target
from rosetta.models import get_model
from rosetta.registry import Registry
from rosetta.train.base import REFERENCE, run_training
from rosetta.train.optim import training_batches, training_options
from rosetta.verify.cells import VerifyCell
from rosetta.verify.compare import compare_output
from rosetta.verify.results import FAIL, PASS, VerifyResult, failed_at
from rosetta.verify.tolerance import TolerancePolicy

DEFAULT_STEPS = 5
DEFAULT_TRAIN_BATCH = 4
FLOAT64_RTOL = 1e-10  # of the largest reference value, for float64 training checks
TRAINING_MULTIPLE = 100.0  # float32: x the reference's float32-vs-float64 drift; see the module docstring


@dataclass(frozen=True)
class TrainCell(VerifyCell):
    """A verify cell that trains: its own batch and tolerance defaults, K steps at a precision."""

    batch: int = DEFAULT_TRAIN_BATCH
    tolerance: TolerancePolicy = field(default_factory=lambda: TolerancePolicy(multiple=TRAINING_MULTIPLE))
    steps: int = DEFAULT_STEPS
    precision: str = "float32"
    optimizer_changes: tuple = ()  # (key, value) pairs applied to the target's optimiser only: seeded mismatches

    @property
    def label(self) -> str:
        return f"{self.model} -> {self.target} ({self.steps} training steps)"

    def run(self, store: ArtifactStore, caches: dict) -> VerifyResult:
        """Run the cell; the trained references are shared through `caches` (see VerifyCell.run)."""
        return run_train_cell(self, store, caches.setdefault("trained", {}))


@dataclass
class TrainedReference:
    """The reference trained at float32 and float64: losses and sorted parameters."""

    losses32: np.ndarray
    losses64: np.ndarray
    weights32: np.ndarray
    weights64: np.ndarray


def trained_reference(cell: TrainCell, cache: dict | None = None) -> TrainedReference:
    key = (cell.model, cell.seed, cell.batch, cell.steps)
    if cache is not None and key in cache:
        return cache[key]
    spec = get_model(cell.model)
    batches = training_batches(spec, cell.steps, cell.batch, cell.seed)
    runs = {precision: run_training("torch", REFERENCE, batches, {**training_options(spec, precision, cell.threads),
                                                                   "model": cell.model, "seed": cell.seed})
            for precision in ("float32", "float64")}
    reference = TrainedReference(runs["float32"]["losses"], runs["float64"]["losses"],
                                 np.sort(runs["float32"]["parameters"]), np.sort(runs["float64"]["parameters"]))
    if cache is not None:
        cache[key] = reference
    return reference


def _policy(cell: TrainCell, reference64: np.ndarray) -> TolerancePolicy:
    if cell.precision == "float64" and cell.tolerance.calibrated:
        return TolerancePolicy(atol=FLOAT64_RTOL * float(np.max(np.abs(reference64))), rtol=0.0)
    return cell.tolerance


def run_train_cell(cell: TrainCell, store: ArtifactStore, references: dict | None = None) -> VerifyResult:
    """Train the cell's target and the reference on the same batches and compare; a failure is a CANNOT or ERROR row."""
    spec = get_model(cell.model)
    result = VerifyResult(model=cell.model, route=cell.route, target=cell.target, verdict=FAIL, reason="",
                          seed=cell.seed, batch=cell.batch, check="training",
                          training={"steps": cell.steps, "precision": cell.precision,
                                    "optimizer_changes": dict(cell.optimizer_changes)})
    stage = "reference"
    try:
        if spec.training is None:
            raise ValueError(f"model {cell.model} has no training settings")
        target = get_target(cell.target, cell.route)
        reference = trained_reference(cell, references)
        stage = "conversion"
        start = time.perf_counter()
        folder = store.get(spec, cell.seed, target.chain, target.export_options(dict(cell.export)))
        result.seconds["convert"], result.artifact = time.perf_counter() - start, str(folder)
        stage = "training"
        start = time.perf_counter()
        options = training_options(spec, cell.precision, cell.threads, changes=cell.optimizer_changes)
        result.training["optimizer"] = options["optimizer"]
        trained = run_training(target.runner, folder, training_batches(spec, cell.steps, cell.batch, cell.seed), options)
        result.seconds["train"] = time.perf_counter() - start
        result.framework_version = str(trained["version"])
    except Exception as error:  # noqa: BLE001 - a failing path is a CANNOT/ERROR row
        return failed_at(result, stage, error)
    weights = np.sort(trained["parameters"])
    if weights.size != reference.weights64.size:
        weights = None  # compare_output reports the missing match
    high = cell.precision == "float64"
    comparisons = []
    for name, value, ref32, ref64 in (
            (f"loss[{cell.steps} steps]", trained["losses"], reference.losses32, reference.losses64),
            ("weights (sorted)", weights, reference.weights32, reference.weights64)):
        comparison = compare_output(name, value, ref64 if high else ref32, ref64, _policy(cell, ref64))
        if value is None:
            comparison.reason = (f"{name}: {trained['parameters'].size} trainable values, "
                                 f"the reference trains {ref64.size}")
        comparisons.append(comparison)
    result.outputs = comparisons
    reasons = [c.reason for c in comparisons if not c.passed]
    if reasons and not high:
        reasons.append("float32 training amplifies rounding: re-run with --precision float64 to tell a "
                       "conversion bug from float32 noise")
    result.verdict, result.reason = (FAIL, "; ".join(reasons)) if reasons else (PASS, "")
    result.tolerance = _policy(cell, reference.losses64).to_json()
    return result


@dataclass(frozen=True)
class TrainingFault:
    """A seeded optimiser mismatch: the target trains with `changes` to the model's optimiser, the reference
    without, as a port that maps the optimiser wrongly would. Every (fault, target) pair must FAIL."""

    name: str
    model: str
    description: str
    changes: tuple
    targets: tuple = ("torch", "keras", "mxnet")

    def cell(self, target: str, **fields) -> TrainCell:
        return TrainCell(model=self.model, target=target, optimizer_changes=self.changes, **fields)


TRAINING_FAULTS: Registry[TrainingFault] = Registry("training fault", key=lambda fault: fault.name)
for _fault in (
    TrainingFault("sgd-nesterov", "cnn", "Nesterov momentum instead of DLF's plain momentum",
                  (("nesterov", True),)),
    TrainingFault("adam-epsilon-hat", "gru",
                  "Adam's eps added before the bias correction (Keras' and MXNet's own Adam), not after (PyTorch)",
                  (("epsilon", "hat"),), targets=("keras", "mxnet")),
):
    TRAINING_FAULTS.register(_fault)


def training_fault_cells(**fields) -> list[tuple[TrainingFault, TrainCell]]:
    return [(fault, fault.cell(target, **fields)) for fault in TRAINING_FAULTS for target in fault.targets]
