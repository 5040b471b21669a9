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
    with pytest.raises(SettingUnavailable, match="channels_last= is not available in MXNet"):
        Speed(channels_last=True).require("MXNet", "cpu")
    Speed(compile=True).require("MXNet", "cpu", compile="hybridize")  # has it: no refusal
    assert Speed("amp-bf16", cuda_graphs=True, resident_data=True).label == "amp-bf16+cuda-graphs+resident-data"
    with pytest.raises(RosettaError, match="eager= runs no graph"):
        Speed(eager=True, compile=True)
    with pytest.raises(SettingUnavailable, match="cuda_graphs= is CUDA-only"):
        Speed(cuda_graphs=True).require("PyTorch", "cpu", cuda_graphs="CUDAGraph")
    with pytest.raises(SettingUnavailable, match="resident_data= is not available in MXNet: its runner takes"):
        Speed(resident_data=True).require("MXNet", "cpu")
    assert Speed(cuda_graphs=True).warmup(2) == 3 and Speed().warmup(2) == 2  # no capture is timed


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
    from rosetta.bench.run import NOT_AVAILABLE, BenchOptions, run_bench
    from rosetta.settings import RunSettings
    from rosetta.bench.workloads import parse_workloads
    from rosetta.convert.targets import parse_target_list

    speed = {"precision": "amp-bf16", "compile": True}
    results, overheads, _ = run_bench(parse_workloads("gru-train"), parse_target_list("keras,mxnet"), store,
                                      BenchOptions(speed=speed), RunSettings(), steps=1)
    reference, keras, mxnet = results
    assert [r.status for r in results] == ["ok", "ok", NOT_AVAILABLE] and not overheads
    assert reference.settings["speed"] == keras.settings["speed"] == "amp-bf16+compile"
    assert reference.settings["compile"] is True and keras.settings["jit_compile"] is True
    assert np.isfinite(keras.extra["losses"]).all()
    assert mxnet.reason.startswith("precision=amp-bf16 is not available in MXNet")


def test_a_model_torch_compile_cannot_trace_is_one_line_with_its_cause():
    """Dynamo's own message is 'Set TORCHDYNAMO_VERBOSE=1 ...'; the row says what could not be compiled."""
    from torch._dynamo.exc import InternalTorchDynamoError

    from rosetta.frameworks.torch import compile_errors

    with pytest.raises(RosettaError, match=r"^torch.compile cannot compile this model: TypeError: torch.Size\(\) "
                                           r"takes an iterable of 'int'; run it without compile=$"):
        with compile_errors(True):
            try:
                raise TypeError("torch.Size() takes an iterable of 'int'\n\nfrom user code: ...")
            except TypeError as cause:
                raise InternalTorchDynamoError("Set TORCHDYNAMO_VERBOSE=1 for the internal stack trace") from cause
    with pytest.raises(InternalTorchDynamoError):  # not compiled: not ours to explain
        with compile_errors(False):
            raise InternalTorchDynamoError("x")


def test_fp32_turns_tf32_off_in_torch_and_reads_it_back():
    """PyTorch leaves cuDNN's TF32 on by default (convolutions and RNNs on a GPU): an fp32 run turns it off on
    every device, so the CPU suite runs the line a GPU run depends on, and the row says what was in force."""
    import torch

    torch.backends.cudnn.allow_tf32 = True  # torch's own default
    spec = get_model("cnn")
    runner = TorchModuleRunner(spec.build(0), ["logits"])
    assert not torch.backends.cudnn.allow_tf32 and not torch.backends.cuda.matmul.allow_tf32
    settings = runner.settings()
    assert settings["device used"] == "cpu" and settings["speed"] == "fp32"
    assert settings["precision in force"] == {"cuda matmul": "float32", "cudnn": "float32"}
    bf16 = TorchModuleRunner(spec.build(0), ["logits"], speed={"precision": "amp-bf16"})
    assert bf16.precision_in_force["autocast"] == "bfloat16"


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_keras_fp32_is_fp32_on_every_backend_whatever_the_environment_says(store, monkeypatch, backend):
    """Keras on JAX computed float32 matmuls at JAX's default (TF32-class) precision on a GPU: an fp32 run sets
    `highest` over the user's JAX_DEFAULT_MATMUL_PRECISION, and on torch turns TF32 off; the device, the
    precision and the compiled step are read back from the backend in the worker that ran it."""
    from rosetta.bench.inference import time_predict
    from rosetta.convert.targets import get_target
    from rosetta.frameworks import runner_class

    monkeypatch.setenv("KERAS_BACKEND", backend)  # inherited by the worker
    monkeypatch.setenv("JAX_DEFAULT_MATMUL_PRECISION", "bfloat16")
    spec, target = get_model("cnn"), get_target("keras")
    folder = store.get(spec, 0, target.chain, target.export_options())
    timing = time_predict("keras", folder, generate_inputs(spec.inputs, 2, 0), repeats=1, warmup=1)
    settings = timing["settings"]
    in_force = {"jax": {"matmul": "highest"}, "torch": {"cuda matmul": "float32", "cudnn": "float32"}}[backend]
    assert settings["precision in force"] == {**in_force, "compute dtype": "float32"}
    assert settings["device used"] == {"jax": "cpu:0 (jax)", "torch": "cpu (torch)"}[backend]
    assert settings["compiled step"] == {"jax": "jax.jit", "torch": "eager (jit_compile=False)"}[backend]
    assert timing["version"].endswith(f"({backend} backend)") and timing["peak_device_mb"] is None
    assert runner_class("keras")  # the runner class is importable here too


def test_onnxruntime_records_the_precision_its_providers_run(store):
    """The CUDA provider computes float32 in TF32 unless told (use_tf32=0, which fp32 sets); the CPU provider
    has no such setting: each row says which."""
    from rosetta.convert.targets import get_target
    from rosetta.frameworks import load_runner

    spec, target = get_model("cnn"), get_target("onnxruntime")
    runner = load_runner("onnxruntime", store.get(spec, 0, target.chain, target.export_options()))
    assert runner.settings() == {"device used": "CPUExecutionProvider",
                                 "precision in force": {"matmul and convolution": "float32 (CPU provider)"}}
    with pytest.raises(SettingUnavailable, match="precision=tf32 is CUDA-only"):
        load_runner("onnxruntime", store.get(spec, 0, target.chain, target.export_options()), speed={"precision": "tf32"})


def test_a_compiled_row_says_how_much_torch_compile_compiled():
    """Dynamo does not trace torch.nn.GRU: the reference GRU's forward runs eagerly whole under --compile, which
    its row says, read back from Dynamo's counters, beside the CNN's one compiled frame."""
    for model, frames in (("gru", "0 of 1"), ("cnn", "1 of 1")):
        spec = get_model(model)
        runner = TorchModuleRunner(spec.build(0), [o.name for o in spec.outputs], speed={"compile": True})
        runner.predict(generate_inputs(spec.inputs, 2, 0))
        found = runner.settings()["torch.compile"]
        assert found["frames compiled"] == frames
        assert ("Attempted to wrap RNN, GRU, or LSTM" in found.get("eager because", [])) == (model == "gru")
