from __future__ import annotations

from rosetta.report.plots import inference_chart


def test_inference_chart_writes_a_png_and_draws_failures(tmp_path):
    timing = {"median_s": 0.01, "p10_s": 0.009, "p90_s": 0.012}
    rows = [{"model": "cnn", "target": "reference (torch eager)", "inference": timing},
            {"model": "cnn", "target": "mxnet", "error": "crashed"},
            {"model": "gru", "target": "keras", "inference": timing}]
    path = inference_chart(rows, tmp_path / "chart.png", "test")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 10_000
