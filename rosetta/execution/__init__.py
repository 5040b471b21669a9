"""Where jobs run: the bottom of the house, above only errors, registry, processes and scratch.

A *job* has one shape: a registered entry name (`"rosetta.frameworks.keras:predict_job"`), a JSON argument
that may hold numpy arrays anywhere in it, and a JSON result that may hold arrays too. The function behind the
name is `function(argument: dict) -> dict`; it runs the same wherever it runs. Callers say what *isolation*
the registry row they act for asks for, and this layer alone decides where that is:

- `INLINE` (""): in this process.
- a family name ("tensorflow", "mxnet", "mmdnn"): in that family's warm worker process (rosetta.execution.pool),
  a long-lived interpreter reused for many jobs, so TensorFlow or MXNet is imported once, not once per call.
- `FRESH`: in a new interpreter that runs this one job and exits (benchmark cells: nothing warmed up by
  another job, peak memory its own).

Inside a worker every job runs inline: the worker *is* the isolation. Arrays cross process boundaries as .npz
files and everything else as JSON, never pickles. A job that fails raises RosettaError("WHAT failed: reason");
one whose worker crashes or hangs raises WorkerDied saying so ("crashed: worker died with SIGSEGV", "timed
out after N s"), so the cell that asked becomes an ERROR row and the run goes on. Layers above reach each other
through entry names only; this package imports nothing above itself.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from rosetta.atomic import atomic_write
from rosetta.errors import EnvironmentFailed, RosettaError
from rosetta.extras import framework_missing
from rosetta.registry import load_entry

DEFAULT_TIMEOUT_S = 3600.0
INLINE, FRESH = "", "fresh"
_IN_WORKER = "ROSETTA_WORKER"  # set in every worker's environment; nothing outside this package reads it
_after_each_job: list[Callable[[], None]] = []
_retire = {"reason": ""}


@dataclass(frozen=True)
class Job:
    entry: str  # "rosetta.MODULE:FUNCTION"
    argument: dict
    isolation: str = INLINE
    what: str = ""  # how errors name it: "keras inference", "conversion onnx -> mxnet"
    timeout: float | None = None  # seconds; default ROSETTA_WORKER_TIMEOUT or DEFAULT_TIMEOUT_S
    settings: dict = field(default_factory=dict)  # process-wide settings (threads): a warm worker only for equals


@dataclass
class Outcome:
    result: dict
    process: str  # "in-process", "worker" (warm) or "fresh worker"
    seconds: float
    peak_rss_mb: float | None = None  # the worker's peak resident memory during this job
    error: str = ""  # from an executor: why the job failed (its result is then empty)


SLOT = "cells-"  # the workers a local executor runs whole cells in, side by side (rosetta.execution.executors)

# GPU memory on demand in every process rosetta starts: by default JAX takes 75 % of a GPU's memory when it
# starts and TensorFlow all of it, whether the job uses it or not (a Keras conversion worker on JAX held 61 GB
# of an 80 GB card for a whole run, leaving the timed cell 19 GB). A user's own setting of either is kept.
GPU_MEMORY_ON_DEMAND = {"XLA_PYTHON_CLIENT_PREALLOCATE": "false", "TF_FORCE_GPU_ALLOW_GROWTH": "true"}


def child_environment(extra: dict | None = None) -> dict:
    """The environment of a process rosetta starts (a worker, a torchrun launcher): this one's, `extra`, and
    GPU_MEMORY_ON_DEMAND where not already set."""
    return {**GPU_MEMORY_ON_DEMAND, **os.environ, **(extra or {})}


def in_worker() -> bool:
    """In a framework family's worker, where every job runs inline (the worker is the isolation). A slot
    worker is not one: like the main process, it sends framework jobs to pools of its own."""
    family = os.environ.get(_IN_WORKER, "")
    return bool(family) and not family.startswith(SLOT)


def started_by_pool() -> bool:
    return bool(os.environ.get(_IN_WORKER))


def runs_here(isolation: str) -> bool:
    """Whether a job of this isolation runs in this process (so a caller may hold its objects directly)."""
    return isolation == INLINE or in_worker()


def execute(job: Job) -> Outcome:
    """Run `job` where its isolation says; see the module docstring."""
    if runs_here(job.isolation):
        start = time.perf_counter()
        try:
            result = call_entry(job.entry, job.argument)
        except ModuleNotFoundError as error:  # a framework or converter not installed: one line naming its extra
            missing = framework_missing(error)
            if missing is None:
                raise
            raise missing from error
        return Outcome(result, "in-process", time.perf_counter() - start)
    from rosetta.execution.pool import POOLS

    return POOLS.run(job)


def run_job(entry: str, argument: dict, isolation: str = INLINE, what: str = "", timeout: float | None = None,
            settings: dict | None = None) -> dict:
    """execute(Job(...)).result: the job's result only."""
    return execute(Job(entry, argument, isolation, what or entry, timeout, settings or {})).result


