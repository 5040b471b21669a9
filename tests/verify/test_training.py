"""Training equivalence: every trainable target trains like the reference (K=5 steps, float32 and float64),
and every seeded optimiser mismatch FAILs."""

from __future__ import annotations

import pytest

from rosetta.frameworks import trainable_frameworks
from rosetta.models import list_models
from rosetta.verify.training import FLOAT64_RTOL, TRAINING_FAULTS, TrainCell, run_train_cell, training_fault_cells

CELLS = [(m, t, p) for m in list_models() for t in trainable_frameworks() for p in ("float64", "float32")]


@pytest.fixture(scope="module")
def trained_references() -> dict:
    return {}


@pytest.mark.parametrize("model,target,precision", CELLS, ids=[f"{m}->{t}-{p}" for m, t, p in CELLS])
def test_target_trains_like_the_reference(store, trained_references, model, target, precision):
    result = run_train_cell(TrainCell(model, target, precision=precision, steps=5, batch=2 if model == "resnet50" else 4),
                            store, trained_references)
    assert result.verdict == "PASS", result.reason
    assert [o.name for o in result.outputs] == ["loss[5 steps]", "weights (sorted)"]
    assert result.check == "training" and result.training["precision"] == precision
    if precision == "float64":  # float64 separates: far below float32 noise
        assert all(o.max_abs_error <= FLOAT64_RTOL * 10 for o in result.outputs)


FAULTS = [(fault, cell, precision) for fault, cell in training_fault_cells() for precision in ("float64", "float32")]


@pytest.mark.parametrize("fault,cell,precision", FAULTS, ids=[f"{f.name}->{c.target}-{p}" for f, c, p in FAULTS])
def test_optimiser_mismatch_fails(store, trained_references, fault, cell, precision):
    from dataclasses import replace

    result = run_train_cell(replace(cell, precision=precision), store, trained_references)
    assert result.verdict == "FAIL", result
    assert "weights (sorted)" in result.reason


def test_every_trainable_target_has_a_fault():
    assert {t for f in TRAINING_FAULTS for t in f.targets} == set(trainable_frameworks())


def test_inference_only_target_is_a_cannot_row(store, trained_references):
    result = run_train_cell(TrainCell("cnn", "onnxruntime", steps=1), store, trained_references)
    assert result.verdict == "CANNOT" and "inference-only" in result.reason
