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
    assert result.verdict == "CANNOT" and "--device cuda: " in result.reason and "sees no" in result.reason
    assert result.device == ""


def test_device_is_for_reference_models(tmp_path):
    assert main(["verify", str(tmp_path / "model.onnx"), "--device", "cuda"]) == 2


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