def call_entry(entry: str, argument: dict) -> dict:
    if not entry.startswith("rosetta."):
        raise RosettaError(f"job {entry}: not a rosetta function")
    return load_entry(entry)(argument)


def after_each_job(reset: Callable[[], None]) -> None:
    """Register `reset` to run in a warm worker after every job: how a framework puts back the process-wide
    state a job may change (Keras's global dtype policy, ...), so that the next job does not see it."""
    if reset not in _after_each_job:
        _after_each_job.append(reset)


def retire_this_worker(reason: str) -> None:
    """Say that this process now holds state no reset can undo: a warm worker exits after this job."""
    if in_worker():
        _retire["reason"] = reason


def timeout_seconds(timeout: float | None = None) -> float:
    """`timeout`, else ROSETTA_WORKER_TIMEOUT, else DEFAULT_TIMEOUT_S; a setting that is not a number of
    seconds is the environment's fault (EnvironmentFailed), not the job's."""
    if timeout:
        return timeout
    text = os.environ.get("ROSETTA_WORKER_TIMEOUT", "")
    try:
        seconds = float(text) if text.strip() else DEFAULT_TIMEOUT_S
    except ValueError:
        seconds = float("nan")
    if not 0 < seconds < float("inf"):
        raise EnvironmentFailed(f"ROSETTA_WORKER_TIMEOUT={text!r} is not a number of seconds > 0; unset it or set "
                                "it to e.g. 600")
    return seconds


@contextlib.contextmanager
def run_environment(timeout: float | None = None, verbose: bool = False):
    """What one run sets for the workers it starts, restored after it: their timeout (`timeout` seconds,
    ROSETTA_WORKER_TIMEOUT), and the frameworks' logs off unless `verbose`."""
    from rosetta.imports import entries_restored

    with entries_restored(os.environ, ("ROSETTA_WORKER_TIMEOUT", "TF_CPP_MIN_LOG_LEVEL")):
        if timeout is not None:
            os.environ["ROSETTA_WORKER_TIMEOUT"] = str(timeout)
        if not verbose:
            os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        yield


def load_npz(path: Path) -> dict[str, np.ndarray]:
    """The arrays of an .npz file; ValueError if it holds anything else (np.load hands back the bytes of a
    member that is not an .npy file)."""
    with np.load(path, allow_pickle=False) as data:
        if not hasattr(data, "files"):
            raise ValueError("an .npy array, not an .npz archive of named arrays")
        arrays = {name: data[name] for name in data.files}
    strays = [name for name, value in arrays.items() if not isinstance(value, np.ndarray)]
    if strays:
        raise ValueError(f"{', '.join(strays)} is not an array")
    return arrays


def save_npz(path: Path, arrays: dict[str, np.ndarray], sync: bool = True) -> None:
    """`arrays` as an .npz file, whole or not at all (rosetta.atomic; np.savez(path) would append .npz to a
    name without it). `sync`: False for the files that carry arrays to and from a worker."""
    atomic_write(path, lambda stream: np.savez(stream, **arrays), sync)


def pack(value, arrays: dict[str, np.ndarray]):
    """`value` as JSON-able data, its numpy arrays moved into `arrays` and replaced by {"__array__": key}."""
    if isinstance(value, np.ndarray):
        key = f"a{len(arrays)}"
        arrays[key] = value
        return {"__array__": key}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {str(k): pack(v, arrays) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [pack(v, arrays) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value


def unpack(value, arrays: dict[str, np.ndarray]):
    if isinstance(value, dict):
        if set(value) == {"__array__"}:
            return arrays[value["__array__"]]
        return {k: unpack(v, arrays) for k, v in value.items()}
    if isinstance(value, list):
        return [unpack(v, arrays) for v in value]
    return value
