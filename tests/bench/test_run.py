"""rosetta bench: each cell is a self-contained job that times real steps in its framework, and a cell that
cannot run is a FAIL row with its reason; data comes from real-format files or is synthetic."""

from __future__ import annotations

import json
import math
from dataclasses import asdict

import numpy as np
import pytest

from rosetta.bench.run import (BenchCell, BenchOptions, BenchResult, execute_cell, execute_overhead, run_bench,
                               workload_batches)
from rosetta.settings import RunSettings
from rosetta.bench.workloads import WORKLOADS, parse_workloads
from rosetta.convert.targets import parse_target_list
from rosetta.errors import RosettaError
from tests.bench.test_datasets import _write_cifar
from tests.shared import torch_has_cuda


@pytest.mark.parametrize("workload", WORKLOADS.keys())
def test_reference_cell_times_real_steps(workload):
    """At a batch of 4 (DLF's is 32 or 64): what is checked is that real steps are timed and every figure follows
    from the cell's own batch, not the speed of a full batch."""
    cell = BenchCell(workload, "torch (reference)", "torch", steps=2, warmup=1, batch=4)
    result = BenchResult(**execute_cell(asdict(cell)))
    assert result.status == "ok" and result.steps == 2 and result.median_s > 0 and result.batch == 4
    assert result.samples_per_s == pytest.approx(result.batch / result.median_s)
    spec = cell.workload_as_run()
    if spec.task == "train":
        assert result.dlf_value == pytest.approx(result.median_s * math.ceil(spec.epoch_samples / spec.batch))
        assert len(result.extra["losses"]) == 2 and all(np.isfinite(result.extra["losses"]))
    else:
        assert result.dlf_value == pytest.approx(result.median_s / spec.batch * 1000)


def test_batches_come_from_real_cifar_files(tmp_path):
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    _write_cifar(folder, per_batch=40)
    batches, source = workload_batches(WORKLOADS.get("cnn-train"), 3, str(tmp_path))
    assert source == str(folder) and len(batches) == 3
    feeds, labels = batches[0]
    assert feeds["images"].shape == (64, 3, 32, 32) and feeds["images"].dtype == np.float32
    assert labels.shape == (64,) and labels.dtype == np.int64


def test_missing_data_files_are_a_clear_error(tmp_path):
    with pytest.raises(RosettaError, match="not a CIFAR-10 python folder"):
        workload_batches(WORKLOADS.get("cnn-train"), 1, str(tmp_path))


def test_bench_runs_converted_targets_in_workers_and_keeps_failures_as_rows(store, monkeypatch):
    """keras runs in its own worker and reports its own peak memory; a target whose conversion fails is a
    FAIL row; an inference-only target is noted for training workloads, not timed."""
    targets = parse_target_list("keras,onnxruntime")
    results, overheads, notes = run_bench(parse_workloads("cnn-train"), targets, store, BenchOptions(overhead=False),
                                          RunSettings(threads=1, batch=8), steps=1)
    assert [r.target for r in results] == ["torch (reference)", "keras"]
    assert all(r.status == "ok" and r.peak_rss_mb > 100 for r in results), results
    assert "tensorflow backend" in results[1].version and notes == ["cnn-train: onnxruntime is inference-only (timed in resnet50-features)"]
    # what each framework ran on and the arithmetic it did, read back from it (TF32 off, strict float32)
    assert [r.settings["device used"] for r in results] == ["cpu", "CPU:0 (tensorflow)"]
    assert results[0].settings["precision in force"] == {"cuda matmul": "float32", "cudnn": "float32"}
    assert results[1].settings["precision in force"] == {"matmul and convolution": "float32", "compute dtype": "float32"}
    assert results[1].settings["compiled step"] == "tf.function"  # Keras's default on a machine without a GPU

    def broken(*_args, **_kwargs):
        raise RosettaError("conversion onnx -> mxnet failed: synthetic failure")

    monkeypatch.setattr(store, "get", broken)
    results, _, _ = run_bench(parse_workloads("gru-train"), parse_target_list("mxnet"), store,
                              BenchOptions(overhead=False), RunSettings(batch=8), steps=1)
    assert [(r.target, r.status) for r in results] == [("torch (reference)", "ok"), ("mxnet", "FAIL")]
    assert "synthetic failure" in results[1].reason
    json.dumps([r.to_json() for r in results], allow_nan=True)


def test_overhead_is_measured_against_a_bare_loop(store):
    results, overheads, _ = run_bench(parse_workloads("gru-train"), [], store, BenchOptions(overhead=True),
                                      RunSettings(batch=8), steps=2)
    overhead = overheads["gru-train"]
    assert overhead["rounds"] == 5 and overhead["bare_s_per_step"] > 0 and overhead["harness_s_per_step"] > 0
    assert overhead["devices"] == {"bare": "cpu", "harness": "cpu"}  # read back from each loop's weights
    paired = sorted(h / b - 1 for h, b in zip(overhead["harness_all"], overhead["bare_all"]))
    assert len(paired) == 5 and overhead["overhead"] == pytest.approx(paired[2])
    assert overhead["overhead_range"] == pytest.approx([paired[0], paired[-1]])


