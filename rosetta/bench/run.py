"""`rosetta bench`: one self-contained cell per (workload, target, device), each timed in its own process.

A cell is plain JSON (workload, target, artifact folder, device, steps, threads, data folder). The parent
converts the artifact (the artifact store shares conversions with `rosetta verify`), then runs the cell in a
fresh worker process (rosetta.execution, FRESH), which builds its data, loads the artifact, times it and
reports its own peak memory: so each framework's memory is its own, and a cell could run on any machine
that sees the artifact folder (e.g. as a Ray task). A cell that fails is a FAIL row with its reason.

Training cells time whole optimiser steps (forward, loss, backward, update) through rosetta.train's
trainers; inference cells time predict() through the framework runners. Both use rosetta.timing: warm-up
steps excluded, the device synchronised before every clock read, median and spread over the timed steps.
The PyTorch reference is always timed, as the baseline; for training workloads a hand-written PyTorch loop
(`bare_torch_loop` of rosetta.train.torch_bare, no rosetta code in its timed region) runs in the same worker as
the harness, alternating, to measure the harness's overhead.

With a native baseline (`baseline="native"`), each converted model whose framework has a hand-written model of
the workload (rosetta.native; for torch, the reference itself) is also timed against it in one worker, the two
alternating for `rounds` rounds (the order swapped each round): converted / native is the ratio of their
medians over rounds, so drift of the machine during a run falls on both.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from rosetta.bench.workloads import DEFAULT_WARMUP, REFERENCE_TARGET, BenchCell, Workload, workload_batches
from rosetta.frameworks.speed import SettingUnavailable, Speed
from rosetta.settings import RunSettings
from rosetta.train.torch_bare import bare_torch_loop

NATIVE_LABEL = "{framework} (native)"
DEFAULT_ROUNDS = 3
NOT_AVAILABLE = "n/a"
# why a target's framework has no native model to compare with
NO_NATIVE = {"onnxruntime": "ONNX Runtime runs exported graphs: there is no model written for it by hand"}


@dataclass
class BenchResult:
    workload: str
    target: str
    framework: str
    device: str
    status: str  # "ok", "FAIL", or NOT_AVAILABLE (a speed setting the framework does not have)
    reason: str = ""
    task: str = ""
    batch: int = 0
    steps: int = 0
    warmup: int = 0
    median_s: float = math.nan  # per step (training) or per batch (inference)
    p10_s: float = math.nan
    p90_s: float = math.nan
    samples_per_s: float = math.nan
    dlf_value: float = math.nan  # in the workload's DLF unit
    unit: str = ""
    peak_rss_mb: float | None = None
    peak_device_mb: float | None = None
    version: str = ""
    settings: dict = field(default_factory=dict)
    data: str = ""
    versus_native: float = math.nan  # converted / native, medians over alternating rounds (baseline="native")
    flops_per_sample: float = math.nan  # of the workload on the reference model (rosetta.bench.peak)
    fraction_of_peak: float = math.nan  # samples/s x flops_per_sample / the device's measured matmul peak
    extra: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return asdict(self)


def execute_cell(cell: dict) -> dict:
    """Run one bench cell in this process (called in a worker) and return its BenchResult as JSON; a speed
    setting its framework does not have is a NOT_AVAILABLE row with the framework's one-line reason."""
    cell = BenchCell(**cell)
    workload = cell.workload_as_run()
    steps = cell.timed_steps()
    result = BenchResult(workload=cell.workload, target=cell.target, framework=cell.framework, device=cell.device,
                         status="ok", task=workload.task, batch=workload.batch, steps=steps, warmup=cell.warmup,
                         unit=workload.unit, settings={"speed": Speed.from_json(cell.speed).label})
    batches, result.data = workload_batches(workload, steps + cell.warmup, cell.data, cell.seed)
    try:
        timing = _time_cell(cell, workload, batches, result)
    except SettingUnavailable as error:
        result.status, result.reason = NOT_AVAILABLE, str(error)
        return result.to_json()
    result.median_s, result.p10_s, result.p90_s = timing["median_s"], timing["p10_s"], timing["p90_s"]
    result.samples_per_s = workload.batch * result.extra.get("parallel", {}).get("workers", 1) / timing["median_s"]
    if timing.get("window_s") is not None:  # steps back to back (--resident-data): the window's wall time too
        result.extra["window_s"] = timing["window_s"]
    return result.to_json()


