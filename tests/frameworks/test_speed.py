"""Speed variants (rosetta bench --precision --channels-last --compile): each framework applies what it has,
refuses what it has not with one line naming itself, and a variant it applies really changes the run."""

from __future__ import annotations

import numpy as np
import pytest

from rosetta.errors import RosettaError
from rosetta.frameworks.speed import Speed, SettingUnavailable
from rosetta.frameworks.torch import TorchModuleRunner
from rosetta.models import get_model
from rosetta.models.inputs import generate_inputs


def test_a_speed_variant_is_validated_and_labelled():
    assert Speed().label == "fp32" and Speed("amp-bf16", True, True).label == "amp-bf16+channels-last+compile"
    with pytest.raises(RosettaError, match="choose from fp32, tf32, amp-fp16, amp-bf16"):
        Speed("fp8")
    with pytest.raises(SettingUnavailable, match="amp-fp16 is CUDA-only"):
        Speed("amp-fp16").require("PyTorch", "cpu", ("fp32", "amp-fp16"))
    with pytest.raises(SettingUnavailable, match="--channels-last is not available in MXNet"):
        Speed(channels_last=True).require("MXNet", "cpu")
    Speed(compile=True).require("MXNet", "cpu", compile="hybridize")  # has it: no refusal


def _cnn_outputs(speed: dict | None) -> np.ndarray:
    spec = get_model("cnn")
    runner = TorchModuleRunner(spec.build(0), ["logits"], speed=speed)
    return runner.predict(generate_inputs(spec.inputs, 2, 0))["logits"]


def test_torch_amp_bf16_and_channels_last_change_the_run_not_the_function():
    """bfloat16 autocast computes with 8 mantissa bits: close to float32 but not equal (it was applied)."""
    exact = _cnn_outputs(None)
    bf16 = _cnn_outputs({"precision": "amp-bf16", "channels_last": True})
    assert bf16.dtype == np.float32 and not np.array_equal(bf16, exact)
    assert np.abs(bf16 - exact).max() < 0.05 * np.abs(exact).max()
    assert np.abs(_cnn_outputs({"channels_last": True}) - exact).max() < 1e-4


def test_torch_compile_runs_on_the_cpu():
    exact = _cnn_outputs(None)
    assert np.abs(_cnn_outputs({"compile": True}) - exact).max() < 1e-4


def test_bench_runs_variants_where_a_framework_has_them_and_says_not_available_where_not(store):
    """keras trains in mixed_bfloat16 with XLA; MXNet has no bfloat16 path in rosetta: an n/a row, not a FAIL;
    the settings of every row name the variant."""
    from rosetta.bench.run import NOT_AVAILABLE, run_bench
    from rosetta.bench.workloads import parse_workloads
    from rosetta.convert.targets import parse_target_list

    speed = {"precision": "amp-bf16", "compile": True}
    results, overheads, _ = run_bench(parse_workloads("gru-train"), parse_target_list("keras,mxnet"), store, steps=1,
                                      progress=False, speed=speed)
    reference, keras, mxnet = results
    assert [r.status for r in results] == ["ok", "ok", NOT_AVAILABLE] and not overheads
    assert reference.settings["speed"] == keras.settings["speed"] == "amp-bf16+compile"
    assert reference.settings["compile"] is True and keras.settings["jit_compile"] is True
    assert np.isfinite(keras.extra["losses"]).all()
    assert mxnet.reason.startswith("--precision amp-bf16 is not available in MXNet")


def test_a_model_torch_compile_cannot_trace_is_one_line_with_its_cause():
    """Dynamo's own message is 'Set TORCHDYNAMO_VERBOSE=1 ...'; the row says what could not be compiled."""
    from torch._dynamo.exc import InternalTorchDynamoError

    from rosetta.frameworks.torch import compile_errors

    with pytest.raises(RosettaError, match=r"^torch.compile cannot compile this model: TypeError: torch.Size\(\) "
                                           r"takes an iterable of 'int'; run it without --compile$"):
        with compile_errors(True):
            try:
                raise TypeError("torch.Size() takes an iterable of 'int'\n\nfrom user code: ...")
            except TypeError as cause:
                raise InternalTorchDynamoError("Set TORCHDYNAMO_VERBOSE=1 for the internal stack trace") from cause
    with pytest.raises(InternalTorchDynamoError):  # not compiled: not ours to explain
        with compile_errors(False):
            raise InternalTorchDynamoError("x")
