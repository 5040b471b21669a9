"""Verification of artifacts against a user's reference model (or outputs saved from one): the
`rosetta verify A B [C ...]` comparison and the check after `rosetta convert PATH`.

Each ArtifactCell is self-contained (plain fields): it loads one artifact in its framework (a worker process
for TensorFlow, Keras and MXNet, so a crash or a hang is that row's ERROR), runs it on the shared inputs and
compares it with the reference outputs. The reference runs in float64 too where rosetta can cast it (PyTorch
models): then the calibrated noise-floor tolerance applies; otherwise FLOAT32_ONLY_MULTIPLE ulps at scale.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

import numpy as np

from rosetta.convert.targets import load_verify_runner
from rosetta.convert.user import Converted
from rosetta.errors import RosettaError, one_line
from rosetta.verify.results import VerifyResult, failure_verdict
from rosetta.verify.tolerance import TolerancePolicy

# One artifact to verify: a user's model converted to a target (rosetta.convert.user), or a folder given on
# the command line. Plain fields: model (the row's model column), target (the row's name), folder (empty when
# `failure` says why there is none), failure, route, threads, trust_code.
ArtifactCell = Converted


@dataclass
class ReferenceOutputs:
    """What every artifact is compared with: the inputs and the reference's outputs (float64 if it has them)."""

    feeds: dict[str, np.ndarray]
    float32: dict[str, np.ndarray]
    float64: dict[str, np.ndarray] | None = None
    # float32 outputs on a second batch of inputs, for outputs whose batch cannot show whether they depend on
    # the input (a 0-d output, one without a batch axis, a batch of 1: compare.uninformative)
    second: dict[str, np.ndarray] | None = None
    # which reference the rows were compared with, and why (ReferenceCheck JSON where the float64 run was
    # checked; "float64_doubt": why a float64 run was not used)
    about: dict = field(default_factory=dict)

    def policy(self, policy: TolerancePolicy, multiple_given: bool) -> TolerancePolicy:
        """Without float64 outputs the floor is an ulp at scale, and so is the default multiple. A reference that
        is not deterministic (two float32 runs differ) is compared the same way: its float32-vs-float64 difference
        holds its own noise, which would inflate the floor; the noise itself is judged output by output
        (verify.compare, TolerancePolicy.run_to_run)."""
        from rosetta.verify.tolerance import FLOAT32_ONLY_MULTIPLE

        spread = tuple(self.spread().items())
        if self.float64 is not None and not spread:
            from rosetta.frameworks.reference_check import fully_checked

            return replace(policy, float64_checked=fully_checked(self.about.get("check")))
        multiple = policy.multiple if multiple_given else FLOAT32_ONLY_MULTIPLE
        doubt = self.about.get("float64_doubt", "") or (
            "the reference is not deterministic (" + ", ".join(f"{name}: runs differ by {value:.3g}" for name, value in spread)
            + "), so its float32-vs-float64 difference is not its noise floor" if spread else "")
        return TolerancePolicy(multiple, policy.atol, policy.rtol, policy.per_output, float64_reference=False,
                               float64_doubt=doubt, run_to_run=spread)

    def spread(self) -> dict[str, float]:
        """The outputs on which the reference is not deterministic, with their run-to-run difference: more than
        one float32 ulp at the output's scale (a difference under float32's resolution there, a reduction summed
        in another order, cannot inflate the floor by more than an ulp; it stays in `about` as measured)."""
        from rosetta.verify.tolerance import FLOAT32_EPS

        def scale(name: str) -> float:
            value = np.asarray(self.float32.get(name, 0.0))
            return float(np.max(np.abs(value))) if value.size and value.dtype.kind in "fc" else 0.0

        return {name: value for name, value in self.about.get("run_to_run", {}).items()
                if value > FLOAT32_EPS * scale(name)}

    def notes(self) -> list[str]:
        """What every row compared with this reference says of it: inputs it changes, runs that differ."""
        notes = []
        if self.about.get("changes_inputs"):
            notes.append(f"the reference changes its input{'s' if len(self.about['changes_inputs']) > 1 else ''} "
                         f"{', '.join(self.about['changes_inputs'])} in place (every run was given its own copy)")
        spread = self.spread()
        if spread:
            notes.append("the reference is not deterministic: two runs on the same inputs differ by "
                         + ", ".join(f"{value:.3g} ({name})" for name, value in spread.items()))
        elif "check" in self.about and self.about.get("float64_doubt"):  # a float64 run was made, not believed
            notes.append(self.about["float64_doubt"])
        return notes


