"""A verdict must be able to say no: every registered wrong model, carried through every target it applies to
(each target gets at least one), FAILs, for the reason it was built with.

`make test` runs a fixed subset (tests/shared.py fixed_subset) that still holds every fault and every route's every
target: ResNet-50's fault only into ONNX Runtime by the ONNX route, and on onnx2tf's targets (a conversion of
tens of seconds each) the first registered fault of each model; `make test-all` runs every pair."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rosetta.convert.targets import get_target, list_routes, list_targets
from rosetta.verify.cells import VerifyCell, run_cell
from rosetta.verify.faults import fault_cases, get_fault
from rosetta.verify.tolerance import TolerancePolicy
from tests.shared import fixed_subset

CASES = [(fault, route, target) for route in list_routes() for fault, target in fault_cases(route)]
ONNX2TF = ("tensorflow", "tensorflow-roundtrip")
FIRST_ON_ONNX2TF = {(f.model, r, t): f.name for f, r, t in reversed(CASES) if t in ONNX2TF}


def in_subset(fault, route: str, target: str) -> bool:
    if fault.model == "resnet50":
        return (route, target) == ("onnx", "onnxruntime")
    return target not in ONNX2TF or FIRST_ON_ONNX2TF[fault.model, route, target] == fault.name

EXPECTED_REASON = {"cnn-dropout-active": "exported in training mode"}  # the others: "x the noise floor"


def _run(store, references, fault, target, policy=None, route="onnx"):
    cell = VerifyCell(fault.model, target, route, seed=0)
    cell = replace(cell, tolerance=policy) if policy else cell
    return run_cell(cell, store, references, fault.build(store, 0, get_target(target, route), {}))


@pytest.mark.parametrize("fault,route,target", fixed_subset(
    CASES, in_subset, lambda f, r, t: f"{f.name}->{r}:{t}",
    every={"fault": lambda f, r, t: f.name, "route and target": lambda f, r, t: f"{r}:{t}"}))
def test_wrong_model_fails_in_every_target(store, references, fault, route, target):
    result = _run(store, references, fault, target, route=route)
    assert result.verdict == "FAIL", result
    assert EXPECTED_REASON.get(fault.name, "x the noise floor") in result.reason


@pytest.mark.parametrize("route", list_routes())
def test_every_route_and_target_has_at_least_one_fault(route):
    covered = {target for _, r, target in CASES if r == route}
    assert covered == set(list_targets(route))


def test_dropout_fault_also_fails_on_numbers_alone(store, references):
    """The static check does not catch it alone: ORT runs the graph as written and dropout changes outputs."""
    result = _run(store, references, get_fault("cnn-dropout-active"), "onnxruntime")
    assert any(not o.passed and "noise floor" in o.reason for o in result.outputs)


def test_perturbed_weight_passes_a_loose_user_tolerance(store, references):
    """The perturbation is small: it takes the calibrated tolerance to catch it (a loose atol does not)."""
    result = _run(store, references, get_fault("resnet50-weight-perturbed"), "onnxruntime", TolerancePolicy(atol=1e-3))
    assert result.verdict == "PASS"


@pytest.mark.parametrize("target", ["keras", "torch"])
def test_rewriting_an_artifact_without_changes_still_passes(store, references, target):
    """Control for the artifact-level faults: the weight rewrite itself is lossless, so their FAIL is the edit's."""
    from rosetta.frameworks.keras import edit_keras_weights
    from rosetta.frameworks.torch import edit_state_dict
    from rosetta.models import get_model

    rewrite = {"keras": lambda path: edit_keras_weights(path, lambda name, array: array),
               "torch": lambda path: edit_state_dict(path, lambda name, tensor: tensor.clone())}[target]
    good = store.get(get_model("gru"), 0, get_target(target).chain, get_target(target).export_options())
    copy = store.derived(good, "rewritten-unchanged", rewrite)
    assert run_cell(VerifyCell("gru", target, seed=0), store, references, copy).verdict == "PASS"
