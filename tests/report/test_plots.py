from __future__ import annotations

from rosetta.report.plots import inference_chart


def test_inference_chart_writes_a_png_and_draws_failures(tmp_path):
    timing = {"median_s": 0.01, "p10_s": 0.009, "p90_s": 0.012}
    rows = [{"model": "cnn", "target": "reference (torch eager)", "inference": timing},
            {"model": "cnn", "target": "mxnet", "error": "crashed"},
            {"model": "gru", "target": "keras", "inference": timing}]
    path = inference_chart(rows, tmp_path / "chart.png", "test")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 10_000


def test_bench_chart_draws_failures_and_dlf_figures_on_gpu(tmp_path):
    from rosetta.bench.run import BenchResult
    from rosetta.bench.workloads import WORKLOADS
    from rosetta.report.plots import bench_chart

    ok = dict(status="ok", median_s=0.1, p10_s=0.09, p90_s=0.12, dlf_value=78.2, unit="s/epoch")
    results = [BenchResult("cnn-train", "torch (reference)", "torch", "cuda", **ok),
               BenchResult("cnn-train", "mxnet", "mxnet", "cuda", status="FAIL", reason="crashed")]
    cpu = bench_chart(WORKLOADS.get("cnn-train"), results, tmp_path / "cpu.png", "cpu")
    gpu = bench_chart(WORKLOADS.get("cnn-train"), results, tmp_path / "gpu.png", "cuda")
    assert cpu.read_bytes()[:8] == gpu.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert gpu.stat().st_size > cpu.stat().st_size  # eight DLF bars beside ours
