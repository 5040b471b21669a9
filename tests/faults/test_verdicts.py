"""A fault is not a verdict: a converter's refusal is CANNOT, the machine failing (memory, disk, a bad setting)
is ERROR with its cause or a usage error before any work, wrong numbers are FAIL; a changed stored artifact is
made again, not blamed on its converter; 0-d and constant outputs get the verdict they earn."""

from __future__ import annotations

import errno
import json
import shutil
import subprocess
import sys

import pytest
from google.protobuf.message import DecodeError

from rosetta.errors import EnvironmentFailed, RosettaError, environment_cause, is_fault
from tests.security import one_line_refusal, run


def _rows(path) -> dict:
    return {row["target"]: (row["verdict"], row["reason"]) for row in json.loads(path.read_text())["results"]}


@pytest.mark.parametrize("error,verdict,reason,status", [
    (MemoryError(), "ERROR", "conversion failed: out of memory (MemoryError)", 3),
    (OSError(errno.ENOSPC, "No space left on device"), "ERROR", "conversion failed: disk full (No space left", 3),
    (RuntimeError("std::bad_alloc"), "ERROR", "conversion failed: out of memory (RuntimeError: std::bad_alloc)", 3),
    (ValueError("no converter for op Foo"), "CANNOT", "conversion failed: ValueError: no converter for op Foo", 0),
    (DecodeError("Error parsing message with type 'onnx.ModelProto': Arena alloc failed"), "ERROR",
     "conversion failed: out of memory (DecodeError: Error parsing message with type 'onnx.ModelProto': Arena "
     "alloc failed)", 3),
], ids=["MemoryError", "ENOSPC", "bad_alloc", "refusal", "protobuf-arena"])
def test_a_failing_conversion_is_error_for_the_machine_and_cannot_for_the_converter(models, tmp_path, monkeypatch,
                                                                                     error, verdict, reason, status):
    def converter(*args, **kwargs):
        raise error
    import rosetta.convert.onnx.to_torch as to_torch  # the module: rosetta.convert is the API function

    monkeypatch.setattr(to_torch, "convert", converter)
    code, err = run("convert", models / "relu.onnx", "--to", "onnx,torch", "-o", tmp_path / "out", "--json",
                    tmp_path / "r.json")
    assert code == status and err == ""
    rows = _rows(tmp_path / "r.json")
    assert rows["onnx"] == ("PASS", "") and rows["torch"][0] == verdict and rows["torch"][1].startswith(reason)
    assert sorted(p.name for p in (tmp_path / "out").iterdir() if not p.name.startswith(".")) == ["onnx"]


def test_a_worker_that_runs_out_of_memory_reports_the_machine_not_the_job(tmp_path, monkeypatch):
    import rosetta.execution as execution
    from rosetta.execution.worker import _run_one
    from rosetta.execution import run_job

    def out_of_memory(entry, argument):
        raise MemoryError()
    with monkeypatch.context() as patch:
        patch.setattr(execution, "call_entry", out_of_memory)
        reply = _run_one({"entry": "rosetta.anything:job", "argument": {}, "out": str(tmp_path / "out.npz")})
    assert reply["ok"] is False and reply["environment"] is True and reply["error"].startswith("out of memory")
    (tmp_path / "reply.json").write_text(json.dumps({**reply, "retire": ""}) + "\n")
    worker = tmp_path / "worker"  # a worker that answers as that one did, to the pool across the pipe
    worker.write_text(f"#!/bin/sh\nread line\ncat {tmp_path / 'reply.json'}\n")
    worker.chmod(0o755)
    monkeypatch.setattr("sys.executable", str(worker))
    with pytest.raises(EnvironmentFailed, match="^conversion failed: out of memory") as raised:
        run_job("rosetta.anything:job", {}, "faults-worker", "conversion")
    assert is_fault(raised.value)


@pytest.mark.parametrize("message", [
    "Error parsing message with type 'onnx.ModelProto': Arena alloc failed",  # protobuf (upb) under a memory limit
    "[ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : Failed to allocate memory for requested buffer of size 4096",
    "[14:02:11] src/storage/./cpu_device_storage.h:72: Failed to allocate CPU Memory",  # MXNet
    "[enforce fail at alloc_cpu.cpp:114] data. DefaultCPUAllocator: can't allocate memory: you tried to allocate 8 "
    "bytes. Error code 12 (Cannot allocate memory)",  # PyTorch
    "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 4096 bytes.",  # XLA
    "std::bad_alloc",
    "Unable to allocate 3.2 GiB for an array with shape (100, 8) and data type float32",  # numpy
])
def test_every_frameworks_allocator_failure_is_the_machine_out_of_memory(message):
    for error in (RuntimeError(message), RosettaError(f"torch.onnx.export (torchscript) failed: {message}")):
        assert environment_cause(error).startswith("out of memory (") and is_fault(error), error


@pytest.mark.parametrize("message", [
    "[enforce fail at inline_container.cc:672] . unexpected pos 576 vs 534",  # torch.save, RLIMIT_FSIZE at 50 kB
    "[enforce fail at inline_container.cc:603] . PytorchStreamWriter failed writing file data/0: file write failed",
    "Unable to synchronously create file (file write failed: errno = 28, error message = 'No space left on device')",
])
def test_every_frameworks_write_failure_is_the_disk_full(message):
    for error in (RuntimeError(message), RosettaError(f"conversion failed: {message}")):
        assert environment_cause(error).startswith("disk full (") and is_fault(error), error


