"""Inference time of a converted artifact in its own framework, timed inside that framework's process.

For frameworks that run in worker processes the whole measurement happens in the worker, so process
start-up and .npz transfer are never timed. Same batch and the same thread count for every framework.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from rosetta.bench.timing import time_call


def time_predict(framework: str, folder: Path, feeds: dict[str, np.ndarray], repeats: int = 10, warmup: int = 2,
                 threads: int = 0, model: str = "", seed: int = 0, **runner_options) -> dict:
    """Median time of runner.predict(feeds). predict returns host numpy arrays, so every timed call ends with
    the device's work done and copied back. Folder "-" (rosetta.train.base.REFERENCE) times the PyTorch
    reference `model` itself."""
    from rosetta.frameworks import FRAMEWORKS, load_runner
    from rosetta.train.base import REFERENCE
    from rosetta.worker import IN_WORKER, time_in_worker

    if FRAMEWORKS.get(framework).isolated and not os.environ.get(IN_WORKER):
        return time_in_worker(framework, folder, feeds, {"repeats": repeats, "warmup": warmup, "threads": threads,
                                                         **runner_options})
    if str(folder) == REFERENCE:
        from rosetta.frameworks.torch import TorchModuleRunner
        from rosetta.models import get_model

        spec = get_model(model)
        runner = TorchModuleRunner(spec.build(seed), [o.name for o in spec.outputs], threads=threads, **runner_options)
    else:
        runner = load_runner(framework, folder, threads=threads, **runner_options)
    timing = time_call(lambda: runner.predict(feeds), repeats=repeats, warmup=warmup)
    return {"framework": framework, "threads": threads, "version": runner.running_version(),
            "settings": {"threads": threads, **runner_options}, **timing.to_json()}
