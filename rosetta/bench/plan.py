"""`rosetta bench` from plain values: the workloads and targets asked for, refused before any work when they
cannot run, each workload run for the steps (or full epochs) asked for by `rosetta.bench.run.run_bench`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from rosetta.bench.run import BenchOptions
from rosetta.errors import RosettaError
from rosetta.scratch import scratch_folder
from rosetta.settings import RunSettings


@dataclass
class BenchRun:
    workloads: list  # bench.workloads.Workload, in the order run
    results: list = field(default_factory=list)  # bench.run.BenchResult rows
    overheads: dict = field(default_factory=dict)  # workload name -> the harness's overhead
    notes: list[str] = field(default_factory=list)  # cells skipped, and why
    peak: dict | None = None  # the device's matmul peak in the run's precision (GPU runs: rosetta.bench.peak)


def steps_for(workload, steps: int | None = None, epochs: int | None = None, batch: int = 0) -> int:
    """Timed steps for `workload`: `epochs` full DLF epochs (of `batch`, or the workload's, samples a step) where
    given, else `steps` (0: the workload's default)."""
    if epochs:
        return epochs * math.ceil(workload.epoch_samples / (batch or workload.batch))
    return steps or 0


def measure_peak(device: str, speed: dict | None, executor=None) -> dict | None:
    """The device's matmul peak in the run's precision, once per run, in a fresh worker alone (an exclusive task
    of `executor`); None on the CPU, whose rows carry FLOPs per sample but no fraction of a peak."""
    from rosetta.execution import FRESH, Job
    from rosetta.execution.executors import Task, get_executor
    from rosetta.frameworks.speed import Speed

    if device != "cuda":
        return None
    job = Job("rosetta.bench.peak:peak_job", {"device": device, "precision": Speed.from_json(speed).precision},
              FRESH, "matmul peak")
    outcome = (executor or get_executor("local")).run([Task(job, "the device's matmul peak", exclusive=True)])[0]
    if outcome.error:
        raise RosettaError(f"measuring the device's matmul peak failed: {outcome.error}")
    return outcome.result


def bench_workloads(workloads: str | Sequence[str], targets: str | Sequence[str],
                    options: BenchOptions = BenchOptions(), run: RunSettings = RunSettings(),
                    executor=None) -> BenchRun:
    """Time `workloads` (names, or all) in `targets` (names, or all), one workload after the other, as
    `options` say (rosetta.bench.run.BenchOptions). `run`: device, threads, progress, batch (samples per step;
    None: each workload's DLF batch), work_dir (where the converted artifacts go; None: a temporary folder),
    results_file (where the caller will write the results, checked writable before any work). On a GPU the
    device's matmul peak is measured once first (measure_peak)."""
    from rosetta.bench.run import run_bench
    from rosetta.bench.workloads import parse_workloads, workload_dataset
    from rosetta.convert.store import ArtifactStore
    from rosetta.convert.targets import parse_target_list
    from rosetta.frameworks.speed import Speed
    from rosetta.output import check_writable_file

    device, batch, data, plot_dir = run.device, run.batch or 0, options.data, options.plot_dir
    # a bad precision refused before any work; the default variant is no variant (the overhead is measured)
    variant = Speed.from_json(options.speed)
    speed = variant.to_json() if variant != Speed() else None
    bench = BenchRun(parse_workloads(workloads))
    chosen = parse_target_list(targets)
    check_writable_file(run.results_file)
    if data is not None and not data.is_dir():
        raise RosettaError(f"data={data}: no such folder (it should hold cifar-10-batches-py/ and imdb.npz)")
    if data is not None:  # every data set read once here: a damaged file is one line now, not a FAIL per cell
        for workload in {w.dataset: w for w in bench.workloads if w.dataset}.values():
            workload_dataset(workload, data)
    if plot_dir is not None:
        plot_dir.mkdir(parents=True, exist_ok=True)
    bench.peak = measure_peak(device, speed, executor)
    with scratch_folder("rosetta-") as scratch:
        store = ArtifactStore(run.work_dir or Path(scratch))
        for workload in bench.workloads:
            done, overheads, skipped = run_bench([workload], chosen, store, replace(options, speed=speed), run,
                                                 steps=steps_for(workload, options.steps, options.epochs, batch),
                                                 executor=executor, peak=bench.peak)
            bench.results += done
            bench.overheads.update(overheads)
            bench.notes += skipped
    return bench
