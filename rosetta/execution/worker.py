"""The worker process: reads jobs on stdin, one JSON line each, runs them, and answers one JSON line each.

    python -P -m rosetta.execution.worker [--jobs N]

Request: {"entry", "argument", "arrays": IN.npz or null, "out": OUT.npz}. Reply, on the stdout this process
had when it started (framework output printed to stdout goes to stderr instead, so it cannot garble a
reply): {"ok": true, "result", "arrays": bool, "peak_rss_mb", "rss_mb", "seconds", "retire"} or {"ok": false,
"error": one line, "environment": whether the machine failed it (out of memory, disk full), "detail": traceback}. After each job the worker puts back what a job may change: the
environment, the current folder, and each framework's registered state (rosetta.execution.after_each_job);
its peak memory is reset before each job, so each reply's peak is that job's. A worker has no network
(`refuse_network`): a job that reaches for a host other than this machine fails at once, with that reason.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
import traceback
from pathlib import Path

import numpy as np

import rosetta.execution as execution
from rosetta.errors import RosettaError, environment_cause, one_line
from rosetta.extras import framework_missing


def _status_mb(field: str) -> float | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def reset_peak_rss() -> None:
    """Start a new high-water mark (Linux: writing 5 to clear_refs resets VmHWM to the current RSS)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


def peak_rss_mb(children_before: float = 0.0) -> float:
    """Peak resident memory of this job: this process's VmHWM (reset before the job), or that of a child it
    waited for (a converter's own subprocess), if a child of this job went higher. Not getrusage(RUSAGE_SELF):
    Linux keeps ru_maxrss across execve, so a worker would report its parent's high-water mark."""
    own = _status_mb("VmHWM")
    if own is None:  # not Linux
        own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return max(own, children if children > children_before else 0.0)


def _run_one(request: dict) -> dict:
    arrays = execution.load_npz(Path(request["arrays"])) if request.get("arrays") else {}
    argument = execution.unpack(request["argument"], arrays)
    children_before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    reset_peak_rss()
    start = time.perf_counter()
    try:
        result = execution.call_entry(request["entry"], argument)
    except Exception as error:  # one line for the row; the traceback for -v
        error = framework_missing(error) or error  # a framework or converter not installed here: what installs it
        cause = environment_cause(error)  # the machine failing (out of memory, disk full), not the job's answer
        return {"ok": False, "error": cause or (str(error) if isinstance(error, RosettaError) else one_line(error)),
                "environment": bool(cause), "detail": traceback.format_exc(limit=-3),
                "kind": type(error).__name__ if isinstance(error, RosettaError) else ""}
    seconds = time.perf_counter() - start
    out_arrays: dict[str, np.ndarray] = {}
    packed = execution.pack(result, out_arrays)
    if out_arrays:
        execution.save_npz(Path(request["out"]), out_arrays, sync=False)
    return {"ok": True, "result": packed, "arrays": bool(out_arrays), "seconds": seconds,
            "peak_rss_mb": round(peak_rss_mb(children_before), 1)}


def _reset(environment: dict, folder: str) -> None:
    os.environ.clear()
    os.environ.update(environment)
    os.chdir(folder)
    for reset in execution._after_each_job:
        reset()


_LOOPBACK = ("localhost", "127.", "::1", "0.0.0.0")


def _local(host) -> bool:
    """Whether `host` (a name or address, str or bytes, as socket calls take it) is this machine."""
    if isinstance(host, bytes):
        host = host.decode("ascii", errors="replace")
    return host is None or str(host) in ("", "::") or str(host).startswith(_LOOPBACK)


def refuse_network() -> None:
    """rosetta runs without network (nothing is downloaded at run time). A library that reaches for a host
    (onnx2tf did, on a plain MaxPool case) would otherwise wait on a DNS lookup or a connect timeout on a
    machine without network, and may retry: here resolving or connecting to any host but this machine fails at
    once, with an error that names the host. Local sockets (loopback, Unix) are left alone."""
    import socket

    resolve, connect, connect_ex = socket.getaddrinfo, socket.socket.connect, socket.socket.connect_ex

    def refused(host) -> str:
        return f"rosetta runs without network: a job tried to reach {host!s} (nothing is downloaded at run time)"

    def getaddrinfo(host, *args, **kwargs):
        if not _local(host):
            raise socket.gaierror(socket.EAI_NONAME, refused(host))
        return resolve(host, *args, **kwargs)

    def checked(method):
        def guarded(self, address):
            if self.family in (socket.AF_INET, socket.AF_INET6) and not _local(address[0]):
                raise ConnectionRefusedError(refused(address[0]))
            return method(self, address)
        return guarded

    socket.getaddrinfo = getaddrinfo
    socket.socket.connect, socket.socket.connect_ex = checked(connect), checked(connect_ex)


def reach_job(argument: dict) -> dict:
    """Job: try to reach argument["host"] as a library would (urllib); {"error", "seconds"}: how a worker
    answers a job that reaches for the network (tests)."""
    import urllib.request

    start = time.perf_counter()
    try:
        urllib.request.urlopen(f"http://{argument['host']}/", timeout=30)
        error = ""
    except Exception as raised:  # noqa: BLE001 - the answer is the error
        error = one_line(raised)
    return {"error": error, "seconds": time.perf_counter() - start}


def serve(jobs: int) -> int:
    refuse_network()
    replies = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # print() from a framework lands on stderr, never in a reply
    environment, folder = dict(os.environ), os.getcwd()
    done = 0
    for line in sys.stdin:
        reply = _run_one(json.loads(line))
        done += 1
        try:
            _reset(environment, folder)
        except Exception as error:  # a reset that fails: this worker cannot be trusted with another job
            execution.retire_this_worker(f"reset failed: {one_line(error)}")
        reply["rss_mb"] = round(_status_mb("VmRSS") or 0.0, 1)
        reply["retire"] = execution._retire["reason"]
        replies.write(json.dumps(reply) + "\n")
        replies.flush()
        if reply["retire"] or (jobs and done >= jobs):
            break
    return 0


def main(argv: list[str]) -> int:
    if not execution.started_by_pool():
        print("rosetta.execution.worker: started by rosetta's execution layer only", file=sys.stderr)
        return 2
    jobs = int(argv[argv.index("--jobs") + 1]) if "--jobs" in argv else 0
    from rosetta.processes import Terminated, raise_on_sigterm

    raise_on_sigterm()  # a pool that stops this worker early (Pools.interrupt): the job's cleanup runs, then exit
    try:
        return serve(jobs)
    except KeyboardInterrupt as stopped:
        return 143 if isinstance(stopped, Terminated) else 130


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
