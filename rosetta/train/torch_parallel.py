"""PyTorch's data-parallel training path (`rosetta bench --workers N`, rosetta.bench.parallel): `torchrun
--standalone` + DistributedDataParallel (gloo on the CPU, NCCL on CUDA), one process per worker, each with its
own shard of the data; rank 0's step time is the global step (DDP's all-reduce ends every backward)."""

from __future__ import annotations

import os
import sys


class TorchDataParallel:
    how = "torchrun + DistributedDataParallel"

    @staticmethod
    def backend(device: str) -> str:
        return ", NCCL" if device == "cuda" else ", gloo"

    @staticmethod
    def command(workers: int, module: list[str]) -> tuple[list[str], dict]:
        """The command that runs `python MODULE...` on `workers` processes, and what it adds to their environment."""
        return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nnodes=1",
                f"--nproc_per_node={workers}", *module], {}

    @staticmethod
    def run(cell, workers: int, options: dict, threads: int, batches_of, timed) -> dict | None:
        """One torchrun process: its shard of the data (batches_of(rank)), the trainer's module wrapped in DDP,
        timed by timed(trainer, batches); rank 0 reports. `cell`: framework, artifact and device of the run."""
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel

        from rosetta.train.base import build_trainer

        rank = int(os.environ["RANK"])
        torch.set_num_threads(threads)
        if cell.device == "cuda":  # device-only: one GPU per process
            torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
        dist.init_process_group("nccl" if cell.device == "cuda" else "gloo")
        try:
            batches = batches_of(rank)
            trainer = build_trainer(cell.framework, cell.artifact, options)
            trainer.forward = DistributedDataParallel(trainer.module)
            if trainer.speed.compile:
                trainer.forward = torch.compile(trainer.forward)
            found = timed(trainer, batches)
            found["settings"]["data parallel"] = f"DDP, {dist.get_world_size()} processes, {dist.get_backend()}"
            return found if rank == 0 else None
        finally:
            dist.destroy_process_group()
