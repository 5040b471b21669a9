"""Inference time of a converted artifact in its own framework, timed inside that framework's process.

For frameworks that run in worker processes the whole measurement is one job in the worker, so process
start-up and .npz transfer are never timed. Same batch and the same thread count for every framework.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rosetta.execution import run_job, runs_here
from rosetta.frameworks.speed import Speed
from rosetta.timing import time_call, time_window


def time_predict(framework: str, folder: Path, feeds: dict[str, np.ndarray], repeats: int = 10, warmup: int = 2,
                 threads: int = 0, model: str = "", seed: int = 0, **runner_options) -> dict:
    """Median time of runner.predict(feeds). predict returns host numpy arrays, so every timed call ends with
    the device's work done and copied back; with --resident-data (a runner that has it) the calls run back to
    back on inputs staged on the device, each timed by the device's clock (rosetta.timing.time_window).
    Folder "-" (rosetta.train.base.REFERENCE) times the PyTorch reference `model` itself."""
    from rosetta.frameworks import isolation, load_runner
    from rosetta.train.base import REFERENCE

    if not runs_here(isolation(framework)):
        argument = {"framework": framework, "folder": str(folder), "feeds": feeds, "repeats": repeats,
                    "warmup": warmup, "threads": threads, "model": model, "seed": seed, **runner_options}
        return run_job("rosetta.bench.inference:time_job", argument, isolation(framework), f"{framework} timing",
                       settings={"threads": threads})
    if str(folder) == REFERENCE:
        from rosetta.frameworks.torch import TorchModuleRunner
        from rosetta.models import get_model

        spec = get_model(model)
        runner = TorchModuleRunner(spec.build(seed), [o.name for o in spec.outputs], threads=threads, **runner_options)
    else:
        runner = load_runner(framework, folder, threads=threads, **runner_options)
    call = runner.timed_call(feeds)
    if Speed.from_json(runner_options.get("speed")).resident_data:  # outputs left on the device: a window
        timing, _ = time_window(lambda _index: call(), repeats, warmup, runner.synchronize, runner.clock())
    else:
        timing = time_call(call, repeats=repeats, warmup=warmup, synchronize=runner.synchronize)
    options = {name: value for name, value in runner_options.items() if name != "speed"}  # the row has its label
    return {"framework": framework, "threads": threads, "version": runner.running_version(),
            "settings": {"threads": threads, **options, **runner.settings()},
            "peak_device_mb": runner.peak_device_mb(), **timing.to_json()}


def time_job(argument: dict) -> dict:
    """Job (rosetta.execution): time_predict in the process it runs in."""
    argument = dict(argument)
    return time_predict(argument.pop("framework"), Path(argument.pop("folder")), argument.pop("feeds"), **argument)
