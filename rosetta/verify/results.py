"""Verification results: data first (dataclasses -> JSON); tables and plots are made from these."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

# The verdicts, and what the exit status of `rosetta verify`/`convert` makes of them (see exit_status):
# PASS          the numbers were compared and agree within the tolerance
# FAIL          the numbers were compared and disagree (or the artifact is wrong on its face): a wrong conversion
# CANNOT        a converter refused the model or lacks one of its ops: nothing to compare, the reason says why
# ERROR         a crash, a hang, or a framework that failed to load or run the converted artifact
# INCONCLUSIVE  the numbers agree but could not have disagreed: the reference output is constant across the
#               batch, or all zeros (e.g. random weights that saturate), so the check proves nothing
PASS, FAIL, CANNOT, ERROR, INCONCLUSIVE = "PASS", "FAIL", "CANNOT", "ERROR", "INCONCLUSIVE"
VERDICTS = (PASS, FAIL, CANNOT, ERROR, INCONCLUSIVE)
EXIT_FOR_VERDICT = {FAIL: 1, ERROR: 3}  # any FAIL: 1; else any ERROR: 3; else 0 (--strict: any non-PASS is 1)


def exit_status(verdicts, strict: bool = False) -> int:
    """0 when nothing is wrong (PASS, and CANNOT/INCONCLUSIVE rows, which the table reports), 1 on any FAIL,
    3 on any ERROR without a FAIL; `strict`: 1 on anything but PASS (and "converted")."""
    verdicts = set(verdicts) - {"converted"}
    if FAIL in verdicts or (strict and verdicts - {PASS}):
        return EXIT_FOR_VERDICT[FAIL]
    return EXIT_FOR_VERDICT[ERROR] if ERROR in verdicts else 0


def failure_verdict(stage: str, crashed: bool) -> str:
    """The verdict of a cell whose `stage` failed: a converter that gives up is CANNOT; a fault (`crashed`: a
    worker that crashed or hung, the machine out of memory or disk), or an artifact that does not load or run,
    is ERROR."""
    return CANNOT if stage == "conversion" and not crashed else ERROR


def failed_at(result: "VerifyResult", stage: str, error: BaseException) -> "VerifyResult":
    """Fill the row of a cell whose `stage` raised `error` (inside an `except`): its verdict, its one-line
    reason, and for -v the worker's traceback (or this process's)."""
    import traceback

    from rosetta.errors import Unsupported, environment_cause, is_fault, one_line

    fault = is_fault(error)
    result.verdict = CANNOT if isinstance(error, Unsupported) and not fault else failure_verdict(stage, fault)
    result.reason = f"{stage} failed: {environment_cause(error) or one_line(error)}"
    result.detail = getattr(error, "detail", "") or traceback.format_exc(limit=-3)
    return result


@dataclass
class OutputComparison:
    """One output of one target against the reference. Primary figures are against the float64 reference;
    `vs_float32` has the same statistics against the float32 reference (the original model as users run it)."""

    name: str
    shape: list[int]
    passed: bool
    reason: str
    max_abs_error: float
    max_rel_error: float
    scaled_error: float
    rms_error: float
    cosine: float
    within_tolerance: float  # fraction of elements within the elementwise limit
    nan_count: int
    inf_count: int
    noise_floor: float  # the reference's own float32-vs-float64 error (see verify.tolerance)
    error_ratio: float  # max_abs_error / noise_floor
    worst_index: list[int] = field(default_factory=list)
    worst_target: float = 0.0
    worst_reference: float = 0.0
    vs_float32: dict = field(default_factory=dict)
    uninformative: str = ""  # why agreeing on this output proves nothing (constant across the batch, all zeros)
    noise_floor_ulps: float = 0.0  # the noise floor in float32 ulps at the reference output's scale
    reference_doubt: str = ""  # why the reference's float64 run is in doubt (verify.tolerance.FLOOR_CEILING)


@dataclass
class VerifyResult:
    model: str
    route: str
    target: str
    verdict: str  # one of VERDICTS
    reason: str
    outputs: list[OutputComparison] = field(default_factory=list)
    seed: int = 0
    batch: int = 0
    tolerance: dict = field(default_factory=dict)
    framework_version: str = ""
    device: str = ""  # where the target ran, read back from its framework (its weights, outputs or providers)
    artifact: str = ""
    seconds: dict = field(default_factory=dict)  # wall time of convert / load / predict, for information
    detail: str = ""  # the end of the traceback when a stage failed (shown with -v)
    check: str = "inference"  # or "training" (verify.training: losses and weights after K optimiser steps)
    training: dict = field(default_factory=dict)  # steps, precision, optimizer of a training check
    locate: dict = field(default_factory=dict)  # where a FAIL diverges (verify.locate.LocateReport), with --locate
    # the reference it was compared with: how the float64 run was checked (frameworks.reference_check), or why
    # it was not used ("float64_doubt")
    reference: dict = field(default_factory=dict)
    # how its inputs and outputs were paired with the reference's (verify.pairing), where it is not the reference's
    # own conversion: names, layout permutations, integer widths
    pairing: dict = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.verdict == PASS

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "VerifyResult":
        return cls(**{**data, "outputs": [OutputComparison(**output) for output in data.get("outputs", [])]})


def results_payload(results: list[VerifyResult], extra: dict | None = None) -> dict:
    """What --json writes (and rosetta.Report.to_json gives): the version, `extra`, every row."""
    from rosetta.version import __version__

    return {"rosetta_version": __version__, **(extra or {}), "results": [r.to_json() for r in results]}


def write_results_json(results: list[VerifyResult], path: Path, extra: dict | None = None) -> None:
    from rosetta.atomic import atomic_write_json

    atomic_write_json(path, results_payload(results, extra))
