"""The same matrix with --executor local and --executor ray (a local Ray instance, 2 CPUs): identical
verdicts and errors; tasks that share an artifact come after the task that makes it."""

from __future__ import annotations

import json

import pytest

from rosetta.cli import main
from rosetta.errors import RosettaError
from rosetta.execution import Job
from rosetta.execution.executors import LocalExecutor, Task, _topological, get_executor
from rosetta.verify.cells import ARTIFACT_JOB, CELL_JOB, plan_cells, plan_tasks
from tests.shared import communicate_within


def _rows(path):
    return [(r["model"], r["target"], r["verdict"], r["reason"],
             [(o["name"], o["max_abs_error"], o["noise_floor"]) for o in r["outputs"]])
            for r in json.loads(path.read_text())["results"]]


def test_local_side_by_side_and_ray_give_identical_verdicts_and_errors(tmp_path):
    """One cell at a time, two side by side (each in a slot process), and Ray: the same rows. Each run has
    its own work folder, so each converts for itself. ONNX Runtime runs in the parent, MXNet in its worker
    process (Keras's worker, which starts TensorFlow, is the same path at ten times the cost)."""
    import ray  # installed by `make` (dl-rosetta[ray]), so CI runs this test
    matrix = ["verify", "--model", "cnn,gru", "--targets", "onnxruntime,mxnet", "--no-progress"]
    for name, extra in (("one", ["--jobs", "1"]), ("two", ["--jobs", "2"])):
        assert main(matrix + extra + ["--work-dir", str(tmp_path / name), "--json", str(tmp_path / f"{name}.json")]) == 0
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        assert main(matrix + ["--executor", "ray", "--work-dir", str(tmp_path / "ray"),
                              "--json", str(tmp_path / "ray.json")]) == 0
    finally:
        ray.shutdown()
    one, two, remote = (_rows(tmp_path / f"{name}.json") for name in ("one", "two", "ray"))
    assert len(one) == 4 and one == two == remote


def test_the_scheduler_keeps_order_capacity_and_exclusive_tasks_alone():
    """_schedule with a fake clock: never more than `capacity` running, an exclusive task never beside
    another, a task never before the ones it comes after."""
    from rosetta.execution import Outcome
    from rosetta.execution.executors import _schedule

    tasks = [Task(Job("rosetta.a:a", {})), Task(Job("rosetta.b:b", {})), Task(Job("rosetta.c:c", {}), after=(0,)),
             Task(Job("rosetta.d:d", {}), exclusive=True), Task(Job("rosetta.e:e", {}), exclusive=True),
             Task(Job("rosetta.f:f", {}))]
    running, log, finished = [], [], set()

    def start(task):
        index = tasks.index(task)
        assert set(task.after) <= finished
        running.append(index)
        log.append(sorted(running))
        return index

    def wait_one(pending):
        index = min(pending)  # finishes the oldest
        running.remove(index)
        finished.add(index)
        return index, Outcome({"task": index}, "", 0.0)

    results = _schedule(tasks, start, wait_one, None, capacity=2)
    assert [r.result["task"] for r in results] == list(range(6))
    assert max(len(now) for now in log) == 2
    assert all(now == [i] for now in log for i in (3, 4) if i in now)  # exclusive: alone


def test_a_freed_slot_takes_its_next_task_before_the_callers_callback_runs():
    """A caller's on_outcome (conformance saving 15,000 rows: 2 s) must not leave a slot idle meanwhile."""
    from rosetta.execution import Outcome
    from rosetta.execution.executors import _schedule

    tasks = [Task(Job(f"rosetta.t:t{n}", {})) for n in range(5)]
    running, busy_at_callback = [], []

    def start(task):
        running.append(tasks.index(task))
        return tasks.index(task)

    def wait_one(pending):
        running.remove(min(pending))
        return min(pending), Outcome({}, "", 0.0)

    _schedule(tasks, start, wait_one, None, capacity=2, on_outcome=lambda *_: busy_at_callback.append(len(running)))
    assert busy_at_callback == [2, 2, 2, 1, 0]