def test_native_baseline_alternates_converted_and_native_in_one_worker(store):
    """--baseline native: after the converted keras cell, the hand-written Keras model's row (verified against
    the reference, whose weights it carries) and converted / native as the ratio of medians over rounds; torch's
    native model is the reference itself, so it gets the ratio and no extra row."""
    from rosetta.report.tables import bench_lines, bench_table

    results, _, _ = run_bench(parse_workloads("cnn-train"), parse_target_list("keras,torch"), store,
                              BenchOptions(overhead=False, baseline="native", rounds=2), RunSettings(batch=8), steps=1)
    assert [r.target for r in results] == ["torch (reference)", "keras", "keras (native)", "torch"]
    keras, native, torch = results[1:]
    versus = keras.extra["versus_native"]
    assert versus["rounds"] == 2 and len(versus["converted_all"]) == len(versus["native_all"]) == 2
    assert versus["converted_s"] == pytest.approx(np.median(versus["converted_all"]))
    assert keras.versus_native == pytest.approx(versus["converted_s"] / versus["native_s"])
    assert native.status == "ok" and native.framework == "keras" and native.extra["verified"]["verdict"] == "PASS"
    assert native.median_s in versus["native_all"] and math.isnan(native.versus_native)
    assert math.isfinite(torch.versus_native) and torch.extra["versus_native"]["native_s"] > 0
    lines = "\n".join(bench_lines(results, {}))
    assert f"keras takes {keras.versus_native:.2f}x its framework's native model's time" in lines
    assert "keras (native) has the reference's weights; against the reference: [green]PASS" in lines
    assert "converted / native" in [column.header for column in bench_table(results).columns]


@pytest.mark.skipif(torch_has_cuda(), reason="checks the refusal on a machine without a GPU")
def test_a_bench_on_a_gpu_nothing_sees_is_one_line_and_no_figure(tmp_path):
    """Every target, the ones in workers too: no row computed on the CPU under a cuda label is written."""
    from tests.test_cli import run_here

    out = run_here("bench", "--workload", "cnn-train", "--targets", "onnxruntime,keras,torch", "--device", "cuda",
                   "--steps", "1", "--json", tmp_path / "b.json", "--no-progress")
    assert out.returncode == 2 and "PyTorch sees no CUDA device" in out.stderr, out.stdout + out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and not (tmp_path / "b.json").exists()


@pytest.mark.skipif(torch_has_cuda(), reason="checks the refusal on a machine without a GPU")
def test_the_overhead_of_a_cuda_cell_runs_on_cuda_or_not_at_all():
    """The overhead of a --device cuda run used to time the CPU (its options were built without the device and
    the bare loop never moved to the GPU): both loops now take the cell's device, so without CUDA they refuse."""
    cell = asdict(BenchCell("gru-train", "torch (reference)", "torch", device="cuda", steps=1, warmup=1))
    with pytest.raises(RosettaError, match="PyTorch sees no CUDA device"):
        execute_overhead(cell, rounds=1)
    with pytest.raises(RosettaError, match="PyTorch sees no CUDA device"):
        execute_overhead(cell, rounds=2)  # the second round starts with the harness


@pytest.mark.gpu
def test_the_overhead_of_a_cuda_cell_is_measured_on_the_gpu():
    found = execute_overhead(asdict(BenchCell("gru-train", "torch (reference)", "torch", device="cuda", steps=3)),
                             rounds=2)
    assert found["devices"] == {"bare": "cuda:0", "harness": "cuda:0"}


@pytest.mark.gpu
def test_a_gpu_run_records_device_memory_peak_fraction_and_its_speed_variants(tmp_path):
    """The variants the issue's probe found the time in: batches resident on the device, the whole step as a CUDA
    graph; each row names its device and variant and carries peak device memory and its fraction of the peak
    measured once for the run."""
    from rosetta.bench.plan import bench_workloads

    done = bench_workloads(["cnn-train", "resnet50-features"], ["torch"],
                           BenchOptions(steps=20, overhead=False, speed={"precision": "amp-bf16", "channels_last": True,
                                                                         "cuda_graphs": True, "resident_data": True}),
                           RunSettings(device="cuda", work_dir=tmp_path))
    assert done.peak["device"].startswith("cuda:0") and done.peak["dtype"] == "bfloat16"
    for row in done.results:
        assert row.status == "ok", row.reason
        assert row.settings["device used"] == "cuda:0" and row.peak_device_mb > 0
        assert 0 < row.fraction_of_peak < 1 and row.settings["speed"] == "amp-bf16+channels-last+cuda-graphs+resident-data"
