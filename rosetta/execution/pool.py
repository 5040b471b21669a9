"""Warm worker processes: one per framework family (and one per slot of a local executor running cells side by
side), reused for many jobs.

A worker is started on the first job of its family and kept for the next ones, so TensorFlow, Keras or MXNet
is imported once per run instead of once per call. It is reused only while everything its process was started
with still holds: the same interpreter, the same environment (a test or a user that sets KERAS_BACKEND gets a
new one) and the same process-wide settings (threads: TensorFlow and MXNet fix them when they start). It is
replaced after a crash, a timeout, MAX_JOBS jobs, when it grows past MAX_RSS_MB, or when a job said its state
cannot be reset (rosetta.execution.retire_this_worker). The idle workers of a process together stay under
IDLE_BUDGET_MB (the least recently used stopped first, as a cache evicts: the family a run is using stays warm
however large it is, and a TensorFlow worker takes seconds to start again): memory a finished job's framework
keeps is not free for the next job of another family, and several runs may share the machine (`make test`'s two
processes each hold a run's workers). Every worker dies with this process (PR_SET_PDEATHSIG).
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
from rosetta.errors import EnvironmentFailed, RosettaError, WorkerCrashed, WorkerTimedOut
from rosetta.processes import popen_for_life
from rosetta.scratch import scratch_folder

MAX_JOBS = 1000  # then a fresh worker: frameworks keep caches that only grow (a restart re-imports TensorFlow: seconds)
MAX_RSS_MB = 4096.0  # a worker resident above this after a job is replaced (a run holds up to six: two slots x three
# families; MMdnn's TensorFlow emitter's worker lives for one job)


def _idle_budget_mb() -> float:
    """An eighth of the machine's memory (3 GiB on 24 GiB), at least 1.5 GiB: TensorFlow's worker after a
    ResNet-50 conversion holds 1.6 GB, MXNet's 0.9 GB; tf2onnx's holds 5.3 GB, and is replaced (MAX_RSS_MB)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**20
    except (ValueError, OSError, AttributeError):
        total = 16384.0
    return max(1536.0, total / 8)


IDLE_BUDGET_MB = _idle_budget_mb()
# Variables that change while a run lives but do not shape a worker: reusing one across them is safe.
# TF_CPP_MIN_LOG_LEVEL: how much TensorFlow logs, not what it computes (rosetta.cli.main sets it while it runs)
_TRANSIENT_VARIABLES = {"PYTEST_CURRENT_TEST", "ROSETTA_WORKER_TIMEOUT", "COLUMNS", "LINES", "TF_CPP_MIN_LOG_LEVEL"}
# Variables a framework's own import sets in the process that imports it (a worker that imports it sets the same):
# importing TensorFlow, torch's inductor or Ray in the caller (a notebook, a test, a Keras source read in process)
# made every warm worker look started in another environment, and replaced it (TensorFlow's seconds again).
# tests/execution/test_pool.py imports each and checks that what it sets is listed here.
SET_BY_IMPORTS = {
    "tensorflow": {"ENABLE_RUNTIME_UPTIME_TELEMETRY", "HDF5_PLUGIN_PATH", "TF2_BEHAVIOR", "TPU_ML_PLATFORM",
                   "TPU_ML_PLATFORM_VERSION", "TPU_SKIP_MDS_QUERY", "TF_CPP_MIN_LOG_LEVEL"},
    "torch._inductor": {"TORCHINDUCTOR_CACHE_DIR", "_TORCHINDUCTOR_PYOBJECT_TENSOR_DATA_PTR"},
    "ray": {"RAY_CLIENT_MODE"},
}
_TRANSIENT_VARIABLES |= set().union(*SET_BY_IMPORTS.values())


def _fingerprint(settings: dict) -> str:
    """What a warm worker must share with a job to run it. A setting left at its default (threads 0, none)
    is the same as one not given: a conversion and the prediction after it share their worker."""
    environment = {k: v for k, v in os.environ.items() if k not in _TRANSIENT_VARIABLES}
    return json.dumps([sys.executable, environment, {k: v for k, v in settings.items() if v}], sort_keys=True)


