"""Temporary files go on every exit path, and a Ctrl-C at the very end (after `written:`, while the warm
workers stop) ends quietly."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

import psutil
import pytest

from rosetta.errors import WorkerDied
from rosetta.execution import run_job

STOPPED_BY_CTRL_C = """
import os, signal, time
from rosetta.execution import run_job
from rosetta.execution.pool import POOLS, Worker
run_job("rosetta.execution.worker:reach_job", {"host": "127.0.0.1:9"}, "faults")  # a warm worker, kept
print(POOLS.workers["faults"].process.pid, flush=True)
stop = Worker.stop
def interrupted(worker):  # Ctrl-C while the run's last act, stopping its workers, waits for them
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(1)
    stop(worker)
Worker.stop = interrupted
print("written: out/onnx", flush=True)
"""


def test_ctrl_c_while_the_workers_stop_at_exit_kills_them_without_a_traceback():
    done = subprocess.run([sys.executable, "-c", STOPPED_BY_CTRL_C], capture_output=True, text=True, timeout=120)
    worker = int(done.stdout.split()[0])
    assert done.returncode == 0 and done.stderr == "", done.stderr  # no "Exception ignored in atexit callback"
    assert not psutil.pid_exists(worker) or psutil.Process(worker).status() == psutil.STATUS_ZOMBIE


def test_a_run_leaves_nothing_in_the_temporary_folder(models, tmp_path):
    """Nor does ONNX Runtime, whose telemetry wrote $TMPDIR/.ses at import."""
    done = subprocess.run([sys.executable, "-m", "rosetta.cli", "verify", str(models / "relu.onnx"),
                           str(models / "relu.onnx"), "--no-progress"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "TMPDIR": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    assert os.listdir(tmp_path) == []


def test_what_a_crashed_worker_left_in_its_temporary_folder_goes_with_it(tmp_path, monkeypatch):
    worker = tmp_path / "worker"
    worker.write_text('#!/bin/sh\nmkdir -p "$TMPDIR/tmp123/assets"; echo x > "$TMPDIR/.ses"; kill -SEGV $$\n')
    worker.chmod(0o755)
    monkeypatch.setattr("sys.executable", str(worker))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "temp"))
    (tmp_path / "temp").mkdir()
    with pytest.raises(WorkerDied, match="crashed: worker died with SIGSEGV"):
        run_job("rosetta.execution.worker:reach_job", {}, "faults-crash", "conversion")
    assert os.listdir(tmp_path / "temp") == []
