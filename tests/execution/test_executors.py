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


def _rows(path):
    return [(r["model"], r["target"], r["verdict"], r["reason"],
             [(o["name"], o["max_abs_error"], o["noise_floor"]) for o in r["outputs"]])
            for r in json.loads(path.read_text())["results"]]


def test_local_and_ray_give_identical_verdicts_and_errors(tmp_path):
    import ray  # installed by `make` (dl-rosetta[ray]), so CI runs this test
    matrix = ["verify", "--model", "cnn,gru", "--targets", "onnxruntime,keras,mxnet", "--no-progress",
              "--work-dir", str(tmp_path / "work")]
    assert main(matrix + ["--json", str(tmp_path / "local.json")]) == 0
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        assert main(matrix + ["--executor", "ray", "--json", str(tmp_path / "ray.json")]) == 0
    finally:
        ray.shutdown()
    local, remote = _rows(tmp_path / "local.json"), _rows(tmp_path / "ray.json")
    assert len(local) == 6 and local == remote


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
    with pytest.raises(RosettaError, match="--address is for --executor ray"):
        get_executor("local", "auto")
