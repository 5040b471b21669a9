"""rosetta verify --device: the targets run where asked, against the reference on the CPU; each row records the
device its framework reports, and a framework that sees no such device is a CANNOT row, never a CPU run."""

from __future__ import annotations

import pytest

from rosetta.cli import main
from rosetta.models import list_models
from rosetta.verify.cells import VerifyCell, run_cell
from tests.shared import torch_has_cuda


def test_a_verify_row_records_the_device_its_framework_reports(store, references):
    assert run_cell(VerifyCell("cnn", "torch"), store, references).device == "cpu"
    assert run_cell(VerifyCell("cnn", "keras"), store, references).device == "CPU:0 (tensorflow)"


@pytest.mark.skipif(torch_has_cuda(), reason="checks the refusal on a machine without a GPU")
@pytest.mark.parametrize("target", ["torch", "keras"])
def test_a_gpu_the_framework_does_not_see_is_a_cannot_row(store, references, target):
    """keras runs in its worker: the refusal crosses the process boundary as a refusal (CANNOT), not an ERROR."""
    result = run_cell(VerifyCell("cnn", target, device="cuda"), store, references)
    assert result.verdict == "CANNOT" and "device='cuda': " in result.reason and "sees no" in result.reason
    assert result.device == ""


@pytest.mark.skipif(torch_has_cuda(), reason="checks the refusal on a machine without a GPU")
def test_model_files_compared_on_a_gpu_no_framework_sees_are_cannot_rows_never_cpu_runs(tmp_path, capsys):
    """--device cuda with model files was silently ignored: a PASS computed on the CPU. Each compared model (an
    ONNX file in ONNX Runtime, a PyTorch factory run as its export, an in-memory module) is a CANNOT row, whose
    reason names the flag in what the command line prints and writes, and the parameter in what the API returns."""
    import json

    import numpy as np
    import torch

    import rosetta
    from tests.verify.test_pairing_before_the_work import onnx_model

    model = onnx_model(tmp_path / "m.onnx", {"y": ("Identity", ["N", 4])})
    (tmp_path / "nets.py").write_text("import torch\n\ndef build():\n    torch.manual_seed(0)\n"
                                      "    return torch.nn.Linear(6, 4)\n")
    for argv in ([model, model], [f"{tmp_path / 'nets.py'}:build"] * 2 + ["--trust-code", "--input", "x:Nx6:float32"]):
        for device, verdict in (("cuda", "CANNOT"), ("cpu", "PASS")):
            assert main(["verify", *map(str, argv), "--device", device, "--no-progress", "--json",
                         str(tmp_path / "r.json")]) == 0
            row = json.loads((tmp_path / "r.json").read_text())["results"][0]
            assert row["verdict"] == verdict and (device == "cpu") == (row["device"] in ("cpu", "CPUExecutionProvider")), row
            if device == "cuda":
                assert row["reason"].startswith("loading failed: --device cuda: ") and row["outputs"] == [], row
                assert "loading failed: --device cuda: " in " ".join(capsys.readouterr().out.split())  # the table's
    torch.manual_seed(0)
    net = torch.nn.Linear(6, 4)
    report = rosetta.verify(net, net, inputs={"input": np.ones((2, 6), np.float32)}, device="cuda")
    assert [row.verdict for row in report.rows] == ["CANNOT"] and "device='cuda': " in report.rows[0].reason
    assert "--device" not in report.rows[0].reason and "--device" not in str(report.to_json())


def test_a_run_on_another_device_than_asked_is_a_cannot_row():
    from rosetta.verify.cells import on_device

    assert on_device("cuda:0", "cuda") and on_device("gpu:0", "cuda") and on_device("GPU:0 (tensorflow)", "cuda")
    assert on_device("CUDAExecutionProvider, CPUExecutionProvider", "cuda") and on_device("gpu(0)", "cuda")
    assert not on_device("cpu", "cuda") and not on_device("CPUExecutionProvider", "cuda") and not on_device("", "cuda")
    assert on_device("cpu", "cpu")


@pytest.mark.gpu
@pytest.mark.parametrize("backend", ["jax", "torch"])
@pytest.mark.parametrize("model", list_models())
def test_keras_in_fp32_passes_on_the_gpu_against_the_cpu_reference(store, references, monkeypatch, model, backend):
    """On an H100, Keras on JAX FAILed at 1,160-2,770x the noise floor (JAX's default matmul precision) and on
    torch at 11-1,413x (cuDNN's TF32); fp32 sets both to float32."""
    monkeypatch.setenv("KERAS_BACKEND", backend)
    result = run_cell(VerifyCell(model, "keras", device="cuda"), store, references)
    assert result.verdict == "PASS", result.reason
    assert result.device.startswith({"jax": "gpu:0", "torch": "cuda"}[backend])


@pytest.mark.gpu
@pytest.mark.parametrize("model", list_models())
def test_the_torch_copy_passes_on_the_gpu_against_the_cpu_reference(store, references, model):
    result = run_cell(VerifyCell(model, "torch", device="cuda"), store, references)
    assert result.verdict == "PASS" and result.device == "cuda:0", result.reason
