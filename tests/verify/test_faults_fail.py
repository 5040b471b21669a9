"""A verdict must be able to say no: every registered wrong artifact FAILs, for the reason it was built with."""

from __future__ import annotations

import pytest

from rosetta.verify.cells import VerifyCell, run_cell
from rosetta.verify.faults import get_fault, list_faults

EXPECTED_REASON = {
    "cnn-dropout-active": "exported in training mode",
    "resnet50-weight-perturbed": "x the noise floor",
    "cnn-nhwc-flatten": "x the noise floor",
}


@pytest.mark.parametrize("fault", list_faults(), ids=lambda f: f.name)
def test_wrong_artifact_fails(store, references, fault):
    artifact = fault.build(store, 0, {})
    result = run_cell(VerifyCell(fault.model, fault.target, fault.route, seed=0), store, references, artifact)
    assert result.verdict == "FAIL"
    assert EXPECTED_REASON.get(fault.name, "") in result.reason


def test_every_fault_has_an_expected_reason():
    assert {f.name for f in list_faults()} <= set(EXPECTED_REASON)


def test_dropout_fault_also_fails_on_numbers_alone(store, references):
    """The static check is not what catches it alone: ORT runs the graph as written and dropout changes outputs."""
    fault = get_fault("cnn-dropout-active")
    result = run_cell(VerifyCell("cnn", "onnxruntime", seed=0), store, references, fault.build(store, 0, {}))
    assert any(not o.passed and "noise floor" in o.reason for o in result.outputs)


def test_perturbed_weight_passes_a_loose_user_tolerance(store, references):
    """The perturbation is small: it takes the calibrated tolerance to catch it (a loose atol does not)."""
    fault = get_fault("resnet50-weight-perturbed")
    cell = VerifyCell("resnet50", "onnxruntime", seed=0)
    from dataclasses import replace

    from rosetta.verify.tolerance import TolerancePolicy

    loose = replace(cell, tolerance=TolerancePolicy(atol=1e-3))
    assert run_cell(loose, store, references, fault.build(store, 0, {})).verdict == "PASS"