def _time_cell(cell: BenchCell, workload: Workload, batches: list, result: BenchResult) -> dict:
    """The cell's timing (training steps or predict calls), filling `result`'s version, settings and DLF value."""
    from rosetta.bench.inference import time_predict
    from rosetta.models import get_model
    from rosetta.train.base import run_training
    from rosetta.train.optim import training_options

    speed = {"speed": cell.speed} if cell.speed else {}
    if workload.task == "train":
        options = {**training_options(get_model(workload.model), threads=cell.threads, device=cell.device), **speed,
                   **({"model": workload.model, "seed": cell.seed} if cell.artifact == "-" else {})}
        if cell.workers > 1:  # on 1 and on N workers, each its own processes (rosetta.bench.parallel)
            from rosetta.bench.parallel import time_parallel

            trained = {**time_parallel(cell, workload, options), "peak_device_mb": None}
            result.extra["parallel"] = trained["parallel"]
        else:
            trained = run_training(cell.framework, cell.artifact, batches, options, cell.warmup,
                                   keep_parameters=False)
        timing = trained["step_seconds"]
        result.version, result.settings = trained["version"], {**result.settings, **trained["settings"]}
        result.peak_device_mb = trained["peak_device_mb"]
        # an epoch of N workers' global batches takes 1/N of the steps
        result.dlf_value = timing["median_s"] * math.ceil(workload.epoch_samples / (workload.batch * cell.workers))
        result.extra["losses"] = [float(v) for v in trained["losses"]]
        return timing
    timing = time_predict(cell.framework, Path(cell.artifact), batches[0], repeats=len(batches) - cell.warmup,
                          warmup=cell.warmup, threads=cell.threads, device=cell.device, model=workload.model,
                          seed=cell.seed, **speed)
    result.version, result.peak_device_mb = timing.pop("version", ""), timing.pop("peak_device_mb", None)
    result.settings = {**result.settings, **timing.pop("settings", {})}
    result.dlf_value = timing["median_s"] / workload.batch * 1000
    return timing


def execute_overhead(cell: dict, rounds: int = 5) -> dict:
    """Harness vs bare loop on the cell's device, alternating in this process for `rounds` rounds (which runs
    first swaps each round, so warm caches favour neither): the overhead is the median of the rounds' paired
    ratios, reported with their range, so that a figure inside the machine's own round-to-round spread reads
    as noise, not cost. Each side's device is read back from it."""
    from rosetta.models import get_model
    from rosetta.train.base import REFERENCE, run_training
    from rosetta.train.optim import training_options

    cell = BenchCell(**cell)
    workload = cell.workload_as_run()
    batches, _ = workload_batches(workload, cell.timed_steps() + cell.warmup, cell.data, cell.seed)
    options = {**training_options(get_model(workload.model), threads=cell.threads, device=cell.device),
               "model": workload.model, "seed": 0}
    devices = {}

    def harness_loop() -> float:  # the mean step, as bare_torch_loop measures it
        trained = run_training("torch", REFERENCE, batches, options, cell.warmup, keep_parameters=False)
        devices["harness"] = trained["settings"]["device used"]
        return trained["step_seconds"]["mean_s"]

    def bare_loop() -> float:
        found = bare_torch_loop(workload.model, batches, cell.warmup, cell.threads, cell.device)
        devices["bare"] = found["device"]
        return found["s_per_step"]

    bare, harness = [], []
    for index in range(rounds):
        if index % 2:
            harness.append(harness_loop())
        bare.append(bare_loop())
        if not index % 2:
            harness.append(harness_loop())
    paired = sorted(h / b - 1.0 for h, b in zip(harness, bare))
    return {"rounds": rounds, "bare_s_per_step": float(np.median(bare)), "harness_s_per_step": float(np.median(harness)),
            "overhead": float(np.median(paired)), "overhead_range": [paired[0], paired[-1]],
            "bare_all": bare, "harness_all": harness, "devices": devices}


