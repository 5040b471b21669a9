"""Data-parallel training timing (`rosetta bench --workers N`): the same training cell on 1 and on N workers,
each worker with the workload's batch (weak scaling, as data-parallel training is run), reporting throughput,
throughput per worker and scaling efficiency (N-worker throughput / (N x 1-worker throughput)).

Each framework through its maintained path, launched as processes of their own:
- PyTorch: `torchrun --standalone` + DistributedDataParallel (gloo on the CPU, NCCL on CUDA), one process
  per worker, each with its own shard of the data; rank 0's step time is the global step (DDP's all-reduce
  ends every backward);
- Keras 3: `keras.distribution.DataParallel` on the JAX backend, one process holding N devices (on the CPU,
  XLA_FLAGS=--xla_force_host_platform_device_count=N), the global batch N x the workload's split across them.
The 1-worker run goes through the same path, so the efficiency compares like with like. MXNet's kvstore and
TensorFlow's MirroredStrategy with Keras 3 have no maintained path: their rows say so (NO_PATH).

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

DATA_PARALLEL = {"torch": "torchrun + DistributedDataParallel",
                 "keras": "keras.distribution.DataParallel (JAX backend)"}
NO_PATH = {"mxnet": "MXNet 1.9's kvstore data parallelism is unmaintained (Apache retired MXNet in 2023); "
                    "rosetta does not drive it",
           "tensorflow": "TensorFlow's MirroredStrategy does not drive Keras 3 models",
           "onnxruntime": "ONNX Runtime does not train these models"}
LAUNCH_TIMEOUT_S = 1800


def time_parallel(cell, workload, options: dict) -> dict:
    """Time `cell` (a BenchCell with workers > 1) with the trainer `options` on 1 worker and on cell.workers:
    the N-worker run's timing, losses, version and settings, and {"parallel": figures}."""
    from rosetta.frameworks.speed import SettingUnavailable, Speed

    if cell.framework not in DATA_PARALLEL:
        raise SettingUnavailable(f"--workers {cell.workers}: no data-parallel path for {cell.framework}: "
                               + NO_PATH.get(cell.framework, "not written"))
    speed = Speed.from_json(cell.speed)
    if speed.cuda_graphs or speed.resident_data:
        raise SettingUnavailable(f"--workers {cell.workers} with --cuda-graphs or --resident-data: rosetta's "
                                 "data-parallel launchers step on host batches, without CUDA graphs")
    runs = {n: _launch(cell, n, options) for n in (1, cell.workers)}
    single, many = runs[1], runs[cell.workers]
    single_rate = workload.batch / single["step_seconds"]["median_s"]
    rate = cell.workers * workload.batch / many["step_seconds"]["median_s"]
    figures = {"workers": cell.workers, "how": DATA_PARALLEL[cell.framework] + _backend(cell),
               "samples_per_s": rate, "per_worker_samples_per_s": rate / cell.workers,
               "single_worker_samples_per_s": single_rate, "efficiency": rate / (cell.workers * single_rate),
               "threads_per_worker": _threads(cell)}
    return {**many, "parallel": figures}


def _backend(cell) -> str:
    if cell.framework == "torch":
        return ", NCCL" if cell.device == "cuda" else ", gloo"
    return ""


def _threads(cell) -> int:
    """CPU threads per worker: --threads if given, else this machine's cores shared out (at least one)."""
    return cell.threads or max(1, (os.cpu_count() or 1) // cell.workers)


def _launch(cell, workers: int, options: dict) -> dict:
    from rosetta.execution import child_environment
    from rosetta.processes import die_with_parent
    from rosetta.scratch import scratch_folder

    with scratch_folder("rosetta-parallel-") as scratch:
        argument, result = Path(scratch) / "argument.json", Path(scratch) / "result.json"
        argument.write_text(json.dumps({"cell": asdict(cell), "workers": workers, "options": options}))
        env = child_environment({"OMP_NUM_THREADS": str(_threads(cell))})
        module = ["-m", "rosetta.bench.parallel", cell.framework, str(argument), str(result)]
        if cell.framework == "torch":
            command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nnodes=1",
                       f"--nproc_per_node={workers}", *module]
        else:
            command = [sys.executable, *module]
            env.update(KERAS_BACKEND="jax", XLA_FLAGS=f"--xla_force_host_platform_device_count={workers}")
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


def _torch_worker(argument: dict) -> dict | None:
    """One torchrun process: its shard of the data, the trainer's module wrapped in DDP; rank 0 reports."""
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    from rosetta.bench.workloads import BenchCell, workload_batches
    from rosetta.train.base import build_trainer

    cell, rank = BenchCell(**argument["cell"]), int(os.environ["RANK"])
    torch.set_num_threads(_threads(cell))
    if cell.device == "cuda":  # device-only: one GPU per process
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    dist.init_process_group("nccl" if cell.device == "cuda" else "gloo")
    try:
        workload = cell.workload_as_run()
        batches, _ = workload_batches(workload, cell.timed_steps() + cell.warmup, cell.data, cell.seed + rank)
        trainer = build_trainer(cell.framework, cell.artifact, argument["options"])
        trainer.forward = DistributedDataParallel(trainer.module)
        if trainer.speed.compile:
            trainer.forward = torch.compile(trainer.forward)
        found = _time(trainer, batches, cell.warmup)
        found["settings"]["data parallel"] = f"DDP, {dist.get_world_size()} processes, {dist.get_backend()}"
        return found if rank == 0 else None
    finally:
        dist.destroy_process_group()


def _keras_worker(argument: dict) -> dict:
    """One process holding N XLA devices: Keras' DataParallel splits each global batch across them."""
    import numpy as np

    from rosetta.bench.workloads import BenchCell, workload_batches
    from rosetta.frameworks.keras import import_keras
    from rosetta.train.base import build_trainer

    cell, workers = BenchCell(**argument["cell"]), argument["workers"]
    keras = import_keras()
    devices = keras.distribution.list_devices("gpu" if cell.device == "cuda" else "cpu")
    if len(devices) < workers:
        raise RosettaError(f"Keras sees {len(devices)} devices, not {workers}")
    keras.distribution.set_distribution(keras.distribution.DataParallel(devices=devices[:workers]))
    workload = cell.workload_as_run()
    shards = [workload_batches(workload, cell.timed_steps() + cell.warmup, cell.data, cell.seed + rank)[0]
              for rank in range(workers)]
    batches = []
    for step in zip(*shards):  # the global batch: every worker's shard, concatenated
        feeds = {name: np.concatenate([feeds[name] for feeds, _ in step]) for name in step[0][0]}
        batches.append((feeds, np.concatenate([labels for _, labels in step])))
    trainer = build_trainer("keras", cell.artifact, argument["options"])
    found = _time(trainer, batches, cell.warmup)
    found["settings"]["data parallel"] = f"keras.distribution.DataParallel over {workers} {devices[0].split(':')[0]} devices"
    return found


def main(arguments: list[str]) -> int:
    framework, argument, result = arguments
    try:
        found = (_torch_worker if framework == "torch" else _keras_worker)(json.loads(Path(argument).read_text()))
    except Exception as error:  # the launcher reads the last line
        print(f"Error: {one_line(error)}", file=sys.stderr)
        return 1
    if found is not None:
        Path(result).write_text(json.dumps(found))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
