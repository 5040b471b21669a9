"""The library's results name parameters (`device='cuda'`, `timeout=`); the command line says its flags where it
prints and writes them, in one place (cli/flags.said_with_flags), and the API's own objects are left as they are."""

from __future__ import annotations

import pytest

from rosetta.api import BenchReport, ConformanceRun, Conversion, Report
from rosetta.bench.run import NOT_AVAILABLE, BenchResult
from rosetta.cli.flags import as_flags, said_with_flags
from rosetta.verify.results import CANNOT, ERROR, VerifyResult

CUDA = "device='cuda': PyTorch sees no CUDA device"
TIMED_OUT = "loading failed: reading m.keras (keras) timed out after 5 s (timeout=)"


@pytest.mark.parametrize("message, said", [
    (CUDA, "--device cuda: PyTorch sees no CUDA device"),
    (TIMED_OUT, "loading failed: reading m.keras (keras) timed out after 5 s (--timeout)"),
    ("give path/to/file.py:function with trust_code=True", "give path/to/file.py:function with --trust-code"),
    ("cuda_graphs= with precision=amp-fp16 is not available", "--cuda-graphs with --precision amp-fp16 is not available"),
    ("compile= is not available in MXNet", "--compile is not available in MXNet"),
    ("verify=False skips the check", "--no-verify skips the check"),
    ("verify=True is the default", "verify=True is the default"),  # no flag says it: the words as they are
    ("Keras jit_compile=True (XLA)", "Keras jit_compile=True (XLA)"),  # not a parameter of rosetta's
])
def test_a_switch_on_is_its_flag_and_a_quoted_word_needs_no_quotes(message, said):
    assert as_flags(message) == said


def test_a_reports_reasons_are_said_with_flags_in_its_table_and_json_and_left_in_the_api():
    rows = [VerifyResult("a.onnx", "onnx", "b.onnx", CANNOT, f"loading failed: {CUDA}"),
            VerifyResult("a.onnx", "onnx", "c.keras", ERROR, TIMED_OUT, locate={"target": "c.keras", "verdict": "not located",
                                                                               "reason": TIMED_OUT})]
    report = Report(rows, "rosetta verify")
    said = said_with_flags(report)
    assert [row.reason for row in said.rows] == ["loading failed: --device cuda: PyTorch sees no CUDA device",
                                                 TIMED_OUT.replace("(timeout=)", "(--timeout)")]
    assert said.rows[1].locate["reason"].endswith("(--timeout)")
    assert "--device cuda: PyTorch" in " ".join(str(said).split()) and "device='cuda'" not in str(said)
    assert said.to_json()["results"][0]["reason"] == "loading failed: --device cuda: PyTorch sees no CUDA device"
    assert [row.reason for row in report.rows] == [f"loading failed: {CUDA}", TIMED_OUT]  # the API's, unchanged
    assert "--" not in str(report.to_json())
    converted = said_with_flags(Conversion({}, report))
    assert converted.report.rows[0].reason.startswith("loading failed: --device cuda")


def test_a_bench_reports_rows_and_lines_are_said_with_flags_in_its_table_and_json():
    unavailable = BenchResult("cnn-train", "mxnet", "mxnet", "cpu", NOT_AVAILABLE,
                              "precision=amp-bf16 is not available in MXNet")
    done = BenchReport([unavailable], {"device": "cpu", "results": [unavailable.to_json()], "overhead": {}},
                       ["executor: local"], ["skipped gru-train: compile= is not available"])
    said = said_with_flags(done)
    text = " ".join(str(said).split())
    assert "--precision amp-bf16 is not available in MXNet" in text and "precision=amp-bf16" not in text
    assert "skipped gru-train: --compile is not available" in text
    assert said.to_json()["results"][0]["reason"] == "--precision amp-bf16 is not available in MXNet"
    assert done.to_json()["results"][0]["reason"] == "precision=amp-bf16 is not available in MXNet"


def test_a_conformance_runs_rows_and_lines_are_said_with_flags():
    done = ConformanceRun([{"case": "test_add", "target": "keras", "verdict": ERROR, "reason": TIMED_OUT}],
                          ["check: 1 pair changed", "resume= needs results_file=FILE"], 1)
    said = said_with_flags(done)
    assert said.rows[0]["reason"].endswith("(--timeout)") and done.rows[0]["reason"].endswith("(timeout=)")
    assert said.renderables == ["--check: 1 pair changed", "--resume needs --json FILE"]