def run_artifact_cell(cell: ArtifactCell, reference: ReferenceOutputs, policy: TolerancePolicy) -> VerifyResult:
    """Run one artifact on the reference's inputs and compare; a failure at any stage is a CANNOT or ERROR row."""
    from rosetta.frameworks import runner_for_format
    from rosetta.manifest import Manifest
    from rosetta.verify.cells import check_artifact

    result = VerifyResult(model=cell.model, route=cell.route, target=cell.target,
                          verdict=failure_verdict(cell.failed_stage, cell.crashed), reason=cell.failure,
                          batch=len(next(iter(reference.feeds.values()))) if reference.feeds else 0,
                          tolerance=policy.to_json(), artifact=cell.folder, reference=reference.about)
    if cell.failure:
        return result
    folder = Path(cell.folder)
    paired: list = []

    def load():
        runner = load_verify_runner(runner_for_format(Manifest.read(folder).format), folder, cell.threads,
                                    cell.trust_code, device=cell.device)
        if cell.pairing is None:  # rosetta's own conversion: its outputs in the reference's order
            return runner
        from rosetta.verify.pairing import PairedRunner, Pairing

        pairing = Pairing.from_json(cell.pairing)
        paired.append(PairedRunner(runner, pairing.inputs, reference.float32,
                                   {k: (v[0], tuple(v[1]) if v[1] else None) for k, v in cell.given_pairs.items()},
                                   cell.target, pairing.outputs if "outputs" in cell.pairing else None))
        return paired[0]

    reference64 = reference.float64 if reference.float64 is not None and policy.float64_reference else \
        reference.float32
    result = check_artifact(result, folder, load, reference.feeds, reference.float32, reference64, policy,
                            by_position=cell.pairing is None, second=reference.second, device=cell.device)
    if paired and paired[0].outputs:
        result.pairing = paired[0].pairing.to_json()
    notes = [f"note: {note}" for note in reference.notes() if note.split(":")[0] not in result.reason]  # not twice
    if cell.pairing and cell.pairing.get("unpaired"):
        extra = cell.pairing["unpaired"]
        notes.append(f"note: its output{'s' if len(extra) > 1 else ''} {', '.join(extra)} ha{'ve' if len(extra) > 1 else 's'} "
                     "no counterpart in the reference: not compared")
    result.reason = "; ".join(filter(None, [result.reason, *notes]))
    return result


def run_artifact_cells(cells: list[ArtifactCell], reference: ReferenceOutputs, policy: TolerancePolicy,
                       progress: bool = True, executor=None) -> list[VerifyResult]:
    """Each cell a task of `executor` (default local); the reference's arrays travel with each task."""
    from dataclasses import asdict

    from rosetta.execution import Job
    from rosetta.execution.executors import Task, get_executor
    from rosetta.progress import progress_bar

    executor = executor or get_executor("local")
    shared = {"feeds": reference.feeds, "float32": reference.float32, "float64": reference.float64,
              "second": reference.second, "about": reference.about}
    tasks = [Task(Job("rosetta.verify.artifacts:artifact_cell_job", {"cell": asdict(cell), "reference": shared,
                                                                     "policy": policy.to_json()},
                      what=cell.target), cell.target) for cell in cells]
    with progress_bar(len(tasks), "verifying", enabled=progress) as advance:
        outcomes = executor.run(tasks, advance)
        advance(None)
    results = []
    for cell, outcome in zip(cells, outcomes):
        if outcome.error:  # its process died under it (a Ray worker, say)
            outcome.result = run_artifact_cell(ArtifactCell(**{**asdict(cell), "folder": "",
                                                               "failure": f"task failed: {outcome.error}"}),
                                               reference, policy).to_json()
        results.append(VerifyResult.from_json(outcome.result))
    return results


