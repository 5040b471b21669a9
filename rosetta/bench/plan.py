"""`rosetta bench` from plain values: the workloads and targets asked for, refused before any work when they
cannot run, each workload run for the steps (or full epochs) asked for by `rosetta.bench.run.run_bench`."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from rosetta.errors import RosettaError
from rosetta.scratch import scratch_folder


@dataclass
class BenchRun:
    workloads: list  # bench.workloads.Workload, in the order run
    results: list = field(default_factory=list)  # bench.run.BenchResult rows
    overheads: dict = field(default_factory=dict)  # workload name -> the harness's overhead
    notes: list[str] = field(default_factory=list)  # cells skipped, and why


def steps_for(workload, steps: int | None = None, epochs: int | None = None) -> int:
    """Timed steps for `workload`: `epochs` full DLF epochs where given, else `steps` (0: the workload's default)."""
    if epochs:
        return epochs * math.ceil(workload.epoch_samples / workload.batch)
    return steps or 0


def bench_workloads(workloads: str, targets: str, *, device: str = "cpu", steps: int | None = None,
                    epochs: int | None = None, data: Path | None = None, threads: int = 0, overhead: bool = True,
                    work_dir: Path | None = None, progress: bool = False, results_file: Path | None = None,
                    plot_dir: Path | None = None, executor=None, baseline: str = "reference",
                    rounds: int = 3, speed: dict | None = None, workers: int = 1) -> BenchRun:
    """Time `workloads` (comma-separated, or all) in `targets` (comma-separated, or all), one workload after the
    other. `data`: folder of the DLF data sets (None: synthetic data); `work_dir`: where the converted artifacts
    go (None: a temporary folder); `results_file`: where the caller will write the results, checked writable
    before any work; `plot_dir`: the caller's chart folder, created before any work; `baseline` "native": each
    converted model is also timed against the framework's hand-written model, alternating for `rounds` rounds;
    `speed`: the speed variant (precision, channels_last, compile) every cell runs with; `workers` > 1: the
    training workloads data-parallel on that many workers (rosetta.bench.parallel)."""
    from rosetta.bench.run import run_bench
    from rosetta.bench.workloads import parse_workloads, workload_dataset
    from rosetta.convert.store import ArtifactStore
    from rosetta.convert.targets import parse_target_list
    from rosetta.frameworks.speed import Speed
    from rosetta.output import check_writable_file

    # a bad --precision refused before any work; the default variant is no variant (the overhead is measured)
    variant = Speed.from_json(speed)
    speed = variant.to_json() if variant != Speed() else None
    run = BenchRun(parse_workloads(workloads))
    chosen = parse_target_list(targets)
    check_writable_file(results_file)
    if data is not None and not data.is_dir():
        raise RosettaError(f"--data {data}: no such folder (it should hold cifar-10-batches-py/ and imdb.npz)")
    if data is not None:  # every data set read once here: a damaged file is one line now, not a FAIL per cell
        for workload in {w.dataset: w for w in run.workloads if w.dataset}.values():
            workload_dataset(workload, data)
    if plot_dir is not None:
        plot_dir.mkdir(parents=True, exist_ok=True)
    with scratch_folder("rosetta-") as scratch:
        store = ArtifactStore(work_dir or Path(scratch))
        for workload in run.workloads:
            done, overheads, skipped = run_bench([workload], chosen, store, device=device,
                                                 steps=steps_for(workload, steps, epochs), threads=threads,
                                                 data=str(data or ""), overhead=overhead, progress=progress,
                                                 executor=executor, baseline=baseline, rounds=rounds,
                                                 speed=speed, workers=workers)
            run.results += done
            run.overheads.update(overheads)
            run.notes += skipped
    return run
