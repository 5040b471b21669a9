"""Training equivalence: K optimiser steps from the same weights on the same batches in each framework.

A training cell converts (or reuses) a target's artifact, trains it K steps with the model's DLF optimiser
in the target's framework, and compares with the PyTorch reference trained on the same batches:
- the loss of every step ("loss"),
- every trainable value after K steps, as sorted lists ("weights (sorted)": layout-independent, see
  rosetta.train.base),
- every BatchNorm running mean and variance ("statistics (sorted)"; state that trains without gradients,
  only where the reference or the target has BatchNorm: resnet50), and
- the optimiser's state in PyTorch's convention ("optimizer state (sorted)": SGD's momentum buffers, Adam's
  first and second moments), where the optimiser keeps any.
- every Dropout's rate, as sorted lists ("dropout rates (sorted)"), exactly after rounding to float32 (ONNX
  carries a ratio as float32): a port that drops a Dropout, or changes its rate, trains differently.
Dropout is then off in every framework (its random masks cannot match); BatchNorm trains on batch statistics.
The rates are read from the model each trainer holds (rosetta.train), so what is compared is what would train.

Tolerance. float32: the reference's own float32-vs-float64 drift over the same K steps is the noise floor,
and a target passes within TRAINING_MULTIPLE x that floor. Training amplifies float32 noise, so the multiple
is wider than inference's: over 3 seeds (scripts/calibrate_tolerance.py --training) correct targets reach
17 (MXNet's float32 loss is a few ulps off PyTorch's from step 0), and once 1,540 (cnn -> keras, seed 1:
one float32 decision flipped, while the same cell in float64 agrees to 1e-16); optimiser faults start at
603. One float32 decision must not make a FAIL: a float32 FAIL is re-checked in float64 (recheck_in_float64),
which separates the two; the row is PASS with a note giving both figures when float64 agrees, FAIL with both
when it does not.
float64: converted models agree with PyTorch to float64 rounding (~1e-15; the trainers keep every optimiser
constant in float64, see rosetta.train), so FLOAT64_RTOL of the largest reference value is far below float32
noise (~1e-7 relative) and anything a conversion or an optimiser mapping gets wrong.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from importlib.metadata import version

import numpy as np

from rosetta.convert.store import ArtifactStore
from rosetta.convert.targets import get_target
from rosetta.manifest import code_digest
from rosetta.models import get_model
from rosetta.registry import Registry
from rosetta.train.base import REFERENCE, run_training
from rosetta.train.optim import training_batches, training_options
from rosetta.verify.cells import VerifyCell
from rosetta.verify.compare import compare_output
from rosetta.verify.results import FAIL, PASS, OutputComparison, VerifyResult, failed_at
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
    model_changes: tuple = ()  # (key, value) pairs applied to the target's model only (rosetta.train.torch)
    recheck: bool = True  # a float32 FAIL is re-checked in float64 (see the module docstring)

    @property
    def label(self) -> str:
        return f"{self.model} -> {self.target} ({self.steps} training steps)"

    def run(self, store: ArtifactStore, caches: dict) -> VerifyResult:
        """Run the cell; the trained references are shared through `caches` (see VerifyCell.run)."""
        return run_train_cell(self, store, caches.setdefault("trained", {}))


STATE_ROWS = (("weights (sorted)", "parameters", "trainable values"),
              ("statistics (sorted)", "statistics", "BatchNorm statistics"),
              ("optimizer state (sorted)", "optimizer_state", "optimizer state values"))  # row, trainer key, unit


@dataclass
class TrainedReference:
    """The reference trained at float32 and float64: losses, and every sorted state (STATE_ROWS) by trainer key."""

    losses32: np.ndarray
    losses64: np.ndarray
    state32: dict
    state64: dict
    dropout_rates: list = field(default_factory=list)

    @property
    def weights64(self) -> np.ndarray:
        return self.state64["parameters"]


def trained_reference(cell: TrainCell, cache: dict | None = None,
                     store: ArtifactStore | None = None) -> TrainedReference:
    """The reference trained on the cell's batches at both precisions: kept in `cache` for this process, and
    in `store` for every process of a run that shares its folder (test processes, a local executor's slots,
    Ray tasks), so that it is trained once per run, not once per process."""
    key = (cell.model, cell.seed, cell.batch, cell.steps)
    if cache is not None and key in cache:
        return cache[key]
    if store is None:
        arrays = _train_reference(cell)
    else:
        identity = {"batch": cell.batch, "steps": cell.steps, "torch": version("torch"),
                    "code": code_digest("models", "train", "verify")}
        arrays = store.arrays(f"{cell.model}-seed{cell.seed}", "trained-reference", identity,
                              lambda: _train_reference(cell))
    reference = TrainedReference(arrays["float32:losses"], arrays["float64:losses"],
                                 *({key: arrays[f"{precision}:{key}"] for _, key, _ in STATE_ROWS}
                                   for precision in ("float32", "float64")),
                                 [float(rate) for rate in arrays["dropout_rates"]])
    if cache is not None:
        cache[key] = reference
    return reference


def _train_reference(cell: TrainCell) -> dict:
    """The reference trained at float32 and float64: "PRECISION:losses" and "PRECISION:KEY" for each sorted
    state (STATE_ROWS), and the rates of its Dropout layers."""
    spec = get_model(cell.model)
    batches = training_batches(spec, cell.steps, cell.batch, cell.seed)
    arrays = {}
    for precision in ("float32", "float64"):
        run = run_training("torch", REFERENCE, batches, {**training_options(spec, precision, cell.threads),
                                                         "model": cell.model, "seed": cell.seed})
        arrays[f"{precision}:losses"] = np.asarray(run["losses"])
        arrays.update({f"{precision}:{key}": sorted_values(run[key], precision) for _, key, _ in STATE_ROWS})
        arrays["dropout_rates"] = np.asarray(run["dropout_rates"], dtype=np.float64)
    return arrays


def sorted_values(values: np.ndarray, precision: str) -> np.ndarray:
    """np.sort(values) as float64: values trained in float32 (checked: every one a float32) are sorted as
    float32, twice as fast (ResNet-50's 23.5 M weights: 1.2 s instead of 2.4 s), to the same result."""
    if precision == "float32":
        narrow = values.astype(np.float32)
        if np.array_equal(narrow, values):
            narrow.sort()
            return narrow.astype(np.float64)
    return np.sort(values)


def _policy(cell: TrainCell, reference64: np.ndarray) -> TolerancePolicy:
    if cell.precision == "float64" and cell.tolerance.calibrated:
        return TolerancePolicy(atol=FLOAT64_RTOL * float(np.max(np.abs(reference64))), rtol=0.0)
    return cell.tolerance


def fewest_normalised_values(spec, batch: int, seed: int = 0) -> int:
    """The fewest values any BatchNorm of the reference normalises each channel over in one step (batch x the
    spatial size of its input): the n of the n/(n-1) between an unbiased and a biased batch variance."""
    from rosetta.models.inputs import generate_inputs
    from rosetta.train.torch_statistics import fewest_normalised_values as counted

    return counted(spec.build(seed), list(generate_inputs(spec.inputs, batch, seed).values()))


def _biased_variance_policy(spec, cell: TrainCell, reference64: np.ndarray, framework: str) -> tuple:
    """The statistics row's tolerance where the target's BatchNorm updates its running variance with the
    biased batch variance (Keras, MXNet) and PyTorch with the unbiased one: each update then differs by at
    most 1/(n-1) of the batch variance (n the fewest values a BatchNorm normalises over), so the running
    statistics by at most that share of the largest of them; and the note that says so. A flipped momentum
    convention moves them by up to 0.8 of it: still a FAIL."""
    n = fewest_normalised_values(spec, cell.batch, cell.seed)
    share = 1.0 / (n - 1) if n > 1 else 1.0
    bound = share * float(np.max(np.abs(reference64))) if reference64.size else 0.0
    note = (f"note: statistics (sorted): {framework} updates running variances with the biased batch variance "
            f"(PyTorch: unbiased, n/(n-1) x): allowed {share:.3g} of the largest statistic (n = {n})")
    return TolerancePolicy(atol=bound + FLOAT64_RTOL * bound, rtol=0.0), note


DROPOUT_ROW = "dropout rates (sorted)"


def compare_dropout_rates(target: list[float], reference: list[float]) -> OutputComparison:
    """The target's Dropout rates against the reference's, as sorted lists, equal after rounding to float32 (the
    precision ONNX carries a ratio in): which layer has which rate is not compared, as with the weights."""
    value, expected = (np.sort(np.asarray(rates, dtype=np.float32)).astype(np.float64) for rates in (target, reference))
    shown = ", ".join(f"{r:g}" for r in expected) or "none"
    if value.size != expected.size:
        comparison = compare_output(DROPOUT_ROW, None, expected, expected, TolerancePolicy(atol=0.0, rtol=0.0))
        comparison.reason = (f"{DROPOUT_ROW}: the target has {value.size} Dropout layers, the reference "
                             f"{expected.size} ({shown}); it would train with a different regularisation")
        return comparison
    comparison = compare_output(DROPOUT_ROW, value, expected, expected, TolerancePolicy(atol=0.0, rtol=0.0))
    if not comparison.passed:
        comparison.reason = (f"{DROPOUT_ROW}: the target drops {', '.join(f'{r:g}' for r in value)}, "
                             f"the reference {shown}")
    return comparison


def run_train_cell(cell: TrainCell, store: ArtifactStore, references: dict | None = None) -> VerifyResult:
    """Train the cell's target and the reference on the same batches and compare; a failure is a CANNOT or ERROR row."""
    spec = get_model(cell.model)
    result = VerifyResult(model=cell.model, route=cell.route, target=cell.target, verdict=FAIL, reason="",
                          seed=cell.seed, batch=cell.batch, check="training",
                          training={"steps": cell.steps, "precision": cell.precision,
                                    "optimizer_changes": dict(cell.optimizer_changes),
                                    "model_changes": dict(cell.model_changes)})
    stage = "reference"
    try:
        if spec.training is None:
            raise ValueError(f"model {cell.model} has no training settings")
        target = get_target(cell.target, cell.route)
        reference = trained_reference(cell, references, store)
        stage = "conversion"
        start = time.perf_counter()
        folder = store.get(spec, cell.seed, target.chain, target.export_options(dict(cell.export)))
        result.seconds["convert"], result.artifact = time.perf_counter() - start, str(folder)
        stage = "training"
        start = time.perf_counter()
        options = training_options(spec, cell.precision, cell.threads, cell.device, changes=cell.optimizer_changes)
        if cell.model_changes:
            options["model_changes"] = dict(cell.model_changes)
        result.training["optimizer"] = options["optimizer"]
        trained = run_training(target.runner, folder, training_batches(spec, cell.steps, cell.batch, cell.seed), options)
        result.seconds["train"] = time.perf_counter() - start
        result.framework_version, result.device = str(trained["version"]), trained["settings"].get("device used", "")
    except Exception as error:  # noqa: BLE001 - a failing path is a CANNOT/ERROR row
        return failed_at(result, stage, error)
    high = cell.precision == "float64"
    rows = [(f"loss[{cell.steps} steps]", trained["losses"], reference.losses32, reference.losses64, "")]
    for name, key, unit in STATE_ROWS:
        value, ref64 = trained.get(key), reference.state64[key]
        if value is None or (value.size == 0 and ref64.size == 0):
            continue  # a framework that does not expose it, or state neither model has (no BatchNorm)
        value = sorted_values(value, cell.precision)
        count = (f"{name}: the target has {value.size} {unit}, the reference {ref64.size}"
                 if value.size != ref64.size else "")
        rows.append((name, None if count else value, reference.state32[key], ref64, count))
    rows = [(name, value, ref32 if ref32.size else np.zeros(1), ref64 if ref64.size else np.zeros(1), count)
            for name, value, ref32, ref64, count in rows]  # an empty reference (a count mismatch) has no noise floor
    comparisons, notes = [], []
    for name, value, ref32, ref64, count in rows:
        policy = _policy(cell, ref64)
        if name == "statistics (sorted)" and trained.get("biased_running_variance") and not count:
            policy, note = _biased_variance_policy(spec, cell, ref64, target.runner)
            notes.append(note)
        comparison = compare_output(name, value, ref64 if high else ref32, ref64, policy)
        if count:
            comparison.reason = count
        comparisons.append(comparison)
    rates = trained.get("dropout_rates")
    if rates is not None and (rates or reference.dropout_rates):
        comparisons.append(compare_dropout_rates(rates, reference.dropout_rates))
    result.outputs = comparisons
    reasons = [c.reason for c in comparisons if not c.passed]
    result.verdict, result.reason = (FAIL, "; ".join(reasons)) if reasons else (PASS, "; ".join(notes))
    result.tolerance = _policy(cell, reference.losses64).to_json()
    if result.verdict == FAIL and not high and cell.recheck:
        recheck_in_float64(cell, result, store, references)
    return result


def recheck_in_float64(cell: TrainCell, result: VerifyResult, store: ArtifactStore, references: dict | None) -> None:
    """A float32 FAIL re-run in float64, where float32 noise cannot flip a decision: PASS with a note when the
    float64 cell agrees, FAIL with both figures when it does not; the float32 outputs stay the row's figures."""
    again = run_train_cell(replace(cell, precision="float64"), store, references)
    failed = [c for c in result.outputs if not c.passed]
    worst = max(failed, key=lambda c: c.error_ratio)
    figure32 = (f"float32 reached {worst.error_ratio:.4g}x the noise floor on {worst.name} "
                f"(limit {cell.tolerance.multiple:g}x)" if cell.tolerance.calibrated else f"float32: {result.reason}")
    error64 = max((c.scaled_error for c in again.outputs), default=float("nan"))
    figure64 = f"float64 max error {error64:.3g} of the largest reference value (limit {FLOAT64_RTOL:g})"
    result.training["float64_recheck"] = {"verdict": again.verdict, "reason": again.reason, "max_error": error64}
    if again.verdict == PASS:
        result.verdict = PASS
        result.reason = f"float32 FAIL not confirmed in float64 (float32 noise): {figure32}; {figure64}"
    elif again.verdict == FAIL:
        result.reason = f"{result.reason}; float64 confirms it: {figure64}: {again.reason}"
    else:
        result.reason = f"{result.reason}; the float64 re-check is {again.verdict}: {again.reason}"


@dataclass(frozen=True)
class TrainingFault:
    """A seeded wrong port: the target trains with `changes` to the model's optimiser (an optimiser mapped
    wrongly) or `model_changes` to its model (rosetta.train.torch: a BatchNorm momentum convention flipped, a
    layer frozen, a converter's own trainable set), the reference without. Every (fault, target) pair must
    FAIL, in float32 and in float64."""

    name: str
    model: str
    description: str
    changes: tuple = ()
    targets: tuple = ("torch", "keras", "mxnet")
    model_changes: tuple = ()

    def cell(self, target: str, **fields) -> TrainCell:
        return TrainCell(model=self.model, target=target, optimizer_changes=self.changes,
                         model_changes=self.model_changes, **fields)


TRAINING_FAULTS: Registry[TrainingFault] = Registry("training fault", key=lambda fault: fault.name)
for _fault in (
    TrainingFault("sgd-nesterov", "cnn", "Nesterov momentum instead of DLF's plain momentum",
                  (("nesterov", True),)),
    TrainingFault("adam-epsilon-hat", "gru",
                  "Adam's eps added before the bias correction (Keras' and MXNet's own Adam), not after (PyTorch)",
                  (("epsilon", "hat"),), targets=("keras", "mxnet")),
    TrainingFault("batchnorm-momentum-flipped", "resnet50",
                  "BatchNorm momentum 1 - m in the target (torch 0.9 for 0.1, as MMdnn's PyTorch emitter writes; "
                  "Keras 0.1 for 0.9): the running statistics move nine times too fast or too slow",
                  model_changes=(("batchnorm_momentum", "flipped"),)),
    TrainingFault("frozen-layer", "cnn", "the target's first layer with weights not trainable",
                  model_changes=(("frozen_layer", "first"),)),
    TrainingFault("trainable-count", "gru",
                  "the converter's own trainable set: onnx2torch's embedding left a buffer, MXNet's graph "
                  "constants trained",
                  model_changes=(("trainable_set", "as converted"),), targets=("torch", "mxnet")),
    TrainingFault("dropout-keep-probability", "cnn",
                  "the first Dropout's keep probability taken for its rate (TF 1's keep_prob, Keras' rate): "
                  "it drops 0.75 where the reference drops 0.25",
                  model_changes=(("dropout_rate", "keep probability"),)),
):
    TRAINING_FAULTS.register(_fault)


def training_fault_cells(**fields) -> list[tuple[TrainingFault, TrainCell]]:
    return [(fault, fault.cell(target, **fields)) for fault in TRAINING_FAULTS for target in fault.targets]