def test_a_work_folder_removed_mid_run_is_error_naming_it_not_the_exporters_cannot(tmp_path, monkeypatch):
    """Another process deletes --work-dir while torch.onnx.export writes into it: the exporter fails on a missing
    file, which was read as its refusal of the model (CANNOT, exit 0)."""
    import torch

    work, export = tmp_path / "work", torch.onnx.export

    def removed_first(*args, **kwargs):
        shutil.rmtree(work)
        return export(*args, **kwargs)
    monkeypatch.setattr(torch.onnx, "export", removed_first)
    code, err = run("verify", "--model", "cnn", "--targets", "onnxruntime", "--work-dir", work, "--jobs", "1",
                    "--json", tmp_path / "r.json")
    assert code == 3 and err == "", err
    assert _rows(tmp_path / "r.json")["onnxruntime"] == (
        "ERROR", f"conversion failed: the folder {work} was removed during the run (by another process?); rosetta "
                 "works in it: keep it until the run ends")


LIMITED_MEMORY = """
import resource, sys
import numpy as np
import onnxruntime
from rosetta.cli import main
onnxruntime.InferenceSession(sys.argv[1])  # ONNX Runtime's threads are started before the limit is set
size = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmSize:")) * 1024
limit = size + (512 << 20)  # what this process has mapped, and 512 MiB more: RLIMIT_AS, as a small machine
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
sys.exit(main(["verify", sys.argv[1], sys.argv[1], "--batch", "100000000", "--max-memory", "20", "--no-progress"]))
"""


def test_memory_running_out_for_real_is_one_line_and_exit_3(models):
    """RLIMIT_AS in a process of its own: inputs of batch 10^8 (1.5 GiB) do not fit in 512 MiB more."""
    done = subprocess.run([sys.executable, "-c", LIMITED_MEMORY, str(models / "relu.onnx")], capture_output=True,
                          text=True, timeout=120)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 3 and len(lines) == 1 and lines[0].startswith("rosetta: error: out of memory ("), \
        done.stderr


@pytest.mark.parametrize("value", ["abc", "-5", "inf"])
def test_a_malformed_setting_is_a_usage_error_before_any_work(models, tmp_path, monkeypatch, value):
    monkeypatch.setenv("ROSETTA_WORKER_TIMEOUT", value)
    code, err = run("convert", models / "relu.onnx", "--to", "onnx", "-o", tmp_path / "out")
    one_line_refusal(code, err, f"ROSETTA_WORKER_TIMEOUT={value!r} is not a number of seconds > 0")
    assert list(tmp_path.iterdir()) == []


def test_a_changed_stored_artifact_is_converted_again_not_reused(models, tmp_path, capsys):
    from rosetta.convert.store import ArtifactStore
    from rosetta.manifest import Manifest
    from rosetta.sources.model import open_model

    source = open_model(str(models / "relu.onnx"), [], False, tmp_path).folder
    chain = ("onnx", "torch")
    folder = ArtifactStore(tmp_path / "work").get_from("relu", lambda: source, chain)
    artifact = Manifest.read(folder).artifact_path(folder)
    if artifact.is_dir():
        artifact = max((p for p in artifact.rglob("*") if p.is_file()), key=lambda p: p.stat().st_size)
    good = artifact.read_bytes()
    artifact.write_bytes(good[:-8] + bytes(8))  # one of its files changed in the kept work folder
    later = ArtifactStore(tmp_path / "work")  # a later run
    assert later.get_from("relu", lambda: source, chain) == folder
    Manifest.read(folder).check_integrity(folder)
    assert later.notes == [f"{folder} no longer matched its manifest's sha256 (a file in it changed after "
                           "conversion): converted again"]
    assert capsys.readouterr().err == f"rosetta: {later.notes[0]}\n"
    artifact.write_bytes(b"changed again")
    assert later.drop_changed([folder]) == later.notes[1:] and not folder.exists()
    with pytest.raises(RosettaError):
        Manifest.read(folder)


@pytest.mark.parametrize("model,argv,verdict,why", [
    ("sum", [], "PASS", ""),  # a 0-d output (it was an ERROR: "return arrays must be of ArrayType")
    ("constant-sum", [], "INCONCLUSIVE", "the same for a second, different batch of inputs"),
    ("relu", ["--batch", "1"], "PASS", ""),
    ("constant", ["--batch", "1"], "INCONCLUSIVE", "the same for a second, different batch of inputs"),
    ("constant", [], "INCONCLUSIVE", "the same for all 8 inputs of the batch"),
    ("fixed-relu", [], "PASS", ""),  # no batch axis, and its output depends on its input
    ("fixed-constant", [], "INCONCLUSIVE", "the same for a second, different batch of inputs"),  # rows differ
])
def test_0d_and_constant_outputs_get_the_verdict_they_earn(models, tmp_path, model, argv, verdict, why):
    path = models / f"{model}.onnx"
    code, err = run("verify", path, path, *argv, "--json", tmp_path / "r.json")
    assert code == 0, err
    (got, reason), = _rows(tmp_path / "r.json").values()
    assert got == verdict and why in reason


def test_a_damaged_data_folder_is_one_line_before_any_work(tmp_path):
    cifar = tmp_path / "cifar-10-batches-py"
    cifar.mkdir()
    for name in [f"data_batch_{n}" for n in range(1, 6)] + ["test_batch"]:
        (cifar / name).write_bytes(b"not a pickle")
    code, err = run("bench", "--workload", "cnn-train", "--targets", "torch", "--steps", "1", "--data", tmp_path)
    one_line_refusal(code, err, "data_batch_1 is not a valid data file")
    shutil.rmtree(cifar)
    (cifar / "data_batch_1").mkdir(parents=True)  # a folder where a file should be
    code, err = run("bench", "--workload", "cnn-train", "--targets", "torch", "--steps", "1", "--data", tmp_path)
    one_line_refusal(code, err, "is not a CIFAR-10 python folder")