def artifact_cell_job(argument: dict) -> dict:
    """Task: run_artifact_cell in the process the executor chose; its VerifyResult as JSON."""
    return run_artifact_cell(ArtifactCell(**argument["cell"]), ReferenceOutputs(**argument["reference"]),
                             TolerancePolicy.from_json(argument["policy"])).to_json()


def reference_outputs(model, feeds: dict[str, np.ndarray], threads: int = 0) -> ReferenceOutputs:
    """Run the reference model (a sources.model.UserModel), checked before it is believed: twice in float32, each
    run on its own copy of the inputs (a model that changes them is said in `about`, "changes_inputs"), the two
    runs' difference measured ("run_to_run": a reference that is not deterministic would inflate its own noise
    floor, verify.compare), and once in float64 where it can. A float64 run is believed only where its
    framework's check of it against the float32 run holds (frameworks.reference_check); otherwise, or where it
    fails or times out, the float32-only rule applies and `about` says why."""
    from rosetta.errors import WorkerDied
    from rosetta.frameworks.base import copied, run_on_copies

    try:
        runner = model.make_runner("float32", threads)
        float32, changed = run_on_copies(runner.predict, feeds)
        again, _ = run_on_copies(runner.predict, feeds)
    except Exception as error:
        message = str(error) if isinstance(error, RosettaError) else one_line(error)
        kind = type(error) if isinstance(error, RosettaError) else RosettaError  # a hang stays WorkerTimedOut
        raise kind(f"the reference {model.label} cannot run: {message}") from None
    about = {"float32": f"{model.label} in float32", "run_to_run": run_to_run(float32, again)}
    if changed:
        about["changes_inputs"] = changed
    if not model.has_float64:
        return ReferenceOutputs(feeds, float32, None, about={**about, "float64_doubt": f"{model.format} models run "
                                                             "in float32 only"})
    try:
        float64, check = model.predict_float64(copied(feeds), threads)
    except WorkerDied as error:  # timed out or crashed: the float32-only rule, saying so
        return ReferenceOutputs(feeds, float32, None, about={**about, "float64_doubt": f"its float64 run failed: {error}"})
    except Exception as error:  # noqa: BLE001 - a layer without float64 (MoE's grouped matmul in torch, a Keras
        # layer that casts): the float32-only rule applies, saying why
        return ReferenceOutputs(feeds, float32, None, about={**about, "float64_doubt": one_line(error)})
    if check is not None:
        about["check"] = check
        if not check.get("trusted", True):
            return ReferenceOutputs(feeds, float32, None, about={**about, "float64_doubt": check["description"]})
    return ReferenceOutputs(feeds, float32, float64, about=about)


def floor_in_doubt(reference: ReferenceOutputs) -> bool:
    """Whether the float64 reference, believed piece by piece but not covering the whole model (a PyTorch
    forward's own code between its leaf modules), gives an output a noise floor above what float32 arithmetic
    explains (verify.tolerance.FLOOR_CEILING): the rows would be INCONCLUSIVE unless something else vouches for
    that run (corroborate_with_export)."""
    from rosetta.frameworks.reference_check import fully_checked
    from rosetta.verify.tolerance import FLOOR_CEILING

    check = reference.about.get("check")
    if reference.float64 is None or not check or not check.get("trusted") or fully_checked(check):
        return False
    return any(float(np.max(np.abs(np.asarray(reference.float32[name], np.float64) - value)))
               > FLOOR_CEILING * float(np.max(np.abs(value)))
               for name, value in reference.float64.items() if np.asarray(value).size)


# How many times the floor the export gives (its float32 run's distance from its float64 run, checked node by
# node) the PyTorch floor may be and still be float32's own. The export is not the module's exact function at
# float64 (torch.onnx folds BatchNorm into the convolutions' weights in float32: timm's Inception-v3's export in
# float64 is 0.27 of the floor from the module's float64 run), so the two float64 runs are not compared; the two
# floors are, each the same network's float32 rounding. A float64 run that computes another function (noise drawn
# in float64, a scale only float64 sees) makes a floor many times the export's. Within 4x, the tolerance is at most
# 4x wider than float32's own noise makes it, where the fixed ceiling allows 840 ulps at scale.
EXPORT_FLOOR_MULTIPLE = 4.0


