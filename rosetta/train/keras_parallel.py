"""Keras 3's data-parallel training path (`rosetta bench --workers N`, rosetta.bench.parallel):
`keras.distribution.DataParallel` on the JAX backend, one process holding N devices (on the CPU,
XLA_FLAGS=--xla_force_host_platform_device_count=N), the global batch N x the workload's split across them."""

from __future__ import annotations

import sys

from rosetta.errors import RosettaError


class KerasDataParallel:
    how = "keras.distribution.DataParallel (JAX backend)"

    @staticmethod
    def backend(device: str) -> str:
        return ""

    @staticmethod
    def command(workers: int, module: list[str]) -> tuple[list[str], dict]:
        """The command that runs `python MODULE...` holding `workers` devices, and what it adds to its environment."""
        return [sys.executable, *module], {"KERAS_BACKEND": "jax",
                                           "XLA_FLAGS": f"--xla_force_host_platform_device_count={workers}"}

    @staticmethod
    def run(cell, workers: int, options: dict, threads: int, batches_of, timed) -> dict:
        """One process holding N XLA devices: Keras' DataParallel splits each global batch (every worker's shard,
        batches_of(rank), concatenated) across them; timed by timed(trainer, batches)."""
        import numpy as np

        from rosetta.frameworks.keras import import_keras
        from rosetta.train.base import build_trainer

        keras = import_keras()
        devices = keras.distribution.list_devices("gpu" if cell.device == "cuda" else "cpu")
        if len(devices) < workers:
            raise RosettaError(f"Keras sees {len(devices)} devices, not {workers}")
        keras.distribution.set_distribution(keras.distribution.DataParallel(devices=devices[:workers]))
        shards = [batches_of(rank) for rank in range(workers)]
        batches = []
        for step in zip(*shards):  # the global batch: every worker's shard, concatenated
            feeds = {name: np.concatenate([feeds[name] for feeds, _ in step]) for name in step[0][0]}
            batches.append((feeds, np.concatenate([labels for _, labels in step])))
        trainer = build_trainer("keras", cell.artifact, options)
        found = timed(trainer, batches)
        found["settings"]["data parallel"] = (f"keras.distribution.DataParallel over {workers} "
                                              f"{devices[0].split(':')[0]} devices")
        return found
