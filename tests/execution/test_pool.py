"""A framework worker that crashes or hangs becomes a FAIL row with the reason; the rest of the run goes on."""

from __future__ import annotations

import stat

import pytest

from rosetta import worker
from rosetta.convert.targets import get_target
from rosetta.errors import RosettaError
from rosetta.models import get_model
from rosetta.verify.cells import plan_cells, run_cells


def _fake_python(tmp_path, body: str) -> str:
    script = tmp_path / "fake-python"
    script.write_text("#!/bin/sh\n" + body + "\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


def test_segfaulting_worker_is_reported(tmp_path, monkeypatch):
    monkeypatch.setattr(worker.sys, "executable", _fake_python(tmp_path, "kill -SEGV $$"))
    with pytest.raises(RosettaError, match="mxnet inference crashed: worker died with SIGSEGV"):
        worker.run_worker(["predict"], "mxnet inference")


def test_hanging_worker_times_out(tmp_path, monkeypatch):
    monkeypatch.setattr(worker.sys, "executable", _fake_python(tmp_path, "sleep 30"))
    with pytest.raises(RosettaError, match="timed out after 1 s"):
        worker.run_worker(["predict"], "keras inference", timeout=1)


def test_worker_error_line_is_passed_on(tmp_path, monkeypatch):
    monkeypatch.setattr(worker.sys, "executable",
                        _fake_python(tmp_path, "echo 'noise' >&2; echo 'rosetta-worker: error: the reason' >&2; exit 2"))
    with pytest.raises(RosettaError, match="conversion failed: the reason$"):
        worker.run_worker(["convert"], "conversion")


def test_crash_in_one_cell_leaves_a_fail_row_and_the_others_run(store, tmp_path, monkeypatch):
    target = get_target("mxnet")
    store.get(get_model("cnn"), 0, target.chain, target.export_options())  # converted for real first
    monkeypatch.setattr(worker.sys, "executable", _fake_python(tmp_path, "kill -SEGV $$"))
    results = run_cells(plan_cells(["cnn"], ["mxnet", "onnxruntime"]), store, progress=False)
    assert [r.verdict for r in results] == ["FAIL", "PASS"]
    assert "crashed: worker died with SIGSEGV" in results[0].reason


def test_a_module_in_the_current_folder_does_not_shadow_the_framework(store, tmp_path, monkeypatch):
    from rosetta.verify.cells import VerifyCell, run_cell

    (tmp_path / "keras.py").write_text("raise ImportError('the user folder shadowed keras')\n")
    monkeypatch.chdir(tmp_path)
    assert run_cell(VerifyCell("cnn", "keras"), store).verdict == "PASS"
