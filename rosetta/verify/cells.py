"""The verification matrix: one self-contained cell per (model, route, target), run independently.

A cell carries everything it needs (plain, JSON-able fields) and returns a VerifyResult; it never raises for
a conversion or a framework that fails, it returns a CANNOT or ERROR row with the reason (results.failed_at). That keeps cells ready to fan
out to other processes or machines (e.g. Ray tasks) with nothing shared but the artifact store's folder.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np

from rosetta.convert.runs import internal_error
from rosetta.convert.store import ArtifactStore
from rosetta.convert.targets import get_target
from rosetta.errors import one_line
from rosetta.frameworks import load_runner
from rosetta.frameworks.base import run_on_copies
from rosetta.frameworks.torch import TorchModuleRunner
from rosetta.models import get_model
from rosetta.models.inputs import generate_inputs
from rosetta.verify.compare import compare_outputs
from rosetta.verify.lint import artifact_problems
from rosetta.verify.results import CANNOT, ERROR, FAIL, VerifyResult, failed_at
from rosetta.verify.tolerance import FLOAT32_ONLY_MULTIPLE, TolerancePolicy
from rosetta.verify.ways_in import TRIED_AGAIN, record_in_manifest, settle

DEFAULT_BATCH = 8


@dataclass(frozen=True)
class VerifyCell:
    model: str
    target: str
    route: str = "onnx"
    seed: int = 0
    batch: int = DEFAULT_BATCH
    tolerance: TolerancePolicy = field(default_factory=TolerancePolicy)
    export: tuple = ()  # export options as sorted (key, value) pairs, hashable
    threads: int = 0
    device: str = "cpu"  # where the target runs ("cpu" or "cuda"); the reference runs on the CPU

    @property
    def label(self) -> str:
        """What the progress bar shows while the cell runs."""
        return f"{self.model} -> {self.target}"

    def run(self, store: ArtifactStore, caches: dict) -> VerifyResult:
        """Run the cell; `caches` holds each kind of cell's shared results (here the references), by name."""
        return run_cell(self, store, caches.setdefault("references", {}))


@dataclass
class Reference:
    """The reference model's inputs and outputs at float32 and float64 for one (model, seed, batch)."""

    feeds: dict[str, np.ndarray]
    float32: dict[str, np.ndarray]
    float64: dict[str, np.ndarray]
    second: dict[str, np.ndarray] | None = None  # float32 outputs on a second batch (compare.uninformative)
    check: dict = field(default_factory=dict)  # the float64 run's ReferenceCheck (frameworks.torch_reference)


def reference_for(model: str, seed: int, batch: int, cache: dict | None = None) -> Reference:
    key = (model, seed, batch)
    if cache is not None and key in cache:
        return cache[key]
    spec = get_model(model)
    module = spec.build(seed)
    feeds = generate_inputs(spec.inputs, batch, seed)
    names = [o.name for o in spec.outputs]
    float32, float64 = TorchModuleRunner(module, names, "float32"), TorchModuleRunner(module, names, "float64")
    # a batch of 1 cannot show whether an output depends on the input: a second batch can
    second = float32.predict(generate_inputs(spec.inputs, batch, seed + 1)) if batch < 2 else None
    reference = Reference(feeds, float32.predict(feeds), float64.predict(feeds), second,
                          float64.reference_check or {})
    if cache is not None:
        cache[key] = reference
    return reference


def run_cell(cell: VerifyCell, store: ArtifactStore, references: dict | None = None,
             artifact: Path | None = None) -> VerifyResult:
    """Convert (or reuse) the cell's artifact, run it, compare it. `artifact` overrides the converted one (then it
    is verified as given); otherwise a target with more than one way in tries the next where one FAILs or
    CANNOTs, keeping the first that PASSes (verify.ways_in)."""
    target = get_target(cell.target, cell.route)
    first = run_way(cell, store, target, references, artifact)
    if artifact is not None or len(target.ways) < 2 or first.verdict not in TRIED_AGAIN:
        return first
    result, _, kept = settle(target.ways, (first, None),
                             lambda i: (run_way(cell, store, target.by_way(target.ways[i][1]), references), None))
    record_in_manifest(result.artifact, target.ways, target.ways[kept][0], result.reason)
    return result