class Worker:
    """One worker process and its pipes; `run` sends it a job and waits for the reply."""

    def __init__(self, family: str, fingerprint: str, jobs: int = 0) -> None:
        self.family, self.fingerprint, self.jobs_done = family, fingerprint, 0
        self.rss_mb = 0.0  # resident after its last job, as it replied
        self.last_used = time.monotonic()  # when its last job ended: the least recently used idle one goes first
        # its own temporary folder, removed with it: what a framework leaves in TMPDIR (a SavedModel's tmp*/assets
        # when the disk fills, a session file) goes with the worker, and with a killed run's next run
        self._temporary = contextlib.ExitStack()
        temporary = self._temporary.enter_context(scratch_folder("rosetta-worker-"))
        env = execution.child_environment({execution._IN_WORKER: family or "1", "TMPDIR": str(temporary)})
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        self.log = tempfile.TemporaryFile(mode="w+b", prefix="rosetta-worker-")  # its stderr, for a crash's last line
        # -P (Python 3.11+): do not put the current folder first on sys.path, where a user's own keras.py or
        # tensorflow.py would shadow the framework inside the worker.
        safe_path = ["-P"] if sys.version_info >= (3, 11) else []
        command = [sys.executable, *safe_path, "-m", "rosetta.execution.worker"] + (["--jobs", str(jobs)] if jobs else [])
        try:
            self.process = popen_for_life(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
                                          env=env)
        except BaseException:
            self._temporary.close()
            raise

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
            raise WorkerTimedOut(f"{what} timed out after {timeout:g} s (worker killed)")
        if not line:
            died = WorkerCrashed(f"{what} {self._death()}")
            died.detail = self.stderr()
            raise died
        self.jobs_done += 1
        self.last_used = time.monotonic()
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
        self._temporary.close()


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
                execution.save_npz(Path(request["arrays"]), arrays, sync=False)
            with self._family_lock(job.isolation):
                worker = self._worker(job)
                fresh = job.isolation == execution.FRESH
                try:
                    reply = worker.run(request, job.what or job.entry, timeout)
                except BaseException:  # crashed, hung, or Ctrl-C while waiting: this worker is gone
                    worker.kill()
                    self.workers.pop(job.isolation, None)
                    raise
                worker.rss_mb = reply.get("rss_mb", 0.0)
                if fresh or reply.get("retire") or worker.jobs_done >= MAX_JOBS or worker.rss_mb > MAX_RSS_MB:
                    self.workers.pop(job.isolation, None)
                    worker.stop()
            self._trim()
            if not reply["ok"]:
                kind = EnvironmentFailed if reply.get("environment") else _error_class(reply.get("kind", ""))
                failed = kind(f"{job.what or job.entry} failed: {reply['error']}")
                failed.detail = reply.get("detail", "")  # the worker's traceback, for -v
                raise failed
            out = execution.load_npz(Path(request["out"])) if reply.get("arrays") else {}
            result = execution.unpack(reply["result"], out)
        return execution.Outcome(result, "fresh worker" if fresh else "worker", reply["seconds"], reply["peak_rss_mb"])

    def _trim(self, budget_mb: float | None = None) -> None:
        """Stop idle warm workers, the least recently used first, until the idle ones hold under `budget_mb`
        together (IDLE_BUDGET_MB); a worker running a job (its family's lock held by another thread) is left alone."""
        budget_mb = IDLE_BUDGET_MB if budget_mb is None else budget_mb
        idle = []
        with self.lock:
            candidates = sorted(self.workers.items(), key=lambda item: item[1].last_used)
        for family, worker in candidates:
            lock = self._family_lock(family)
            if lock.acquire(blocking=False):
                idle.append((family, worker, lock))
        try:
            held = sum(worker.rss_mb for _, worker, _ in idle)
            for family, worker, _ in idle:
                if held <= budget_mb:
                    break
                with self.lock:
                    if self.workers.get(family) is worker:
                        self.workers.pop(family)
                worker.stop()
                held -= worker.rss_mb
        finally:
            for _, _, lock in idle:
                lock.release()

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

    def interrupt(self, prefix: str, grace: float = 1.0) -> None:
        """Stop now the workers of the families starting with `prefix` (the slots of a run that Ctrl-C stops),
        instead of waiting for their jobs to finish: SIGTERM, which a worker handles as Ctrl-C (its temporary
        folders removed, its own workers stopped), then SIGKILL for any still alive after `grace` seconds. The
        threads waiting on them see their death at once."""
        with self.lock:
            running = [worker for family, worker in self.workers.items() if family.startswith(prefix)]
        for worker in running:
            if worker.alive():
                worker.process.terminate()
        deadline = time.monotonic() + grace
        for worker in running:
            try:
                worker.process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                worker.process.kill()

    def shutdown(self) -> None:
        """Each worker asked to finish (killed if it does not within a few seconds)."""
        self._end(Worker.stop)

    def kill_all(self) -> None:
        self._end(Worker.kill)

    def _end(self, how) -> None:
        with self.lock:
            workers = list(self.workers.values())
        for worker in workers:  # kept in self.workers until ended, for a kill_all that cuts a shutdown short
            how(worker)
        with self.lock:
            self.workers = {}


def _error_class(name: str) -> type:
    """The rosetta error class a worker raised (its kind crosses the pipe by name: UntrustedModel, Unsupported,
    ...), so that the caller can tell them apart as if the job had run in its own process."""
    import rosetta.errors as errors

    found = getattr(errors, name, None) if name else None
    return found if isinstance(found, type) and issubclass(found, RosettaError) else RosettaError


POOLS = Pools()


def _shutdown_at_exit() -> None:
    """The run is over (`written:` printed, the exit status known): a Ctrl-C while the workers finish kills them
    at once, instead of printing "Exception ignored in atexit callback ... KeyboardInterrupt"."""
    try:
        POOLS.shutdown()
    except KeyboardInterrupt:
        with contextlib.suppress(ValueError):  # not the main thread: no handler to set
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        POOLS.kill_all()


atexit.register(_shutdown_at_exit)
