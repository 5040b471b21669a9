"""Warm worker processes: one per framework family (and one per slot of a local executor running cells side by
side), reused for many jobs.

A worker is started on the first job of its family and kept for the next ones, so TensorFlow, Keras or MXNet
is imported once per run instead of once per call. It is reused only while everything its process was started
with still holds: the same interpreter, the same environment (a test or a user that sets KERAS_BACKEND gets a
new one) and the same process-wide settings (threads: TensorFlow and MXNet fix them when they start). It is
replaced after a crash, a timeout, MAX_JOBS jobs, when it grows past MAX_RSS_MB, or when a job said its state
cannot be reset (rosetta.execution.retire_this_worker). Every worker dies with this process (PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import rosetta.execution as execution
from rosetta.errors import RosettaError, Unsupported, WorkerDied
from rosetta.processes import popen_for_life
from rosetta.scratch import scratch_folder

MAX_JOBS = 1000  # then a fresh worker: frameworks keep caches that only grow (a restart re-imports TensorFlow: seconds)
MAX_RSS_MB = 4096.0  # a worker resident above this after a job is replaced (a run holds up to six: two slots x three
# families; MMdnn's TensorFlow emitter's worker lives for one job)
# Variables that change while a run lives but do not shape a worker: reusing one across them is safe.
# TF_CPP_MIN_LOG_LEVEL: how much TensorFlow logs, not what it computes (rosetta.cli.main sets it while it runs)
_TRANSIENT_VARIABLES = {"PYTEST_CURRENT_TEST", "ROSETTA_WORKER_TIMEOUT", "COLUMNS", "LINES", "TF_CPP_MIN_LOG_LEVEL"}


def _fingerprint(settings: dict) -> str:
    """What a warm worker must share with a job to run it. A setting left at its default (threads 0, none)
    is the same as one not given: a conversion and the prediction after it share their worker."""
    environment = {k: v for k, v in os.environ.items() if k not in _TRANSIENT_VARIABLES}
    return json.dumps([sys.executable, environment, {k: v for k, v in settings.items() if v}], sort_keys=True)


class Worker:
    """One worker process and its pipes; `run` sends it a job and waits for the reply."""

    def __init__(self, family: str, fingerprint: str, jobs: int = 0) -> None:
        self.family, self.fingerprint, self.jobs_done = family, fingerprint, 0
        env = execution.child_environment({execution._IN_WORKER: family or "1"})
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        self.log = tempfile.TemporaryFile(mode="w+b", prefix="rosetta-worker-")  # its stderr, for a crash's last line
        # -P (Python 3.11+): do not put the current folder first on sys.path, where a user's own keras.py or
        # tensorflow.py would shadow the framework inside the worker.
        safe_path = ["-P"] if sys.version_info >= (3, 11) else []
        command = [sys.executable, *safe_path, "-m", "rosetta.execution.worker"] + (["--jobs", str(jobs)] if jobs else [])
        self.process = popen_for_life(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, env=env)

    def alive(self) -> bool:
        return self.process.poll() is None

    def run(self, request: dict, what: str, timeout: float) -> dict:
        try:
            self.process.stdin.write((json.dumps(request) + "\n").encode())
            self.process.stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # it died before the job: reported below from its exit status
        line = self._read_line(timeout)
        if line is None:  # the pool kills it
            raise WorkerDied(f"{what} timed out after {timeout:g} s (worker killed)")
        if not line:
            died = WorkerDied(f"{what} {self._death()}")
            died.detail = self.stderr()
            raise died
        self.jobs_done += 1
        return json.loads(line)

    def _read_line(self, timeout: float) -> bytes | None:
        """The next reply line; b"" if the worker died; None on timeout."""
        deadline = time.monotonic() + timeout
        stdout = self.process.stdout
        with selectors.DefaultSelector() as selector:
            selector.register(stdout, selectors.EVENT_READ)
            while True:
                left = deadline - time.monotonic()
                if left <= 0 or not selector.select(left):
                    return None
                return stdout.readline()

    def _death(self) -> str:
        try:
            code = self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()
            code = self.process.returncode
        if code is not None and code < 0:
            name = signal.Signals(-code).name
            hint = " (killed: out of memory?)" if name == "SIGKILL" else ""
            return f"crashed: worker died with {name}{hint}"
        lines = [line for line in self.stderr().splitlines() if line.strip()]
        return f"failed: worker exited with status {code}" + (f": {lines[-1].strip()}" if lines else "")

    def stderr(self) -> str:
        """What the worker wrote to stderr so far (frameworks' warnings, a crash's message): shown with -v."""
        try:
            self.log.seek(0)
            return self.log.read().decode(errors="replace")
        except (OSError, ValueError):
            return ""

    def kill(self) -> None:
        if self.alive():
            self.process.kill()
        self.process.wait()
        self.close()

    def stop(self) -> None:
        """End of input: the worker finishes and exits; killed if it does not within a few seconds."""
        try:
            self.process.stdin.close()
            self.process.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            pass
        self.kill()

    def close(self) -> None:
        for stream in (self.process.stdin, self.process.stdout, self.log):
            try:
                stream.close()
            except OSError:
                pass


class Pools:
    """The warm workers of this process, one per family; FRESH jobs get a one-job worker each."""

    def __init__(self) -> None:
        self.workers: dict[str, Worker] = {}
        self.lock = threading.Lock()  # guards the dicts and the count
        self.family_locks: dict[str, threading.Lock] = {}  # one job at a time per family (executors use threads)
        self.started = 0  # workers started, warm or fresh: what tests and benchmarks count

    def _family_lock(self, isolation: str):
        if isolation == execution.FRESH:  # a worker of its own: nothing to wait for
            return contextlib.nullcontext()
        with self.lock:
            return self.family_locks.setdefault(isolation, threading.Lock())

    def run(self, job: execution.Job) -> execution.Outcome:
        timeout = execution.timeout_seconds(job.timeout)
        with scratch_folder("rosetta-io-") as scratch:
            arrays: dict = {}
            argument = execution.pack(job.argument, arrays)
            request = {"entry": job.entry, "argument": argument, "arrays": None, "out": str(Path(scratch) / "out.npz")}
            if arrays:
                request["arrays"] = str(Path(scratch) / "in.npz")
                execution.save_npz(Path(request["arrays"]), arrays)
            with self._family_lock(job.isolation):
                worker = self._worker(job)
                fresh = job.isolation == execution.FRESH
                try:
                    reply = worker.run(request, job.what or job.entry, timeout)
                except BaseException:  # crashed, hung, or Ctrl-C while waiting: this worker is gone
                    worker.kill()
                    self.workers.pop(job.isolation, None)
                    raise
                if fresh or reply.get("retire") or worker.jobs_done >= MAX_JOBS or reply.get("rss_mb", 0) > MAX_RSS_MB:
                    self.workers.pop(job.isolation, None)
                    worker.stop()
            if not reply["ok"]:  # a refusal stays one (a CANNOT row, e.g. a device the framework lacks)
                kind = Unsupported if reply.get("unsupported") else RosettaError
                failed = kind(f"{job.what or job.entry} failed: {reply['error']}")
                failed.detail = reply.get("detail", "")  # the worker's traceback, for -v
                raise failed
            out = execution.load_npz(Path(request["out"])) if reply.get("arrays") else {}
            result = execution.unpack(reply["result"], out)
        return execution.Outcome(result, "fresh worker" if fresh else "worker", reply["seconds"], reply["peak_rss_mb"])

    def _worker(self, job: execution.Job) -> Worker:
        fingerprint = _fingerprint(job.settings)
        if job.isolation == execution.FRESH:
            self._count()
            return Worker(job.isolation, fingerprint, jobs=1)
        worker = self.workers.get(job.isolation)
        if worker is not None and (worker.fingerprint != fingerprint or not worker.alive()):
            self.workers.pop(job.isolation)
            worker.stop()
            worker = None
        if worker is None:
            self._count()
            worker = self.workers[job.isolation] = Worker(job.isolation, fingerprint)
        return worker

    def _count(self) -> None:
        with self.lock:
            self.started += 1

    def shutdown(self) -> None:
        with self.lock:
            workers, self.workers = list(self.workers.values()), {}
        for worker in workers:
            worker.stop()


POOLS = Pools()
atexit.register(POOLS.shutdown)