def run_way(cell: VerifyCell, store: ArtifactStore, target, references: dict | None = None,
            artifact: Path | None = None) -> VerifyResult:
    """The cell verified with its artifact made along `target`'s chain (one way in), or `artifact` as given."""
    spec = get_model(cell.model)
    result = VerifyResult(model=cell.model, route=cell.route, target=cell.target, verdict=FAIL, reason="",
                          seed=cell.seed, batch=cell.batch, tolerance=cell.tolerance.to_json())
    stage = "reference"
    try:
        reference = reference_for(cell.model, cell.seed, cell.batch, references)
        stage = "conversion"
        start = time.perf_counter()
        folder = artifact or store.get(spec, cell.seed, target.chain, target.export_options(dict(cell.export)))
        result.seconds["convert"] = time.perf_counter() - start
        result.artifact = str(folder)
    except Exception as error:  # a failing path is a CANNOT/ERROR row, never a crash or a missing row
        return conversion_failed(result, stage, error)
    load = lambda: load_runner(target.runner, folder, threads=cell.threads, device=cell.device,  # noqa: E731
                               **dict(target.verify_options))
    result.reference = {"check": reference.check} if reference.check else {}
    if reference.check and not reference.check["trusted"]:  # never for rosetta's models; said, not hidden
        policy = replace(cell.tolerance, float64_reference=False, float64_doubt=reference.check["description"],
                         multiple=FLOAT32_ONLY_MULTIPLE if cell.tolerance.calibrated else cell.tolerance.multiple)
        result.tolerance = policy.to_json()
        return check_artifact(result, folder, load, reference.feeds, reference.float32, reference.float32, policy,
                              second=reference.second, device=cell.device)
    from rosetta.frameworks.reference_check import fully_checked

    policy = replace(cell.tolerance, float64_checked=fully_checked(reference.check))
    result.tolerance = policy.to_json()
    return check_artifact(result, folder, load, reference.feeds, reference.float32, reference.float64, policy,
                          second=reference.second, device=cell.device)


def conversion_failed(result: VerifyResult, stage: str, error: BaseException) -> VerifyResult:
    """failed_at, where an exception raised inside rosetta's own code while converting is an ERROR naming its type
    and rosetta's frame (convert.runs.internal_error): a bug, never a converter's CANNOT."""
    failed_at(result, stage, error)
    bug = internal_error(error) if stage == "conversion" else ""
    if bug:
        result.verdict, result.reason = ERROR, f"{stage} failed: rosetta bug: {bug}"
    return result


def check_artifact(result: VerifyResult, folder: Path, load, feeds: dict, reference32: dict, reference64: dict,
                   policy: TolerancePolicy, by_position: bool = False, second: dict | None = None,
                   device: str = "cpu") -> VerifyResult:
    """Load the artifact in `folder` (`load()` returns its runner), run it on `feeds` and compare it with the
    reference outputs, into `result`; a failing stage is an ERROR row with its reason. `by_position`: outputs
    named otherwise than the reference's are matched in order (a user's model through another converter);
    `second`: the reference's outputs on a second batch (compare.uninformative); `device`: where it was asked to
    run: a framework that reports another device ran it elsewhere, and that row is a CANNOT, never a CPU figure."""
    stage = "loading"
    try:
        start = time.perf_counter()
        problems = artifact_problems(folder)
        runner = load()
        result.seconds["load"] = time.perf_counter() - start
        stage = "inference"
        start = time.perf_counter()
        outputs, changed = run_on_copies(runner.predict, feeds)  # the next model must see the inputs unchanged
        result.seconds["predict"] = time.perf_counter() - start
        result.framework_version, result.device = runner.running_version(), runner.device_used
    except Exception as error:  # a failing artifact is an ERROR row, never a crash or a missing row
        return failed_at(result, stage, error)
    if not on_device(result.device, device):
        result.verdict, result.reason = CANNOT, (f"device={device!r}: {result.framework_version or 'its framework'} "
                                                 f"ran it on {result.device or 'a device it does not report'}")
        return result
    if by_position and set(outputs) != set(reference64) and len(outputs) == len(reference64):
        outputs = dict(zip(reference64, outputs.values()))
    result.outputs, result.verdict, result.reason = compare_outputs(outputs, reference32, reference64, policy, second)
    if problems:
        result.verdict = FAIL
        result.reason = "; ".join(problems + ([result.reason] if result.reason else []))
    if changed:
        result.reason = "; ".join(filter(None, [result.reason, f"note: it changes its input{'s' if len(changed) > 1 else ''} "
                                                               f"{', '.join(changed)} in place (it was given a copy)"]))
    return result


def on_device(reported: str, asked: str) -> bool:
    """Whether a framework's own report of where it ran (torch "cuda:0", JAX "gpu:0", TensorFlow "GPU:0", ONNX
    Runtime's providers, MXNet "gpu(0)") is the device asked for."""
    if asked == "cpu":
        return True
    text = reported.lower()
    return "cuda" in text or "gpu" in text


def plan_cells(models: list[str], targets: list[str], route: str = "onnx", seeds=(0,), **fields) -> list[VerifyCell]:
    return [VerifyCell(model=m, target=t, route=route, seed=s, **fields) for m in models for t in targets for s in seeds]


def run_cells(cells: list, store: ArtifactStore, progress: bool = True, executor=None) -> list[VerifyResult]:
    """Run cells (inference VerifyCells, training TrainCells: each runs itself) as tasks of `executor`
    (rosetta.execution.executors; default local), each artifact that several cells share made once by a task
    of its own before them; in one process, cells of the same model and seed share the reference's results."""
    from rosetta.execution.executors import get_executor
    from rosetta.progress import progress_bar

    executor = executor or get_executor("local")
    use_store(store)
    tasks = plan_tasks(cells, store)
    with progress_bar(len(tasks), "verifying", enabled=progress) as advance:
        outputs = executor.run(tasks, advance)
        advance(None)
    return [_result(task, output) for task, output in zip(tasks, outputs) if task.job.entry == CELL_JOB]


