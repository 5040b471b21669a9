"""Executors: run a matrix of tasks (one job each) here, or spread over a Ray cluster, with the same results.

A task is a job (rosetta.execution.Job: entry name, JSON argument) plus what a scheduler needs: the tasks it
comes after (those that make an artifact it shares), the CPUs and memory it asks for, and whether it must
have its node to itself (timing). Tasks exchange artifacts through the shared work folder their arguments
name, so any machine that mounts that folder can run any task.

- `local` (the default): tasks one after another in this process, in the order given, which callers keep
  topological; isolated frameworks run in the warm worker pools (rosetta.execution.pool). With `jobs` N > 1
  (`--jobs`), up to N tasks side by side, each in a warm slot process; exclusive tasks alone.
- `ray`: each task a Ray task with `num_cpus`/`memory` from the task, started as soon as the tasks it comes
  after are done. Exclusive tasks (benchmarks) run one at a time, so that no two are timed side by side on a
  node. `address` is a running cluster's ("ray://HEAD:10001" or "auto"); none starts a local Ray instance.
  ray.init retries an address that does not answer for ever: rosetta first knocks (a TCP connection) and bounds
  the connection by --timeout, else RAY_CONNECT_TIMEOUT_S, so a wrong address is a one-line error.
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
import queue
import socket
import threading
from dataclasses import dataclass, field
from typing import Callable

from rosetta.errors import RosettaError
from rosetta.execution import INLINE, SLOT, Job, Outcome, execute, timeout_seconds

EXECUTORS = ("local", "ray")


@dataclass(frozen=True)
class Task:
    job: Job
    label: str = ""  # what the progress bar says while it runs
    after: tuple[int, ...] = ()  # indices of the tasks that must be done first
    num_cpus: float = 1.0
    memory_mb: float = 0.0  # 0: no reservation
    exclusive: bool = False  # never beside another exclusive task (benchmarks)


@dataclass
class LocalExecutor:
    """`jobs` 1: each task in this process, in order. `jobs` N > 1: up to N tasks side by side, each in a slot
    worker of its own (a warm process per slot, with its own framework pools: nothing in-process is shared
    between two running tasks, so torch's exporter, which is not thread-safe, never runs twice at once)."""

    jobs: int = 1
    name: str = "local"

    def describe(self) -> str:
        if self.jobs == 1:
            return ("local: one task at a time, frameworks in warm worker processes; benchmark cells one at a "
                    "time, never side by side")
        return (f"local: up to {self.jobs} tasks side by side, each in a warm process of its own; benchmark "
                "cells one at a time, never side by side")

    def run(self, tasks: list[Task], on_done: Callable[[str], None] | None = None,
            on_outcome: Callable[[int, Outcome], None] | None = None) -> list[Outcome]:
        if self.jobs == 1:
            results: list = [None] * len(tasks)
            for index in _topological(tasks):
                if on_done:
                    on_done(tasks[index].label)
                results[index] = _outcome(tasks[index].job)
                if on_outcome:
                    on_outcome(index, results[index])
            return results
        slots: queue.Queue = queue.Queue()
        for slot in range(self.jobs):
            slots.put(slot)

        def run_in_slot(job: Job) -> Outcome:
            slot = slots.get()
            try:
                return _outcome(in_slot(job, slot))
            finally:
                slots.put(slot)

        threads = concurrent.futures.ThreadPoolExecutor(self.jobs)

        def start(task: Task):
            return threads.submit(run_in_slot, task.job)

        def wait_one(pending):
            done, _ = concurrent.futures.wait(pending, return_when=concurrent.futures.FIRST_COMPLETED)
            future = next(iter(done))
            return future, future.result()

        try:
            return _schedule(tasks, start, wait_one, on_done, capacity=self.jobs, on_outcome=on_outcome)
        except BaseException:  # Ctrl-C, SIGTERM: the slots stop now, not when their cells are done
            from rosetta.execution.pool import POOLS

            POOLS.interrupt(SLOT)
            raise
        finally:
            threads.shutdown(wait=True, cancel_futures=True)


def in_slot(job: Job, slot: int) -> Job:
    """A job run in-process by default, sent to slot worker `slot` instead (its own framework jobs go on to that
    worker's pools); a job for a framework's pool, or a fresh process, goes where it goes anyway. The slot
    job has no time limit of its own: the framework jobs inside it keep theirs (ROSETTA_WORKER_TIMEOUT)."""
    if job.isolation != INLINE:
        return job
    argument = {"job": {"entry": job.entry, "argument": job.argument, "what": job.what},
                "worker_timeout": os.environ.get("ROSETTA_WORKER_TIMEOUT")}
    return Job("rosetta.execution.executors:slot_job", argument, f"{SLOT}{slot}", job.what,
               timeout=SLOT_TIMEOUT_S, settings=job.settings)


SLOT_TIMEOUT_S = 7 * 24 * 3600.0


def slot_job(argument: dict) -> dict:
    """Job: in a slot worker, run a task's job as the main process would (the worker resets its environment
    after it)."""
    if argument["worker_timeout"]:
        os.environ["ROSETTA_WORKER_TIMEOUT"] = argument["worker_timeout"]
    inner = argument["job"]
    return execute(Job(inner["entry"], inner["argument"], INLINE, inner["what"])).result


def _outcome(job: Job) -> Outcome:
    try:
        return execute(job)
    except Exception as error:  # noqa: BLE001 - one task's failure is its caller's ERROR row
        return Outcome({}, "", 0.0, error=_message(error))


def _schedule(tasks: list[Task], start, wait_one, on_done, capacity: int | None = None,
              on_outcome=None) -> list[Outcome]:
    """Start each task once the tasks it comes after are done (at most `capacity` at once; exclusive ones
    alone), in the given order otherwise; `start(task)` -> handle, `wait_one(handles)` -> (handle, Outcome);
    `on_outcome(index, outcome)` as each task ends (a caller that saves work as it goes)."""
    results: list = [None] * len(tasks)
    pending: dict = {}  # handle -> task index
    waiting = list(range(len(tasks)))
    done: set[int] = set()

    def fill() -> None:
        for index in list(waiting):
            if any(tasks[i].exclusive for i in pending.values()) or (capacity and len(pending) >= capacity):
                break  # an exclusive task has the machine or the cluster to itself
            task = tasks[index]
            if not set(task.after) <= done or (task.exclusive and pending):
                continue
            pending[start(task)] = index
            waiting.remove(index)

    fill()
    while pending:
        handle, outcome = wait_one(list(pending))
        index = pending.pop(handle)
        results[index] = outcome
        done.add(index)
        fill()  # the freed slot is busy again before the callbacks run (a caller's save takes seconds)
        if on_done:
            on_done(tasks[index].label)
        if on_outcome:
            on_outcome(index, outcome)
    if waiting:
        raise RosettaError("tasks wait on each other in a circle")  # callers build DAGs; a guard only
    return results


@dataclass
class RayExecutor:
    address: str | None = None
    num_cpus: int | None = None  # for a local instance only
    name: str = "ray"
    _started: bool = field(default=False, repr=False)

    def describe(self) -> str:
        where = self.address or "a local Ray instance"
        return f"ray ({where}): one Ray task per cell; benchmark cells one at a time, never side by side"

    def _ray(self):
        try:
            import ray
        except ImportError:
            raise RosettaError("executor=ray needs Ray: pip install 'dl-rosetta[ray]'") from None
        if not ray.is_initialized():
            def init():
                ray.init(address=self.address, num_cpus=None if self.address else self.num_cpus,
                         include_dashboard=False, log_to_driver=False, configure_logging=False)

            if self.address in (None, "local"):  # starts Ray's processes: from the main thread (see _within)
                try:
                    init()
                except Exception as error:  # noqa: BLE001 - a Ray that cannot start is the user's to fix
                    raise RosettaError(f"cannot start Ray: {_message(error)}") from None
            else:
                seconds = _connect_seconds()
                if self.address != "auto":
                    _knock(self.address, seconds)
                _within(seconds, self.address, init)
            self._started = True
        return ray

    def run(self, tasks: list[Task], on_done: Callable[[str], None] | None = None,
            on_outcome: Callable[[int, Outcome], None] | None = None) -> list[Outcome]:
        ray = self._ray()
        remote = ray.remote(max_retries=0)(_run_task)

        def start(task: Task):
            options = {"num_cpus": task.num_cpus}
            if task.memory_mb:
                options["memory"] = int(task.memory_mb * 2**20)
            return remote.options(**options).remote(task.job)

        def wait_one(pending):
            ready, _ = ray.wait(pending, num_returns=1)
            try:
                return ready[0], ray.get(ready[0])
            except Exception as error:  # noqa: BLE001 - the task raised, or its Ray worker died
                return ready[0], Outcome({}, "ray", 0.0, error=_message(getattr(error, "cause", None) or error))

        return _schedule(tasks, start, wait_one, on_done, on_outcome=on_outcome)

    def shutdown(self) -> None:
        if self._started:
            import ray

            ray.shutdown()
            self._started = False


RAY_CONNECT_TIMEOUT_S = 30.0  # connecting to a cluster without --timeout: a head that answers at all does in seconds


def _connect_seconds() -> float:
    """How long connecting to a Ray cluster may take: --timeout (ROSETTA_WORKER_TIMEOUT) where given, else
    RAY_CONNECT_TIMEOUT_S."""
    return timeout_seconds() if os.environ.get("ROSETTA_WORKER_TIMEOUT", "").strip() else RAY_CONNECT_TIMEOUT_S


def _knock(address: str, seconds: float) -> None:
    """RosettaError unless something accepts a TCP connection at a Ray address (HOST:PORT, where ray.init
    connects to it, or ray://HOST:PORT) within `seconds`; other schemes (anyscale://...) are left to Ray."""
    if "://" in address and not address.startswith("ray://"):
        return
    target = address.removeprefix("ray://")
    if target == address:
        try:  # Ray connects to this machine's address, not the loopback, for localhost or 127.0.0.1
            from ray._private.services import canonicalize_bootstrap_address

            target = canonicalize_bootstrap_address(address) or address
        except Exception:  # noqa: BLE001 - not an address Ray reads either: refused below
            pass
    host, _, port = target.rpartition(":")
    host = host.strip("[]")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise RosettaError(f"cannot reach Ray at {address}: not an address (HOST:PORT, ray://HOST:PORT or auto)")
    try:
        socket.create_connection((host, int(port)), timeout=seconds).close()
    except TimeoutError:
        raise RosettaError(f"cannot reach Ray at {address}: no answer within {seconds:g} s") from None
    except OSError as error:
        raise RosettaError(f"cannot reach Ray at {address}: {(error.strerror or str(error)).lower()}") from None


class _OffMainThread(logging.Filter):
    """Drops Ray's warning that ray.init, run off the main thread (see _within), sets no SIGTERM handler."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "SIGTERM handler is not set" not in record.getMessage()


def _within(seconds: float, address: str, connect: Callable[[], object]) -> None:
    """`connect()` (ray.init to a running cluster) within `seconds`, else a one-line RosettaError. It runs in a
    daemon thread, since Ray retries its connection in C++, where no signal reaches; a thread given up on stays
    behind, blocked, and ends with the process. A Ctrl-C stops the wait. Never for a Ray that starts its own
    processes: they are made to die with the thread that started them (PR_SET_PDEATHSIG), so with this one."""
    outcome: dict = {}

    def run() -> None:
        try:
            connect()
        except BaseException as error:  # noqa: BLE001 - handed to the waiting thread
            outcome["error"] = error

    quiet = _OffMainThread()
    logger = logging.getLogger("ray._private.worker")
    logger.addFilter(quiet)
    try:
        thread = threading.Thread(target=run, name="rosetta-ray-init", daemon=True)
        thread.start()
        thread.join(seconds)
    finally:
        logger.removeFilter(quiet)
    if thread.is_alive():
        raise RosettaError(f"cannot reach Ray at {address}: no answer within {seconds:g} s (timeout= sets how "
                           "long to wait)")
    if "error" in outcome:  # a cluster that cannot be reached is the user's to fix
        raise RosettaError(f"cannot reach Ray at {address}: {_message(outcome['error'])}")


def _message(error: BaseException) -> str:
    if isinstance(error, RosettaError):
        return str(error)
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[-1]}" if text else type(error).__name__


def _run_task(job: Job) -> Outcome:
    """A task's body on a Ray worker: the job where its isolation says (warm pools live per Ray worker)."""
    return execute(job)


def _topological(tasks: list[Task]) -> list[int]:
    """Task indices with every task after the ones it comes after, otherwise in the given order."""
    order, placed = [], set()
    while len(order) < len(tasks):
        progressed = False
        for index, task in enumerate(tasks):
            if index not in placed and set(task.after) <= placed:
                order.append(index)
                placed.add(index)
                progressed = True
        if not progressed:
            raise RosettaError("tasks wait on each other in a circle")
    return order


def get_executor(name: str = "local", address: str | None = None, num_cpus: int | None = None, jobs: int = 1):
    if name == "local":
        if address:
            raise RosettaError("address= is for executor=ray")
        return LocalExecutor(jobs)
    if name == "ray":
        return RayExecutor(address, num_cpus)
    raise RosettaError(f"unknown executor {name!r}; choose from: {', '.join(EXECUTORS)}")




def executor_for(run) -> LocalExecutor | RayExecutor:
    """Where a run's cells go (`run`: a rosetta.settings.RunSettings): its executor by name, `jobs` at a time,
    Ray's `address`."""
    return get_executor(run.executor, run.address, jobs=run.jobs or 1)
