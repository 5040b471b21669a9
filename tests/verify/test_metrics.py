from __future__ import annotations

import numpy as np
import pytest

from rosetta.verify.compare import compare_output, compare_outputs
from rosetta.verify.metrics import RELATIVE_FLOOR, error_stats
from rosetta.verify.tolerance import ABSOLUTE_FLOOR, FLOAT32_EPS, TolerancePolicy, noise_floor

rng = np.random.default_rng(0)
REF64 = rng.normal(size=(4, 10))
REF32 = REF64.astype(np.float32)


def test_error_stats_figures():
    target = REF64.copy()
    target[2, 7] += 0.5
    stats = error_stats(target, REF64)
    assert stats.max_abs_error == pytest.approx(0.5)
    assert stats.worst_index == [2, 7]
    assert stats.scaled_error == pytest.approx(0.5 / np.abs(REF64).max())
    assert stats.rms_error == pytest.approx(np.sqrt(0.25 / REF64.size))
    assert 0.9 < stats.cosine < 1.0


def test_relative_error_has_a_floor_for_near_zero_references():
    reference = np.array([1.0, 1e-12])
    target = np.array([1.0, 1e-6])
    assert error_stats(target, reference).max_rel_error == pytest.approx(1e-6 / RELATIVE_FLOOR, rel=1e-3)


def test_noise_floor_is_the_float32_drift_with_floors():
    rounding_only = np.abs(REF32.astype(np.float64) - REF64).max()  # half an ulp: below the one-ulp floor
    assert noise_floor(REF32, REF64) == pytest.approx(FLOAT32_EPS * np.abs(REF64).max())
    assert rounding_only < noise_floor(REF32, REF64)
    drifted = (REF64 + 1e-3 * rng.normal(size=REF64.shape)).astype(np.float32)
    assert noise_floor(drifted, REF64) == pytest.approx(np.abs(drifted.astype(np.float64) - REF64).max())
    zeros = np.zeros(5)
    assert noise_floor(zeros.astype(np.float32), zeros) == ABSOLUTE_FLOOR
    exact = np.full(3, 8.0)
    assert noise_floor(exact.astype(np.float32), exact) == pytest.approx(FLOAT32_EPS * 8.0)


def test_float32_copy_of_reference_passes():
    comparison = compare_output("y", REF32, REF32, REF64, TolerancePolicy())
    assert comparison.passed and comparison.within_tolerance == 1.0
    assert comparison.error_ratio <= 1.0 + 1e-9


def test_error_just_above_the_limit_fails_and_says_where():
    policy = TolerancePolicy(multiple=10)
    floor = noise_floor(REF32, REF64)
    target = REF64.copy()
    target[1, 3] += 11 * floor
    comparison = compare_output("y", target, REF32, REF64, policy)
    assert not comparison.passed
    assert "limit 10x" in comparison.reason and "[1, 3]" in comparison.reason
    target[1, 3] = REF64[1, 3] + 9 * floor
    assert compare_output("y", target, REF32, REF64, policy).passed


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nan_or_inf_always_fails_with_counts(bad):
    target = REF64.copy()
    target[0, 0] = bad
    comparison = compare_output("y", target, REF32, REF64, TolerancePolicy(atol=1e9))
    assert not comparison.passed
    assert ("1 NaN and 0 Inf" if np.isnan(bad) else "0 NaN and 1 Inf") in comparison.reason


def test_shape_mismatch_and_missing_output_fail():
    assert "shape (4, 9)" in compare_output("y", REF64[:, :9], REF32, REF64, TolerancePolicy()).reason
    outputs, verdict, reason = compare_outputs({}, {"y": REF32}, {"y": REF64}, TolerancePolicy())
    assert verdict == "FAIL" and "no output of this name" in reason


def test_user_atol_rtol_replace_the_calibrated_tolerance():
    target = REF64 + 1e-3
    assert not compare_output("y", target, REF32, REF64, TolerancePolicy()).passed
    assert compare_output("y", target, REF32, REF64, TolerancePolicy(atol=2e-3)).passed
    assert not compare_output("y", target, REF32, REF64, TolerancePolicy(atol=5e-4)).passed
    rtol_only = compare_output("y", REF64 * (1 + 1e-4), REF32, REF64, TolerancePolicy(rtol=2e-4))
    assert rtol_only.passed


def test_figures_are_reported_against_both_references():
    comparison = compare_output("y", REF32, REF32, REF64, TolerancePolicy())
    assert comparison.vs_float32["max_abs_error"] == 0.0
    assert comparison.max_abs_error > 0.0