def _result(task, outcome) -> VerifyResult:
    if not outcome.error:
        return VerifyResult.from_json(outcome.result)
    cell = cell_from_json(task.job.argument["cell"])  # its process died under it (a Ray worker, say)
    return VerifyResult(model=cell.model, route=cell.route, target=cell.target, verdict=ERROR,
                        reason=f"task failed: {outcome.error}", seed=cell.seed, batch=cell.batch,
                        tolerance=cell.tolerance.to_json())


CELL_JOB, ARTIFACT_JOB = "rosetta.verify.cells:cell_job", "rosetta.verify.cells:artifact_job"
_STORES: dict[str, ArtifactStore] = {}  # per process: the store of a work folder, shared by its tasks
_CACHES: dict = {}  # per process: references shared by the cells run here


def plan_tasks(cells: list, store: ArtifactStore) -> list:
    """One task per cell, after a task per artifact that two or more cells share (the ONNX export that every
    ONNX-route target starts from, an artifact that a cell trains and another runs): topological order."""
    from collections import Counter

    from rosetta.execution import Job
    from rosetta.execution.executors import Task

    shared = Counter(key for cell in cells for key in _chains(cell))
    tasks, made = [], {}
    for cell in cells:
        after = ()
        for key in _chains(cell):
            if shared[key] < 2:
                continue
            if key not in made:
                model, seed, chain, options = key
                argument = {"model": model, "seed": seed, "chain": list(chain), "options": json.loads(options),
                            "store": str(store.root)}
                made[key] = len(tasks)
                tasks.append(Task(Job(ARTIFACT_JOB, argument, what=f"{model}: {' -> '.join(chain[1:])}"),
                                  f"{model} -> {' -> '.join(chain[1:])} (shared)", after))
            after = (made[key],)
        tasks.append(Task(Job(CELL_JOB, {"cell": cell_to_json(cell), "store": str(store.root)}, what=cell.label),
                          cell.label, after))
    return tasks


def _chains(cell) -> list[tuple]:
    """The artifacts a cell needs, each as (model, seed, chain, options as JSON): its target's chain and every
    prefix of it that is an artifact of its own (the ONNX export, ...)."""
    target = get_target(cell.target, cell.route)
    options = target.export_options(dict(cell.export))
    return [(cell.model, cell.seed, target.chain[:k], json.dumps(options, sort_keys=True))
            for k in range(2, len(target.chain) + 1)]


def drop_changed_artifacts(cells: list, store: ArtifactStore) -> list[str]:
    """Before the cells run: the stored artifacts they would reuse that no longer match their manifest's sha256
    (a kept --work-dir whose files were changed) removed, to be converted again; a line for each."""
    return store.drop_changed(store.folder_for(get_model(model), seed, chain, json.loads(options))
                              for cell in cells for model, seed, chain, options in _chains(cell))


def artifact_job(argument: dict) -> dict:
    """Task: make one shared artifact in the store; a failure is left for the cells that need it to report."""
    store = _store(argument["store"])
    try:
        folder = store.get(get_model(argument["model"]), argument["seed"], tuple(argument["chain"]),
                           argument["options"])
    except Exception as error:  # noqa: BLE001 - each cell that needs it gives its own CANNOT row
        return {"error": one_line(error)}
    return {"folder": str(folder)}


def cell_job(argument: dict) -> dict:
    """Task: one cell, run in the process the executor chose; its VerifyResult as JSON."""
    cell = cell_from_json(argument["cell"])
    return cell.run(_store(argument["store"]), _CACHES).to_json()


def use_store(store: ArtifactStore) -> None:
    """Tasks of this process that name `store`'s folder use this very store (its failures are remembered)."""
    _STORES[str(store.root)] = store


def _store(root: str) -> ArtifactStore:
    if root not in _STORES:
        _STORES[root] = ArtifactStore(Path(root))
    return _STORES[root]


def cell_to_json(cell) -> dict:
    return {"kind": f"{type(cell).__module__}:{type(cell).__name__}", **asdict(cell)}


def cell_from_json(data: dict):
    """The cell `cell_to_json` wrote: its class by entry name (a VerifyCell or a subclass, imported here if
    this process has not yet: a slot worker), tuples made tuples."""
    from rosetta.errors import RosettaError
    from rosetta.registry import load_entry

    data = dict(data)
    name = data.pop("kind")
    kind = load_entry(name) if name.startswith("rosetta.") else None
    if not (isinstance(kind, type) and issubclass(kind, VerifyCell)):
        raise RosettaError(f"not a verification cell: {name!r}")
    data["tolerance"] = TolerancePolicy.from_json(data["tolerance"])
    for name, value in data.items():
        if isinstance(value, list):
            data[name] = tuple(tuple(item) if isinstance(item, list) else item for item in value)
    return kind(**data)
