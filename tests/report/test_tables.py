from __future__ import annotations

import io

from rich.console import Console

from rosetta.report.tables import failure_lines, verify_table
from rosetta.verify.results import VerifyResult


def _render(table) -> str:
    buffer = io.StringIO()
    Console(file=buffer, width=200).print(table)
    return buffer.getvalue()


def test_a_failed_path_still_has_its_row():
    results = [VerifyResult("cnn", "onnx", "mxnet", "CANNOT", "conversion failed: boom"),
               VerifyResult("cnn", "onnx", "torch", "PASS", "")]
    text = _render(verify_table(results))
    assert "mxnet" in text and "CANNOT" in text
    assert failure_lines(results) == ["[yellow]CANNOT[/yellow] cnn -> mxnet (onnx): conversion failed: boom"]
