"""Jobs in warm workers: reused, yet no job sees another's state; a worker that crashes, hangs or fails is one
row's FAIL with the reason, and the rest of the run goes on."""

from __future__ import annotations

import concurrent.futures
import stat
import time

import numpy as np
import pytest

from rosetta.convert.targets import get_target
from rosetta.errors import RosettaError
from rosetta.execution import FRESH, Job, execute, pack, run_job, unpack
from rosetta.execution.pool import POOLS, Worker
from rosetta.models import get_model
from rosetta.verify.cells import plan_cells, run_cells

STATE = "rosetta.frameworks.state:process_state_job"  # imports TensorFlow and Keras: for what they hold
PROCESS = "rosetta.frameworks.state:process_job"  # imports nothing: for the pool's own rules (which process ran)


@pytest.fixture
def no_trim(monkeypatch) -> None:
    """Idle workers are never stopped for memory while the test runs: a warm worker an earlier test of this
    process left large (a ResNet-50 conversion) would otherwise push the idle ones over IDLE_BUDGET_MB and
    stop the worker a reuse test expects back (fresh16: first and second pid differed). The budget has its
    own test below."""
    from rosetta.execution import pool

    monkeypatch.setattr(pool, "IDLE_BUDGET_MB", float("inf"))


def _fake_python(tmp_path, monkeypatch, body: str) -> None:
    """The next worker started is this shell script instead of Python."""
    script = tmp_path / "fake-python"
    script.write_text("#!/bin/sh\n" + body + "\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setattr("sys.executable", str(script))


def test_segfaulting_worker_is_reported(tmp_path, monkeypatch):
    _fake_python(tmp_path, monkeypatch, "kill -SEGV $$")
    with pytest.raises(RosettaError, match="mxnet inference crashed: worker died with SIGSEGV"):
        run_job(STATE, {}, "mxnet", "mxnet inference")


def test_hanging_worker_times_out(tmp_path, monkeypatch):
    _fake_python(tmp_path, monkeypatch, "sleep 30")
    with pytest.raises(RosettaError, match="keras inference timed out after 1 s"):
        run_job(STATE, {}, "tensorflow", "keras inference", timeout=1)


def test_a_worker_that_exits_passes_on_its_last_line(tmp_path, monkeypatch):
    _fake_python(tmp_path, monkeypatch, "echo 'noise' >&2; echo 'the reason' >&2; exit 2")
    with pytest.raises(RosettaError, match="conversion failed: worker exited with status 2: the reason$"):
        run_job(STATE, {}, "mxnet", "conversion")


def test_an_error_in_a_job_is_one_line_and_the_worker_stays(no_trim):
    with pytest.raises(RosettaError, match=r"^reading failed: job os:getcwd: not a rosetta function$"):
        run_job("os:getcwd", {}, "tensorflow", "reading")
    first = run_job(PROCESS, {}, "tensorflow")
    with pytest.raises(RosettaError, match=r"^checking failed: KeyError: 'path'$"):
        run_job("rosetta.frameworks.tensorflow:check_saved_model_job", {}, "tensorflow", "checking")
    assert run_job(PROCESS, {}, "tensorflow")["pid"] == first["pid"]


def test_crash_in_one_cell_leaves_an_error_row_and_the_others_run(store, tmp_path, monkeypatch):
    target = get_target("mxnet")
    store.get(get_model("cnn"), 0, target.chain, target.export_options())  # converted for real first
    _fake_python(tmp_path, monkeypatch, "kill -SEGV $$")
    results = run_cells(plan_cells(["cnn"], ["mxnet", "onnxruntime"]), store, progress=False)
    assert [r.verdict for r in results] == ["ERROR", "PASS"]
    assert "crashed: worker died with SIGSEGV" in results[0].reason


def test_a_module_in_the_current_folder_does_not_shadow_the_framework(tmp_path, monkeypatch):
    (tmp_path / "keras.py").write_text("raise ImportError('the user folder shadowed keras')\n")
    monkeypatch.chdir(tmp_path)
    POOLS.shutdown()  # a worker started from here, not one already warm
    state = run_job(STATE, {}, "tensorflow")  # imports TensorFlow and Keras in that worker
    assert state["floatx"] == "float32"


def test_a_warm_worker_never_leaks_state_between_jobs(no_trim):
    """Two jobs that set different thread counts and Keras dtype policies each see only their own; a job
    that sets the same thread count reuses the warm worker and finds Keras and the environment reset."""
    report = {"report": ["ROSETTA_PROBE"]}
    first = run_job(STATE, {"threads": 1, "keras_policy": "float64", "environment": {"ROSETTA_PROBE": "1"}, **report},
                    "tensorflow", settings={"threads": 1})
    assert (first["intra_op_threads"], first["keras_policy"], first["environment"]) == (1, "float64", {"ROSETTA_PROBE": "1"})
    again = run_job(STATE, report, "tensorflow", settings={"threads": 1})
    assert again["pid"] == first["pid"]  # warm: the same process
    assert (again["intra_op_threads"], again["keras_policy"], again["floatx"]) == (1, "float32", "float32")
    assert again["environment"] == {"ROSETTA_PROBE": None}
    other = run_job(STATE, {"threads": 2, "keras_policy": "mixed_float16", **report}, "tensorflow",
                    settings={"threads": 2})
    assert other["pid"] != first["pid"]  # TensorFlow fixes its threads once: another process
    assert (other["intra_op_threads"], other["keras_policy"]) == (2, "mixed_float16")
    last = run_job(STATE, report, "tensorflow", settings={"threads": 2})
    assert (last["pid"], last["intra_op_threads"], last["keras_policy"]) == (other["pid"], 2, "float32")


def test_a_worker_started_from_a_thread_outlives_the_thread(no_trim):
    """PR_SET_PDEATHSIG fires when the thread that started a child ends: a warm worker started from an
    executor's thread pool must still be there, the same process, after that pool is gone."""
    with concurrent.futures.ThreadPoolExecutor(1) as threads:
        first = threads.submit(run_job, PROCESS, {}, "mxnet").result()
    time.sleep(0.5)  # the kernel's SIGKILL, had there been one, has landed
    assert run_job(PROCESS, {}, "mxnet")["pid"] == first["pid"]


def test_a_changed_environment_gets_a_new_worker(monkeypatch):
    first = run_job(PROCESS, {}, "tensorflow")
    monkeypatch.setenv("ROSETTA_PROBE", "changed")
    second = run_job(PROCESS, {"report": ["ROSETTA_PROBE"]}, "tensorflow")
    assert second["pid"] != first["pid"] and second["environment"] == {"ROSETTA_PROBE": "changed"}


def test_fresh_jobs_get_a_process_each_and_report_their_peak_memory():
    one, two = execute(Job(STATE, {}, FRESH)), execute(Job(PROCESS, {}, FRESH))
    assert one.result["pid"] != two.result["pid"] and one.process == two.process == "fresh worker"
    assert one.peak_rss_mb > 100 > two.peak_rss_mb  # TensorFlow and Keras were imported during the first job only


def test_a_retired_worker_is_not_reused(monkeypatch, no_trim):
    first = run_job(PROCESS, {}, "tensorflow")
    monkeypatch.setattr(Worker, "run", _retiring(Worker.run))
    second = run_job(PROCESS, {}, "tensorflow")
    monkeypatch.undo()
    third = run_job(PROCESS, {}, "tensorflow")
    assert first["pid"] == second["pid"] != third["pid"]


def _retiring(run):
    def wrapped(self, request, what, timeout):
        reply = run(self, request, what, timeout)
        return {**reply, "retire": "a test says so"}
    return wrapped


def test_arrays_cross_anywhere_in_a_job():
    value = {"feeds": {"x": np.arange(6, dtype=np.int64).reshape(2, 3)}, "batches": [({"y": np.ones(2)}, np.zeros(1))],
             "n": np.float32(1.5), "text": "a"}
    arrays: dict = {}
    packed = pack(value, arrays)
    assert len(arrays) == 3 and packed["n"] == 1.5
    again = unpack(packed, arrays)
    assert again["feeds"]["x"].dtype == np.int64 and np.array_equal(again["feeds"]["x"], value["feeds"]["x"])
    assert np.array_equal(again["batches"][0][1], np.zeros(1))


def test_a_job_that_reaches_for_the_network_fails_at_once_with_the_host_named():
    """No network at run time: a library that tries to download (onnx2tf did) gets a clear error at once, in
    every worker, instead of a DNS wait or a connect timeout, or retries."""
    for family in ("tensorflow", FRESH):
        answer = execute(Job("rosetta.execution.worker:reach_job", {"host": "example.com"}, family)).result
        assert "rosetta runs without network: a job tried to reach example.com" in answer["error"], answer
        assert answer["seconds"] < 2
        local = execute(Job("rosetta.execution.worker:reach_job", {"host": "127.0.0.1:9"}, family)).result
        assert "without network" not in local["error"]  # loopback is not the network: refused by the port


def test_a_host_given_as_bytes_is_refused_like_a_name():
    """socket.getaddrinfo takes bytes too: b"example.com" is the network as much as "example.com" is."""
    from rosetta.execution.worker import _local

    assert not _local(b"example.com") and not _local("example.com")
    assert _local(b"localhost") and _local("127.0.0.1") and _local(None) and _local("::1")


def test_workers_take_gpu_memory_on_demand_unless_the_user_says_otherwise(monkeypatch):
    """JAX takes 75 % of a GPU when it starts and TensorFlow all of it: a worker holding either would starve the
    timed cell. Every worker starts with both set to allocate on demand; a user's own setting is kept."""
    from rosetta.execution import GPU_MEMORY_ON_DEMAND

    names = list(GPU_MEMORY_ON_DEMAND)
    assert run_job(PROCESS, {"report": names}, "tensorflow")["environment"] == {
        "XLA_PYTHON_CLIENT_PREALLOCATE": "false", "TF_FORCE_GPU_ALLOW_GROWTH": "true"}
    monkeypatch.setenv("XLA_PYTHON_CLIENT_PREALLOCATE", "true")
    assert run_job(PROCESS, {"report": names}, FRESH)["environment"]["XLA_PYTHON_CLIENT_PREALLOCATE"] == "true"


@pytest.mark.gpu
def test_a_jax_worker_leaves_the_gpu_to_the_timed_cell(monkeypatch):
    """With JAX's default a worker that touches JAX holds 75 % of the GPU for its life; on demand, it holds what
    it uses."""
    import torch

    monkeypatch.setenv("KERAS_BACKEND", "jax")
    row = run_job("rosetta.frameworks:environment_job", {"framework": "keras"}, "tensorflow")  # JAX sees the GPU
    assert any(device.startswith("gpu:") for device in row["devices"])
    free, total = torch.cuda.mem_get_info()
    assert free > 0.5 * total


def test_idle_workers_stay_under_the_budget_the_least_recently_used_stopped_first(monkeypatch):
    """Two warm families over the budget together: the one used least recently is stopped, though the smaller
    (the family a run is using stays warm); with a budget under the one left too, it goes as well: the idle
    workers of a process stay under IDLE_BUDGET_MB together."""
    import rosetta.execution.pool as pool

    monkeypatch.setattr(pool, "IDLE_BUDGET_MB", float("inf"))
    run_job(PROCESS, {}, "mxnet")
    big = run_job(PROCESS, {}, "tensorflow")  # used after mxnet
    POOLS.workers["tensorflow"].rss_mb, POOLS.workers["mxnet"].rss_mb = 900.0, 100.0
    monkeypatch.setattr(pool, "IDLE_BUDGET_MB", 950.0)
    POOLS._trim()
    assert "mxnet" not in POOLS.workers and "tensorflow" in POOLS.workers
    assert run_job(PROCESS, {}, "tensorflow")["pid"] == big["pid"]
    POOLS.workers["tensorflow"].rss_mb = 900.0
    monkeypatch.setattr(pool, "IDLE_BUDGET_MB", 500.0)
    POOLS._trim()
    assert "tensorflow" not in POOLS.workers
    assert run_job(PROCESS, {}, "tensorflow")["pid"] != big["pid"]


def test_what_a_frameworks_import_sets_keeps_the_warm_workers(monkeypatch, no_trim):
    """Importing TensorFlow, torch's inductor or Ray in the calling process sets variables of their own
    (TF2_BEHAVIOR, TORCHINDUCTOR_CACHE_DIR, RAY_CLIENT_MODE, ...); a worker imports them itself, so a warm one is
    still the same environment and is kept (each was replaced, TensorFlow's import paid again). Each module is
    imported in a process of its own here: whatever a new release sets must be listed in SET_BY_IMPORTS."""
    import json
    import os
    import subprocess
    import sys

    from rosetta.execution.pool import SET_BY_IMPORTS

    script = ("import importlib, json, os, sys\nfound = {}\nfor name in sys.argv[1:]:\n"
              "    before = dict(os.environ)\n    importlib.import_module(name)\n"
              "    found[name] = sorted(k for k, v in os.environ.items() if before.get(k) != v)\nprint(json.dumps(found))")
    listed = set().union(*SET_BY_IMPORTS.values())  # unset, as in a process that imported none of them yet
    clean = {name: value for name, value in os.environ.items() if name not in listed}
    done = subprocess.run([sys.executable, "-c", script, *SET_BY_IMPORTS], capture_output=True, text=True, timeout=300,
                          env=clean)
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.splitlines()[-1])
    for module, names in found.items():
        assert set(names) <= SET_BY_IMPORTS[module], f"importing {module} sets {sorted(set(names) - SET_BY_IMPORTS[module])}"
    assert found["tensorflow"], "importing TensorFlow sets none: the test no longer sees what it checks"
    first = run_job(PROCESS, {}, "tensorflow")
    for names in SET_BY_IMPORTS.values():
        for name in names:
            monkeypatch.setenv(name, "set by an import")
    assert run_job(PROCESS, {}, "tensorflow")["pid"] == first["pid"]
    monkeypatch.setenv("KERAS_BACKEND", "jax")  # a variable that does shape a worker still replaces it
    assert run_job(PROCESS, {}, "tensorflow")["pid"] != first["pid"]
