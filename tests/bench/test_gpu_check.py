"""scripts/gpu_check.py, issue 41's device check: tried here on the CPU with a tiny budget and small steps, and with
--device cuda on this machine, which has no GPU (where no step may give a figure)."""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "gpu_check.py"
DEVICE_STEPS = ("bench-fp32", "bench-bf16-cl-graphs-resident", "bench-fp32-graphs-resident", "bench-bf16-cl",
                "verify", "keras-bench", "overhead")


@pytest.fixture(scope="module")
def gpu_check():
    spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_check"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("gpu_check", None)


def written(out: Path) -> tuple[dict, str]:
    return json.loads((out / "gpu-check.json").read_text()), (out / "gpu-check.md").read_text()


def test_every_step_the_budget_cannot_hold_is_skipped_and_says_why(gpu_check, tmp_path):
    gpu_check.main(["--device", "cpu", "--budget", "12", "--out", str(tmp_path)])
    summary, table = written(tmp_path)
    assert [step["name"] for step in summary["steps"]] == list(gpu_check.STEP_NAMES)
    for step in summary["steps"]:
        assert step["status"] == "skipped" and "budget" in step["reason"], step
    assert summary["bench"] == [] and "| bench-fp32 | skipped |" in table


def test_a_cpu_run_writes_each_figure_beside_dlfs_under_the_device_it_reported(gpu_check, tmp_path):
    gpu_check.main(["--device", "cpu", "--budget", "240", "--steps", "1", "--workloads", "cnn-train",
                    "--only", "bench-fp32", "--out", str(tmp_path)])
    summary, table = written(tmp_path)
    steps = {step["name"]: step for step in summary["steps"]}
    assert steps["bench-fp32"]["status"] == "ok", steps["bench-fp32"]
    assert all(steps[name]["status"] == "not asked" for name in gpu_check.STEP_NAMES if name != "bench-fp32")
    reference = next(row for row in summary["bench"] if row["target"] == "torch (reference)")
    assert reference["device reported"] == "cpu" and reference["figure"] and reference["dlf_value"] > 0
    assert (f"| cnn-train | torch (reference) | fp32 | cuda matmul float32, cudnn float32 | cpu | "
            in table) and f"{reference['dlf_value']:.3g} s/epoch" in table
    assert "5.1 s/epoch (PyTorch)" in table  # DLF's published P100 figure beside it
    assert summary["card"].startswith("CPU")


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch")
def test_with_cuda_on_a_machine_without_a_gpu_every_step_says_unavailable_and_no_figure_is_written(gpu_check,
                                                                                                  tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    gpu_check.main(["--device", "cuda", "--budget", "60", "--steps", "1", "--only", ",".join(DEVICE_STEPS),
                    "--out", str(tmp_path)])
    summary, table = written(tmp_path)
    for step in summary["steps"]:
        if step["name"] in DEVICE_STEPS:
            assert step["status"] == "unavailable" and "sees no CUDA device" in step["reason"], step
    assert summary["bench"] == summary["verify"] == summary["overhead"] == []
    assert "no bench row measured" in table and table.startswith("# rosetta device check: no CUDA device")


def test_a_row_whose_device_read_back_is_not_the_one_asked_keeps_no_figure(gpu_check):
    settings = {"speed": "fp32", "precision in force": {"cuda matmul": "float32"}}
    row = {"workload": "cnn-train", "framework": "torch", "device": "cuda", "status": "ok", "unit": "s/epoch",
           "median_s": 0.003, "samples_per_s": 21000.0, "fraction_of_peak": 0.02}
    payload = {"results": [
        {**row, "target": "torch (reference)", "dlf_value": 2.35, "settings": {**settings, "device used": "cuda:0"}},
        {**row, "target": "torch", "dlf_value": 9.87, "settings": {**settings, "device used": "cpu"}}]}
    rows = gpu_check.bench_rows(payload, "bench-fp32", "cuda")
    assert rows[0]["figure"] and rows[0]["dlf_value"] == 2.35
    assert rows[1]["status"] == "wrong device" and not rows[1]["figure"] and rows[1]["dlf_value"] is None
    verified = gpu_check.verify_rows({"results": [{"model": "cnn", "target": "keras", "verdict": "PASS",
                                                   "device": "cpu:0", "outputs": [{"error_ratio": 1.2}]}]}, "cuda")
    assert verified[0]["verdict"] == "wrong device" and verified[0]["error_ratio"] is None
    overhead = gpu_check.overhead_row("cnn-train", {"overhead": 0.01, "overhead_range": [0, 0.02], "rounds": 5,
                                                    "devices": {"harness": "cuda:0", "bare": "cpu"}}, "cuda")
    assert overhead["overhead"] is None and "bare loop cpu" in overhead["reason"]
    table = gpu_check.markdown({"device": "cuda", "card": "a card", "bench": rows, "verify": verified,
                                "overhead": [overhead], "steps": []})
    assert "2.35 s/epoch" in table and "9.87" not in table and "wrong device: asked cuda, reported cpu" in table


def test_a_step_that_hangs_costs_its_own_timeout_and_the_summary_is_saved_after_each_step(gpu_check, tmp_path,
                                                                                          monkeypatch):
    hang = [sys.executable, "-c", "import time; time.sleep(120)"]
    steps = [gpu_check.Step("hang", "sleeps", 0, 2, lambda check: hang),
             gpu_check.Step("after", "prints", 0, 30, lambda check: [sys.executable, "-c", "print('ran')"])]
    check = gpu_check.Check("cpu", 90, tmp_path)
    saved = []
    save = check.save
    monkeypatch.setattr(check, "save", lambda: (save(), saved.append(len(written(tmp_path)[0]["steps"]))))
    start = time.monotonic()
    summary = gpu_check.run_check(check, steps)
    assert time.monotonic() - start < 45
    assert [step["status"] for step in summary["steps"]] == ["timed out", "ok"]
    assert summary["steps"][0]["seconds"] < 20 and "timeout" in summary["steps"][0]["reason"]
    assert 1 in saved and 2 in saved  # on disk after each step, before the next began