def execute_versus(argument: dict) -> dict:
    """Job: the converted cell and its native baseline, alternating in this process for `rounds` rounds (the
    order swapped each round); their medians over rounds, the ratio, and the native row of the median round."""
    cells = {"converted": argument["converted"], "native": argument["native"]}
    rows: dict[str, list] = {"converted": [], "native": []}
    for index in range(argument["rounds"]):
        for kind in (("converted", "native") if index % 2 == 0 else ("native", "converted")):
            rows[kind].append(execute_cell(cells[kind]))
            if rows[kind][-1]["status"] != "ok":  # a speed setting the framework lacks: no ratio to take
                return {"unavailable": rows[kind][-1]["reason"], "native": execute_cell(cells["native"])}
    medians = {kind: float(np.median([row["median_s"] for row in found])) for kind, found in rows.items()}
    native = sorted(rows["native"], key=lambda row: row["median_s"])[len(rows["native"]) // 2]
    return {"rounds": argument["rounds"], "converted_s": medians["converted"], "native_s": medians["native"],
            "ratio": medians["converted"] / medians["native"], "native": native,
            "converted_all": [row["median_s"] for row in rows["converted"]],
            "native_all": [row["median_s"] for row in rows["native"]]}


def native_job(argument: dict) -> dict:
    """Job: the native model built (or found) under `root`; where it carries the reference's weights, verified
    against the reference as a conversion is (rosetta.verify: calibrated tolerance), so that a mapping error in
    a baseline shows as a FAIL beside its timing. {"folder", "verified"} or {"error"}."""
    from rosetta.errors import RosettaError
    from rosetta.native import NATIVE, REFERENCE_WEIGHTS, build_native
    from rosetta.verify.cells import VerifyCell, run_cell

    model, framework = argument["model"], argument["framework"]
    try:
        folder = build_native(Path(argument["root"]), model, framework, argument.get("seed", 0))
    except RosettaError as error:
        return {"error": str(error)}
    if NATIVE.get((model, framework)).weights != REFERENCE_WEIGHTS:
        return {"folder": str(folder), "verified": None}
    # the ONNX route's target of this framework names its runner (keras, mxnet, tensorflow)
    checked = run_cell(VerifyCell(model, framework), store=None, artifact=folder)
    worst = max((output.error_ratio for output in checked.outputs), default=math.nan)
    return {"folder": str(folder), "verified": {"verdict": checked.verdict, "reason": checked.reason,
                                                "error_ratio": worst}}


def failed_result(cell: BenchCell, reason: str) -> BenchResult:
    workload = cell.workload_as_run()
    return BenchResult(workload=cell.workload, target=cell.target, framework=cell.framework, device=cell.device,
                       status="FAIL", reason=reason, task=workload.task, batch=workload.batch,
                       steps=cell.timed_steps(), unit=workload.unit,
                       settings={"speed": Speed.from_json(cell.speed).label})


def plan_bench(workloads: list[Workload], targets: list) -> tuple[list[tuple], list[str]]:
    """(workload, target or None for the reference) pairs, and notes for targets that do not apply."""
    from rosetta.frameworks import trainable_frameworks

    plan, notes = [], []
    for workload in workloads:
        plan.append((workload, None))
        for target in targets:
            if workload.task == "train" and target.runner not in trainable_frameworks():
                notes.append(f"{workload.name}: {target.name} is inference-only (timed in resnet50-features)")
                continue
            plan.append((workload, target))
    return plan, notes


@dataclass(frozen=True)
class BenchOptions:
    """How a benchmark times its cells, beside the run settings: `steps` per cell (None: from `epochs` or each
    workload's default), `data` (the DLF data sets' folder; None: synthetic data of the same shapes),
    `overhead` (the harness against a bare PyTorch loop), `baseline` ("reference", or "native": each converted
    model also timed against the framework's hand-written model, alternating for `rounds` rounds), `speed` (a
    speed variant, rosetta.frameworks.speed, every cell runs with), `workers` (> 1: the training workloads
    data-parallel, rosetta.bench.parallel), `plot_dir` (the caller's chart folder, created before any work)."""

    steps: int | None = None
    epochs: int | None = None
    data: Path | None = None
    overhead: bool = True
    baseline: str = "reference"
    rounds: int = DEFAULT_ROUNDS
    speed: dict | None = None
    workers: int = 1
    plot_dir: Path | None = None


def run_bench(workloads: list[Workload], targets: list, store, options: BenchOptions = BenchOptions(),
              run: RunSettings = RunSettings(progress=True), *, steps: int = 0, export: dict | None = None,
              executor=None, peak: dict | None = None) -> tuple[list[BenchResult], dict, list[str]]:
    """Every (workload, target) cell, the reference first; returns results, overhead per workload, notes.
    Each artifact is converted by a task of its own first (side by side where the executor runs tasks so);
    then each cell is an exclusive task of `executor` (default local) in a fresh worker: never timed beside
    another cell, nor beside a conversion. `options.baseline` "native" adds, after each converted cell whose
    framework has a native model of the workload, that model's row and the converted / native ratio
    (execute_versus). `options.speed`: a speed variant every cell runs with; `options.workers` > 1: training
    cells run data-parallel (rosetta.bench.parallel); the harness overhead and native baselines are measured
    for the default (fp32, one worker) only. `run`: device, threads, progress, batch (samples per step; None:
    the workload's). `steps`: per cell (0: the workload's). Every row gets the workload's FLOPs per sample
    (rosetta.bench.peak) and, given the device's measured `peak` (peak_job), its fraction of it."""
    from rosetta.execution import FRESH, Job
    from rosetta.execution.executors import Task, get_executor
    from rosetta.frameworks import isolation
    from rosetta.models import get_model
    from rosetta.native import native_folder, native_for
    from rosetta.progress import progress_bar
    from rosetta.verify.cells import ARTIFACT_JOB, use_store

    executor = executor or get_executor("local")
    device, threads, progress, batch = run.device, run.threads, run.progress, run.batch or 0
    data, overhead, speed = str(options.data or ""), options.overhead, options.speed
    baseline, rounds, workers = options.baseline, options.rounds, options.workers
    use_store(store)
    plan, notes = plan_bench(workloads, targets)
    cells, tasks, made = [], [], {}  # made: artifact folder -> index of the task that makes it
    versus: dict[int, BenchCell] = {}  # converted cell index -> its native cell

    def make(folder: Path, job: Job, label: str) -> int:
        if folder not in made:
            made[folder] = len(tasks)
            tasks.append((None, Task(job, label)))
        return made[folder]

    for workload, target in plan:
        name = target.name if target else REFERENCE_TARGET
        cell = BenchCell(workload.name, name, target.runner if target else "torch", device=device, steps=steps,
                         threads=threads, data=data, speed=dict(speed or {}), batch=batch,
                         warmup=Speed.from_json(speed).warmup(DEFAULT_WARMUP),
                         workers=workers if workload.task == "train" else 1)
        after = ()
        if target is not None:  # converted by a task of its own first (side by side where the executor can)
            spec, options = get_model(workload.model), target.export_options(export)
            folder = store.folder_for(spec, 0, target.chain, options)
            argument = {"model": spec.name, "seed": 0, "chain": list(target.chain), "options": options,
                        "store": str(store.root)}
            after = (make(folder, Job(ARTIFACT_JOB, argument, what=f"{spec.name}: {target.name}"),
                          f"{spec.name} -> {target.name} (converting)"),)
            cell = BenchCell(**{**asdict(cell), "artifact": str(folder)})
        cells.append(cell)
        tasks.append((len(cells) - 1, Task(Job("rosetta.bench.run:execute_cell", asdict(cell), FRESH,
                                               f"{cell.target} benchmark"), f"{workload.name}: {name}",
                                           after=after, exclusive=True)))
        if overhead and target is None and workload.task == "train" and not cell.speed and cell.workers == 1:
            tasks.append((workload.name, Task(Job("rosetta.bench.run:execute_overhead", asdict(cell), FRESH,
                                                  f"{cell.target} benchmark"),
                                              f"{workload.name}: harness overhead vs a bare PyTorch loop",
                                              exclusive=True)))
        if baseline != "native" or target is None or cell.workers > 1:
            continue
        native, label = native_for(workload.model, target.runner), NATIVE_LABEL.format(framework=target.runner)
        if target.runner == "torch":  # PyTorch's native model is the reference
            native_cell, needs = BenchCell(**{**asdict(cell), "target": REFERENCE_TARGET, "artifact": "-"}), ()
        elif native is None:
            notes.append(f"{workload.name}: {target.name} has no native baseline: "
                         + NO_NATIVE.get(target.runner, f"no native {target.runner} model of {workload.model}"))
            continue
        else:
            folder = native_folder(store.root, native)
            argument = {"root": str(store.root), "model": workload.model, "framework": target.runner, "seed": 0}
            needs = (make(folder, Job("rosetta.bench.run:native_job", argument, isolation(target.runner),
                                      f"native {target.runner} {workload.model}"),
                          f"{workload.model}: native {target.runner} model (building)"),)
            native_cell = BenchCell(**{**asdict(cell), "target": label, "artifact": str(folder)})
        versus[len(cells) - 1] = native_cell
        argument = {"converted": asdict(cell), "native": asdict(native_cell), "rounds": rounds}
        tasks.append((("versus", len(cells) - 1), Task(Job("rosetta.bench.run:execute_versus", argument, FRESH,
                                                           f"{cell.target} vs native benchmark"),
                                                       f"{workload.name}: {name} vs {native_cell.target}",
                                                       after=after + needs, exclusive=True)))
    with progress_bar(len(tasks), "benchmarking", enabled=progress) as advance:
        outcomes = executor.run([task for _, task in tasks], advance)
        advance(None)
    results, overheads, natives = {}, {}, {}
    for (key, task), outcome in zip(tasks, outcomes):
        if key is None:  # a conversion or a native build: its failure is reported by the cells that need it
            continue
        failed = next((error for error in (_failure(outcomes[index]) for index in task.after) if error), None)
        if isinstance(key, str):  # a workload's overhead measurement
            overheads[key] = {"error": outcome.error} if outcome.error else outcome.result
        elif isinstance(key, tuple):  # converted vs native, alternating
            natives[key[1]] = (failed or outcome.error, outcome.result)
        elif failed:  # a failing conversion is a FAIL row with the converter's reason
            results[key] = failed_result(cells[key], failed)
        elif outcome.error:
            results[key] = failed_result(cells[key], outcome.error)
        else:
            results[key] = BenchResult(**{**outcome.result, "peak_rss_mb": outcome.peak_rss_mb})
    rows = []
    for index in range(len(cells)):
        rows.append(results[index])
        if index not in natives:
            continue
        error, found = natives[index]
        native_cell = versus[index]
        if error:
            if native_cell.artifact != "-":  # the reference has its own row already
                rows.append(failed_result(native_cell, error))
            continue
        if "unavailable" in found:  # the speed variant: its rows say why, there is no ratio
            if native_cell.artifact != "-":
                rows.append(BenchResult(**found["native"]))
            continue
        results[index].versus_native = found["ratio"]
        results[index].extra["versus_native"] = {key: found[key] for key in
                                                 ("rounds", "converted_s", "native_s", "converted_all", "native_all")}
        if native_cell.artifact != "-":
            rows.append(BenchResult(**found["native"]))
            built = outcomes[made[Path(native_cell.artifact)]].result
            if built.get("verified"):
                rows[-1].extra["verified"] = built["verified"]
    add_fractions_of_peak(rows, workloads, peak)
    return rows, overheads, notes


def add_fractions_of_peak(rows: list[BenchResult], workloads: list[Workload], peak: dict | None) -> None:
    """Each timed row's workload FLOPs per sample and, where the device's peak was measured, the fraction of it
    that the row's samples/s per worker reach."""
    from rosetta.bench.peak import flops_per_sample

    flops = {workload.name: flops_per_sample(workload) for workload in workloads
             if any(row.workload == workload.name and row.status == "ok" for row in rows)}
    for row in rows:
        if row.status != "ok":
            continue
        row.flops_per_sample = flops[row.workload]
        if peak:
            per_worker = row.samples_per_s / row.extra.get("parallel", {}).get("workers", 1)
            row.fraction_of_peak = per_worker * row.flops_per_sample / peak["flops_per_s"]


def _failure(outcome) -> str | None:
    """The error of a task another one needed (a conversion or a native build), if it failed."""
    return outcome.error or (outcome.result or {}).get("error")
