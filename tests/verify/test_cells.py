from __future__ import annotations

import json

from rosetta.convert.targets import TARGETS, Target, register_target
from rosetta.verify.cells import VerifyCell, plan_cells, run_cell, run_cells
from rosetta.verify.results import write_results_json


def test_a_path_that_fails_to_convert_is_a_cannot_row_with_reason(store, references):
    broken = Target("no-such-format", "onnx", ("torch", "onnx", "nowhere"), "onnxruntime")
    register_target(broken)
    try:
        result = run_cell(VerifyCell("cnn", "no-such-format"), store, references)
    finally:
        TARGETS.unregister(("onnx", "no-such-format"))
    assert result.verdict == "CANNOT"
    assert result.reason.startswith("conversion failed:") and "unknown conversion onnx -> nowhere" in result.reason


def test_cells_are_plain_and_planned_as_a_matrix():
    cells = plan_cells(["cnn", "gru"], ["onnxruntime"], seeds=(0, 1))
    assert [(c.model, c.seed) for c in cells] == [("cnn", 0), ("cnn", 1), ("gru", 0), ("gru", 1)]


def test_results_serialise_to_the_documented_json(store, tmp_path):
    results = run_cells(plan_cells(["gru"], ["onnxruntime"]), store, progress=False)
    write_results_json(results, tmp_path / "r.json")
    row = json.loads((tmp_path / "r.json").read_text())["results"][0]
    assert {"model", "target", "route", "verdict", "reason", "outputs"} <= row.keys()
    assert {"name", "max_abs_error", "scaled_error", "cosine", "noise_floor", "error_ratio", "max_rel_error",
            "rms_error", "within_tolerance", "nan_count", "inf_count", "vs_float32"} <= row["outputs"][0].keys()
