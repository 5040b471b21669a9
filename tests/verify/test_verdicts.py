"""The five verdicts and the exit status they give: a converter that gives up is CANNOT (not a wrong
conversion), a crash is ERROR, a check that could not have failed is INCONCLUSIVE; and an error keeps the
line of the framework's message that names its cause."""

from __future__ import annotations

import numpy as np
import pytest

from rosetta.errors import WorkerDied, one_line
from rosetta.verify.compare import compare_outputs
from rosetta.verify.results import (CANNOT, ERROR, FAIL, INCONCLUSIVE, PASS, VerifyResult, exit_status,
                                    failed_at)
from rosetta.verify.tolerance import TolerancePolicy


@pytest.mark.parametrize("verdicts,strict,status", [
    ([PASS, PASS], False, 0),
    ([PASS, CANNOT, INCONCLUSIVE], False, 0),
    ([PASS, CANNOT], True, 1),
    ([PASS, FAIL, ERROR], False, 1),
    ([PASS, ERROR, CANNOT], False, 3),
    (["converted"], True, 0),
])
def test_exit_status(verdicts, strict, status):
    assert exit_status(verdicts, strict) == status


@pytest.mark.parametrize("stage,error,verdict", [
    ("conversion", RuntimeError("onnx2tf: op Foo is not supported"), CANNOT),
    ("conversion", WorkerDied("conversion crashed: worker died with SIGSEGV"), ERROR),
    ("inference", RuntimeError("bad shape"), ERROR),
    ("loading", RuntimeError("cannot load"), ERROR),
])
def test_a_failing_stage_gives_cannot_or_error(stage, error, verdict):
    try:
        raise error
    except Exception as raised:  # noqa: BLE001 - failed_at reads the traceback being handled
        row = failed_at(VerifyResult("m", "onnx", "t", PASS, ""), stage, raised)
    assert row.verdict == verdict and row.reason.startswith(f"{stage} failed: ") and row.detail


def _compare(reference: np.ndarray, target: np.ndarray):
    return compare_outputs({"y": target.astype(np.float32)}, {"y": reference.astype(np.float32)},
                           {"y": reference}, TolerancePolicy())


def test_a_constant_reference_output_is_inconclusive_not_pass():
    """Random weights that saturate give the same output for every input: a conversion that ignores its input
    would match it, so agreeing proves nothing."""
    constant = np.full((4, 10), 0.1)
    _, verdict, reason = _compare(constant, constant)
    assert verdict == INCONCLUSIVE and "the same for all 4 inputs" in reason
    _, verdict, reason = _compare(np.zeros((4, 3)), np.zeros((4, 3)))
    assert verdict == INCONCLUSIVE and "all zeros" in reason


def test_a_varying_output_passes_and_a_wrong_constant_one_still_fails():
    varying = np.random.default_rng(0).random((4, 10))
    assert _compare(varying, varying)[1] == PASS
    assert _compare(np.full((4, 10), 0.1), np.full((4, 10), 0.2))[1] == FAIL


class MXNetError(Exception):
    pass


@pytest.mark.parametrize("error,cause", [
    (MXNetError("Traceback (most recent call last):\n  File \"../src/operator/nn/convolution.cc\", line 154\n"
                "    [bt] (0) libmxnet.so(+0x1234)\nMXNetError: Check failed: dshp[1] > 0 (0 vs. 0) : Filter "
                "dimensions cannot be zero"),
     "MXNetError: Check failed: dshp[1] > 0 (0 vs. 0) : Filter dimensions cannot be zero"),
    (ValueError("Exception encountered when calling layer \"tf.squeeze_1\" (type TFOpLambda).\n\nCan not squeeze "
                "dim[1], expected 1, got 8 [Op:Squeeze]\n\nCall arguments received by layer \"tf.squeeze_1\":\n"
                "  • input=tf.Tensor(shape=(1, 8, 4), dtype=float32)"),
     "ValueError: Can not squeeze dim[1], expected 1, got 8 [Op:Squeeze]"),
    (KeyError("plain message"), "KeyError: 'plain message'"),
    (MXNetError("Error in operator dot0: [00:14:49] ../src/operator/tensor/dot-inl.h:1250: shape inference "
                "failed\nStack trace:\n  [bt] (0) libmxnet.so(+0x1)\n\noperator attributes:\ntranspose_a : False"),
     "MXNetError: Error in operator dot0: [00:14:49] ../src/operator/tensor/dot-inl.h:1250: shape inference failed"),
])
def test_an_error_keeps_the_line_that_names_its_cause(error, cause):
    assert one_line(error) == cause