def corroborate_with_export(reference: ReferenceOutputs, export: Callable[[], Path]) -> None:
    """Where floor_in_doubt: the model's ONNX export (`export()`, a folder of rosetta's own conversion) run in
    float64 by ONNX's reference evaluator, every node checked against ONNX Runtime's float32 value
    (frameworks.onnx_reference), and in float32 by ONNX Runtime on the same inputs. Where that check covers every
    node and believes each, and the PyTorch floor is within EXPORT_FLOOR_MULTIPLE of the export's on every
    output, the floor is float32's own: `about["check"]` says so, and no ceiling applies (verify.compare).
    Otherwise nothing changes, and `about["check"]["corroboration"]` says why."""
    from rosetta.frameworks import runner_for_format
    from rosetta.frameworks.onnx_reference import float64_outputs
    from rosetta.frameworks.reference_check import FLOAT32_EPS, fully_checked
    from rosetta.manifest import Manifest

    check = dict(reference.about["check"])

    def refused(why: str) -> None:
        reference.about["check"] = {**check, "corroboration": why}

    try:
        folder = export()
        outputs64, graph_check = float64_outputs(Manifest.read(folder).artifact_path(folder), reference.feeds)
        outputs32 = load_verify_runner(runner_for_format("onnx"), folder).predict(dict(reference.feeds))
    except Exception as error:  # noqa: BLE001 - no export, or the evaluator cannot run it: the ceiling stays
        return refused(f"its ONNX export could not be made or run: {one_line(error)}")
    if not fully_checked(graph_check):
        return refused("its ONNX export's float64 run was not checked whole: " + (
            graph_check.get("description", "") if not graph_check.get("trusted") else
            f"{graph_check.get('unchecked', 0)} of its nodes could not be checked"))
    worst = 0.0
    for name, value in reference.float64.items():
        wide, narrow = outputs64.get(name), outputs32.get(name)
        if wide is None or narrow is None or np.shape(wide) != np.shape(value) or np.shape(narrow) != np.shape(value):
            return refused(f"its ONNX export has no output {name} of its shape")
        if not np.size(value):
            continue
        floor = float(np.max(np.abs(np.asarray(reference.float32[name], np.float64) - value)))
        scale = float(np.max(np.abs(value)))
        own = max(float(np.max(np.abs(np.asarray(narrow, np.float64) - np.asarray(wide, np.float64)))),
                  FLOAT32_EPS * scale)
        if floor > EXPORT_FLOOR_MULTIPLE * own:
            return refused(f"on {name} its floor {floor:.3g} is {floor / own:.3g}x the one its ONNX export gives "
                           f"({own:.3g}, every node checked in float64; float32's own: under "
                           f"{EXPORT_FLOOR_MULTIPLE:g}x)")
        worst = max(worst, floor / own)
    said = (f"what no leaf module covers corroborated: its ONNX export, every node checked in float64 "
            f"({graph_check['nodes']} nodes), gives a floor of the same size ({worst:.2g}x at most)")
    reference.about["check"] = {**check, "uncovered": "", "corroboration": said,
                                "description": f"{check.get('description', '')}; {said}"}


def run_to_run(first: dict[str, np.ndarray], second: dict[str, np.ndarray]) -> dict[str, float]:
    """Each output's largest difference between two runs of one model on the same inputs (0.0: the same bits;
    inf where only one run gives a non-finite value or the shapes differ)."""
    spread = {}
    for name, value in first.items():
        a, b = np.asarray(value), np.asarray(second.get(name))
        if a.shape != b.shape:
            spread[name] = float("inf")
        elif a.dtype.kind not in "biufc":  # strings, objects: the same or not
            spread[name] = 0.0 if np.array_equal(a, b) else float("inf")
        elif np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"):
            spread[name] = 0.0
        else:
            wide_a, wide_b = a.astype(np.float64), b.astype(np.float64)
            finite = np.isfinite(wide_a) & np.isfinite(wide_b)
            same_rest = np.array_equal(wide_a[~finite], wide_b[~finite], equal_nan=True)
            spread[name] = float(np.max(np.abs(wide_a[finite] - wide_b[finite]), initial=0.0)) if same_rest \
                else float("inf")
    return spread
