"""Verification results: data first (dataclasses -> JSON); tables and plots are made from these."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

PASS, FAIL = "PASS", "FAIL"


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


@dataclass
class VerifyResult:
    model: str
    route: str
    target: str
    verdict: str  # PASS | FAIL
    reason: str
    outputs: list[OutputComparison] = field(default_factory=list)
    seed: int = 0
    batch: int = 0
    tolerance: dict = field(default_factory=dict)
    framework_version: str = ""
    artifact: str = ""
    seconds: dict = field(default_factory=dict)  # wall time of convert / load / predict, for information
    detail: str = ""  # the end of the traceback when a stage failed (shown with -v)
    check: str = "inference"  # or "training" (verify.training: losses and weights after K optimiser steps)
    training: dict = field(default_factory=dict)  # steps, precision, optimizer of a training check

    @property
    def passed(self) -> bool:
        return self.verdict == PASS

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "VerifyResult":
        return cls(**{**data, "outputs": [OutputComparison(**output) for output in data.get("outputs", [])]})


def write_results_json(results: list[VerifyResult], path: Path, extra: dict | None = None) -> None:
    from rosetta import __version__

    payload = {"rosetta_version": __version__, **(extra or {}), "results": [r.to_json() for r in results]}
    Path(path).write_text(json.dumps(payload, indent=2, allow_nan=True) + "\n")
