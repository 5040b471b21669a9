"""Data-parallel training timing (`rosetta bench --workers N`): the same training cell on 1 and on N workers,
each worker with the workload's batch (weak scaling, as data-parallel training is run), reporting throughput,
throughput per worker and scaling efficiency (N-worker throughput / (N x 1-worker throughput)).

Each framework through its maintained path, launched as processes of their own: its framework row names it
(rosetta.frameworks Framework.data_parallel: PyTorch's torchrun + DistributedDataParallel in
rosetta.train.torch_parallel, Keras 3's keras.distribution.DataParallel on JAX in rosetta.train.keras_parallel)
or says why there is none (Framework.no_data_parallel: MXNet's kvstore, TensorFlow's MirroredStrategy with
Keras 3; those rows say so). The 1-worker run goes through the same path, so the efficiency compares like
with like. This module prepares each worker's data and times it; the framework's class does the rest.

`python -m rosetta.bench.parallel FRAMEWORK ARGUMENT.json RESULT.json` is what the launchers run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

from rosetta.errors import RosettaError, one_line

LAUNCH_TIMEOUT_S = 1800


def time_parallel(cell, workload, options: dict) -> dict:
    """Time `cell` (a BenchCell with workers > 1) with the trainer `options` on 1 worker and on cell.workers:
    the N-worker run's timing, losses, version and settings, and {"parallel": figures}."""
    from rosetta.frameworks import data_parallel
    from rosetta.frameworks.speed import SettingUnavailable, Speed

    launcher = data_parallel(cell.framework)
    if isinstance(launcher, str):  # the reason it has none
        raise SettingUnavailable(f"workers={cell.workers}: no data-parallel path for {cell.framework}: " + launcher)
    speed = Speed.from_json(cell.speed)
    if speed.cuda_graphs or speed.resident_data:
        raise SettingUnavailable(f"workers={cell.workers} with cuda_graphs=True or resident_data=True: rosetta's "
                                 "data-parallel launchers step on host batches, without CUDA graphs")
    runs = {n: _launch(cell, n, options) for n in (1, cell.workers)}
    single, many = runs[1], runs[cell.workers]
    single_rate = workload.batch / single["step_seconds"]["median_s"]
    rate = cell.workers * workload.batch / many["step_seconds"]["median_s"]
    figures = {"workers": cell.workers, "how": launcher.how + launcher.backend(cell.device),
               "samples_per_s": rate, "per_worker_samples_per_s": rate / cell.workers,
               "single_worker_samples_per_s": single_rate, "efficiency": rate / (cell.workers * single_rate),
               "threads_per_worker": _threads(cell)}
    return {**many, "parallel": figures}


def _threads(cell) -> int:
    """CPU threads per worker: --threads if given, else this machine's cores shared out (at least one)."""
    return cell.threads or max(1, (os.cpu_count() or 1) // cell.workers)


def _launch(cell, workers: int, options: dict) -> dict:
    from rosetta.execution import child_environment
    from rosetta.frameworks import data_parallel
    from rosetta.processes import die_with_parent
    from rosetta.scratch import scratch_folder

    with scratch_folder("rosetta-parallel-") as scratch:
        argument, result = Path(scratch) / "argument.json", Path(scratch) / "result.json"
        argument.write_text(json.dumps({"cell": asdict(cell), "workers": workers, "options": options}))
        env = child_environment({"OMP_NUM_THREADS": str(_threads(cell))})
        module = ["-m", "rosetta.bench.parallel", cell.framework, str(argument), str(result)]
        command, added = data_parallel(cell.framework).command(workers, module)
        env.update(added)
        try:
            done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=LAUNCH_TIMEOUT_S,
                                  preexec_fn=die_with_parent())
        except subprocess.TimeoutExpired:
            raise RosettaError(f"{cell.framework} on {workers} workers timed out after {LAUNCH_TIMEOUT_S} s") from None
        if done.returncode != 0 or not result.is_file():
            lines = [line for line in done.stderr.splitlines() if line.strip() and "Warning" not in line]
            error = next((line for line in reversed(lines) if "Error" in line), lines[-1] if lines else "no output")
            raise RosettaError(f"{cell.framework} on {workers} workers failed (exit {done.returncode}): {error[:300]}")
        return json.loads(result.read_text())


def _time(trainer, batches: list, warmup: int) -> dict:
    from rosetta.timing import time_steps

    timing, losses = time_steps(lambda index: trainer.step(*batches[index]), len(batches) - warmup, warmup,
                                trainer.synchronize)
    return {"step_seconds": timing.to_json(), "losses": [float(loss) for loss in losses],
            "version": trainer.version(), "settings": trainer.settings()}


def _worker(framework: str, argument: dict) -> dict | None:
    """One launched process: the cell's data, sharded by rank (each worker its own seed), timed through the
    framework's data-parallel class (rosetta.frameworks Framework.data_parallel)."""
    from rosetta.bench.workloads import BenchCell, workload_batches
    from rosetta.frameworks import data_parallel

    cell = BenchCell(**argument["cell"])

    def batches_of(rank: int) -> list:
        workload = cell.workload_as_run()
        return workload_batches(workload, cell.timed_steps() + cell.warmup, cell.data, cell.seed + rank)[0]

    return data_parallel(framework).run(cell, argument["workers"], argument["options"], _threads(cell), batches_of,
                                        lambda trainer, batches: _time(trainer, batches, cell.warmup))


def main(arguments: list[str]) -> int:
    framework, argument, result = arguments
    try:
        found = _worker(framework, json.loads(Path(argument).read_text()))
    except Exception as error:  # the launcher reads the last line
        print(f"Error: {one_line(error)}", file=sys.stderr)
        return 1
    if found is not None:
        Path(result).write_text(json.dumps(found))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