def test_shared_artifacts_are_made_first_once(store):
    cells = plan_cells(["cnn"], ["onnxruntime", "keras", "mxnet"])
    tasks = plan_tasks(cells, store)
    entries = [task.job.entry for task in tasks]
    assert entries.count(ARTIFACT_JOB) == 1 and entries.count(CELL_JOB) == 3  # the ONNX export, shared
    shared = entries.index(ARTIFACT_JOB)
    assert all(shared in task.after for task in tasks if task.job.entry == CELL_JOB and "onnxruntime" not in task.label)
    assert _topological(tasks).index(shared) < min(i for i, e in enumerate(entries) if e == CELL_JOB and i != 0)


def test_local_executor_turns_a_failing_task_into_its_error():
    tasks = [Task(Job("rosetta.nothing:here", {}, what="a job")), Task(Job("os:getcwd", {}), after=(0,))]
    first, second = LocalExecutor().run(tasks)
    assert "ModuleNotFoundError" in first.error and second.error == "job os:getcwd: not a rosetta function"


def test_circular_tasks_and_unknown_executors_are_refused():
    with pytest.raises(RosettaError, match="in a circle"):
        _topological([Task(Job("os:getcwd", {}), after=(1,)), Task(Job("os:getcwd", {}), after=(0,))])
    with pytest.raises(RosettaError, match="unknown executor 'spark'; choose from: local, ray"):
        get_executor("spark")
    with pytest.raises(RosettaError, match="address= is for executor=ray"):
        get_executor("local", "auto")


def _rosetta_within(arguments: list[str], limit: float):
    """`rosetta ARGUMENTS` in a process of its own: (exit status, stderr, seconds it took); a process still
    running after `limit` seconds is killed and the test fails (ray.init used to retry for ever)."""
    import subprocess
    import sys
    import time

    started = time.monotonic()
    process = subprocess.Popen([sys.executable, "-m", "rosetta.cli", *arguments], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    _, stderr = communicate_within(process, limit, f"rosetta {' '.join(arguments)}")
    return process.returncode, stderr, time.monotonic() - started


RAY_CELL = ["verify", "--model", "cnn", "--targets", "onnxruntime", "--no-progress", "--executor", "ray"]


def test_a_ray_address_where_nothing_listens_is_a_one_line_error_at_once():
    """Nothing listens at 127.0.0.1:1: a one-line error (exit 2) as soon as the connection is refused, from
    the CLI and from the API (which raises it before any Ray call)."""
    import time

    import rosetta

    status, stderr, _ = _rosetta_within(RAY_CELL + ["--address", "127.0.0.1:1"], limit=60)
    assert (status, stderr) == (2, "rosetta: error: cannot reach Ray at 127.0.0.1:1: connection refused\n")
    started = time.monotonic()
    with pytest.raises(RosettaError, match=r"^cannot reach Ray at 127.0.0.1:1: connection refused$"):
        rosetta.verify("cnn", executor="ray", address="127.0.0.1:1")
    assert time.monotonic() - started < 10  # no retries: refused is an answer
    with pytest.raises(RosettaError, match=r"^cannot reach Ray at ray://head: not an address \(HOST:PORT"):
        rosetta.verify("cnn", executor="ray", address="ray://head")


def test_a_ray_address_that_accepts_but_never_answers_is_a_one_line_error_within_the_timeout():
    """A port that accepts connections and says nothing (not Ray): ray.init's retries are cut at --timeout,
    and the error is the one line rosetta prints (Ray's own C++ warnings may precede it), exit 2."""
    import socket

    with socket.create_server(("", 0)) as silent:  # every interface: Ray connects to this machine's address
        port = silent.getsockname()[1]
        status, stderr, seconds = _rosetta_within(RAY_CELL + ["--address", f"127.0.0.1:{port}", "--timeout", "3"],
                                                  limit=60)
    ours = [line for line in stderr.splitlines() if line.startswith("rosetta")]
    assert status == 2 and "Traceback" not in stderr
    assert ours == [f"rosetta: error: cannot reach Ray at 127.0.0.1:{port}: no answer within 3 s (--timeout sets "
                    "how long to wait)"]
    assert seconds < 3 + 15  # the deadline, plus starting Python and planning the cell on a loaded machine
