"""Worker processes: run one conversion or one prediction in a fresh interpreter.

Frameworks that should not share rosetta's process (TensorFlow, Keras, MXNet: heavy imports, their own
thread pools and allocators, numpy shims) run here. Arrays cross as .npz files, artifacts as folders with
manifests: never pickles. A worker that fails reports one line on stderr; one that crashes (segfault,
out-of-memory kill) or hangs (timeout) is reported by the parent as a RosettaError saying so, so the cell
becomes a FAIL row and the rest of the run goes on.

    python -m rosetta.worker predict FRAMEWORK FOLDER IN.npz OUT.npz OPTIONS_JSON
    python -m rosetta.worker convert SOURCE_FORMAT TARGET_FORMAT SOURCE_FOLDER OUT_FOLDER OPTIONS_JSON
    python -m rosetta.worker time FRAMEWORK FOLDER IN.npz OUT.json OPTIONS_JSON   (OPTIONS: repeats, warmup, ...)
    python -m rosetta.worker train FRAMEWORK FOLDER IN.npz OUT.npz OPTIONS_JSON   (IN: batches; FOLDER - = reference)
    python -m rosetta.worker call rosetta.MODULE:FUNCTION ARGUMENT_JSON OUT.json   (a self-contained job, e.g. a bench cell)

A conversion worker records its wall time and its own peak resident memory in the manifest ("stats").
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import subprocess
import sys
import traceback
from pathlib import Path
from typing import Iterator

import numpy as np

from rosetta.errors import RosettaError
from rosetta.execution import DEFAULT_TIMEOUT_S, load_npz
from rosetta.processes import die_with_parent
from rosetta.scratch import scratch_folder

IN_WORKER = "ROSETTA_WORKER"
ERROR_PREFIX = "rosetta-worker: error: "
VERSION_KEY = "__framework_version__"  # in a predict worker's output: the version that actually ran
RESULT_KEY = "__result__"  # in a train worker's output: the JSON fields beside the arrays


def run_worker(argv: list[str], what: str, timeout: float | None = None) -> None:
    """Run `python -m rosetta.worker ARGV`; raise RosettaError with one line if it fails, crashes or hangs."""
    env = dict(os.environ, **{IN_WORKER: "1"})
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    timeout = timeout or float(os.environ.get("ROSETTA_WORKER_TIMEOUT", DEFAULT_TIMEOUT_S))
    # -P (Python 3.11+): do not put the current folder first on sys.path, where a user's own keras.py or
    # tensorflow.py would shadow the framework inside the worker.
    safe_path = ["-P"] if sys.version_info >= (3, 11) else []
    try:  # the worker dies with this process, even by SIGKILL (Ctrl-C, SIGTERM: subprocess.run kills it)
        done = subprocess.run([sys.executable, *safe_path, "-m", "rosetta.worker", *argv], capture_output=True,
                              text=True, timeout=timeout, env=env, preexec_fn=die_with_parent())
    except subprocess.TimeoutExpired:
        raise RosettaError(f"{what} timed out after {timeout:g} s (worker killed)") from None
    if done.returncode == 0:
        return
    if done.returncode < 0:
        name = signal.Signals(-done.returncode).name
        hint = " (killed: out of memory?)" if name == "SIGKILL" else ""
        raise RosettaError(f"{what} crashed: worker died with {name}{hint}")
    lines = [line for line in done.stderr.splitlines() if line.startswith(ERROR_PREFIX)]
    message = lines[-1][len(ERROR_PREFIX):] if lines else (done.stderr.strip().splitlines() or ["no message"])[-1]
    raise RosettaError(f"{what} failed: {message}")


@contextlib.contextmanager
def _worker_on_feeds(command: str, framework: str, folder: Path, feeds: dict[str, np.ndarray], options: dict,
                     output_name: str, what: str) -> Iterator[Path]:
    """Hand `feeds` to a worker `command`; yields the file it wrote, valid inside the block."""
    with scratch_folder("rosetta-io-") as scratch:
        inputs, outputs = Path(scratch) / "in.npz", Path(scratch) / output_name
        np.savez(inputs, **feeds)
        run_worker([command, framework, str(folder), str(inputs), str(outputs), json.dumps(options)], what)
        yield outputs


def predict_in_worker(framework: str, folder: Path, feeds: dict[str, np.ndarray], options: dict) -> dict[str, np.ndarray]:
    with _worker_on_feeds("predict", framework, folder, feeds, options, "out.npz", f"{framework} inference") as out:
        return load_npz(out)


def time_in_worker(framework: str, folder: Path, feeds: dict[str, np.ndarray], options: dict) -> dict:
    with _worker_on_feeds("time", framework, folder, feeds, options, "out.json", f"{framework} timing") as out:
        return json.loads(out.read_text())


def train_in_worker(framework: str, folder, batches: list, options: dict) -> dict:
    """rosetta.train.base.run_training in a worker: batches in, losses/parameters/timing/memory out."""
    from rosetta.train.base import batches_to_arrays

    what = f"{framework} training"
    with _worker_on_feeds("train", framework, folder, batches_to_arrays(batches), options, "out.npz", what) as out:
        arrays = load_npz(out)
    result = json.loads(str(arrays.pop(RESULT_KEY)))
    result.update(arrays)
    return result


def call_in_worker(function: str, argument: dict, what: str, timeout: float | None = None) -> dict:
    """function(argument) -> JSON-able dict, run in a worker; the worker adds its peak memory (peak_rss_mb)."""
    with scratch_folder("rosetta-io-") as scratch:
        out = Path(scratch) / "out.json"
        run_worker(["call", function, json.dumps(argument), str(out)], what, timeout)
        return json.loads(out.read_text())


def convert_in_worker(source: str, target: str, source_folder: Path, out: Path, options: dict):
    from rosetta.convert.manifest import Manifest

    run_worker(["convert", source, target, str(source_folder), str(out), json.dumps(options)],
               f"conversion {source} -> {target}")
    return Manifest.read(out)


def peak_rss_mb() -> float:
    """Peak resident memory of this worker and of the processes it waited for, in MiB.

    Not getrusage(RUSAGE_SELF): Linux keeps ru_maxrss across execve, so a worker would report its parent's
    high-water mark. /proc/self/status VmHWM belongs to this address space only. Children (tf2onnx's command
    line) are forked from the small worker, so their ru_maxrss is theirs."""
    own = 0.0
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                own = int(line.split()[1]) / 1024
    except OSError:  # not Linux: fall back to getrusage
        own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return max(own, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)


def _main(argv: list[str]) -> int:
    command, *rest = argv
    if command == "time":
        framework, folder, inputs, outputs, options = rest
        from rosetta.bench.inference import time_predict

        result = time_predict(framework, Path(folder), load_npz(Path(inputs)), **json.loads(options))
        Path(outputs).write_text(json.dumps(result))
    elif command == "predict":
        framework, folder, inputs, outputs, options = rest
        from rosetta.frameworks import load_runner

        runner = load_runner(framework, Path(folder), **json.loads(options))
        result = {name: np.asarray(value) for name, value in runner.predict(load_npz(Path(inputs))).items()}
        np.savez(outputs, **result, **{VERSION_KEY: np.array(runner.version())})
    elif command == "train":
        framework, folder, inputs, outputs, options = rest
        from rosetta.train.base import arrays_to_batches, run_training

        options = json.loads(options)
        warmup, keep = options.pop("warmup", 0), options.pop("keep_parameters", True)
        result = run_training(framework, folder, arrays_to_batches(load_npz(Path(inputs))), options, warmup, keep)
        arrays = {key: result.pop(key) for key in ("losses", "parameters") if key in result}
        result["peak_rss_mb"] = round(peak_rss_mb(), 1)
        np.savez(outputs, **arrays, **{RESULT_KEY: np.array(json.dumps(result))})
    elif command == "call":
        function, argument, outputs = rest
        module_name, _, name = function.partition(":")
        if not module_name.startswith("rosetta."):
            raise RosettaError(f"worker call: {function} is not a rosetta function")
        import importlib

        result = getattr(importlib.import_module(module_name), name)(json.loads(argument))
        result["peak_rss_mb"] = round(peak_rss_mb(), 1)
        Path(outputs).write_text(json.dumps(result))
    elif command == "convert":
        source, target, source_folder, out, options = rest
        from rosetta.convert.registry import get_conversion
        from rosetta.convert.store import convert_step

        # inside a worker the step runs in this process; it times itself, the worker adds its peak memory
        manifest = convert_step(get_conversion(source, target), Path(source_folder), Path(out), json.loads(options))
        manifest.stats.update(peak_rss_mb=round(peak_rss_mb(), 1), process="worker")
        manifest.write(Path(out))
    else:
        raise RosettaError(f"unknown worker command {command!r}")
    return 0


def main() -> int:
    try:
        return _main(sys.argv[1:])
    except RosettaError as error:
        print(f"{ERROR_PREFIX}{error}", file=sys.stderr)
        return 2
    except Exception as error:  # report one line; the traceback goes above it for -v
        traceback.print_exc()
        first = (str(error).strip().splitlines() or [""])[0]
        print(f"{ERROR_PREFIX}{type(error).__name__}: {first}", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
