"""`rosetta verify --locate`: a job per FAIL inference cell, on any executor, that says where its target diverges:
ONNX-route targets by the ONNX export's nodes (verify.locate), MMdnn-route targets by MMdnn's IR nodes
(verify.locate_mmdnn)."""

from __future__ import annotations

from pathlib import Path

from rosetta.errors import RosettaError, one_line
from rosetta.verify.locate import LocateReport, TargetFiles, locate

LOCATE_JOB = "rosetta.verify.locate_cells:locate_job"


def locate_job(argument: dict) -> dict:
    """Job: locate one FAIL cell of `rosetta verify` (argument: {"cell": cell JSON, "store": folder, "work":
    scratch folder}); its LocateReport as JSON."""
    from rosetta.convert.store import from_onnx
    from rosetta.convert.targets import get_target
    from rosetta.frameworks import load_runner
    from rosetta.models import get_model
    from rosetta.verify.cells import _store, cell_from_json, reference_for

    cell = cell_from_json(argument["cell"])
    target = get_target(cell.target, cell.route)
    work = Path(argument["work"])
    work.mkdir(parents=True, exist_ok=True)
    if "mmdnn" in target.chain:
        from rosetta.verify.locate_mmdnn import locate_reference_cell

        try:
            return locate_reference_cell(cell, target, _store(argument["store"]), work).to_json()
        except RosettaError as error:
            return LocateReport(cell.target, "not located", reason=one_line(error), graph="mmdnn").to_json()
    if "onnx" not in target.chain:
        return LocateReport(cell.target, "not located",
                            reason=f"the {cell.route} route has no ONNX graph or MMdnn IR to cut").to_json()
    spec = get_model(cell.model)
    options = target.export_options(dict(cell.export))
    cut = target.chain.index("onnx") + 1
    store = _store(argument["store"])
    try:
        source = store.get(spec, cell.seed, target.chain[:cut], options)
        artifact = store.get(spec, cell.seed, target.chain, options)
    except Exception as error:  # noqa: BLE001
        return LocateReport(cell.target, "not located", reason=f"no artifact: {one_line(error)}").to_json()
    convert = from_onnx(target, options)
    load = lambda folder: load_runner(target.runner, folder, threads=cell.threads,  # noqa: E731
                                      **dict(target.verify_options))
    feeds = reference_for(cell.model, cell.seed, cell.batch).feeds
    modules = {name for name, _ in spec.build(cell.seed).named_modules() if name}
    try:
        return locate(source, convert, load, feeds, cell.tolerance, work, cell.target, modules,
                      files=TargetFiles(artifact=artifact)).to_json()
    except RosettaError as error:
        return LocateReport(cell.target, "not located", reason=one_line(error)).to_json()


def locate_failures(cells: list, results: list, store, work: Path, executor=None, progress: bool = False) -> None:
    """For each FAIL inference row of `results` (one per cell, in order), a locate job run by `executor`
    (default local); its report lands in the row's `locate`."""
    from rosetta.execution import Job
    from rosetta.execution.executors import Task, get_executor
    from rosetta.progress import progress_bar
    from rosetta.verify.cells import cell_to_json
    from rosetta.verify.results import FAIL

    failed = [(cell, result) for cell, result in zip(cells, results)
              if result.verdict == FAIL and result.check == "inference"]
    tasks = [Task(Job(LOCATE_JOB, {"cell": cell_to_json(cell), "store": str(store.root), "work": str(work / str(n))},
                      what=f"locate {cell.label}"), f"locate {cell.label}") for n, (cell, _) in enumerate(failed)]
    if not tasks:
        return
    with progress_bar(len(tasks), "locating", enabled=progress) as advance:
        outcomes = (executor or get_executor("local")).run(tasks, advance)
        advance(None)
    for (cell, result), outcome in zip(failed, outcomes):
        result.locate = outcome.result if not outcome.error else \
            LocateReport(cell.target, "not located", reason=f"task failed: {outcome.error}").to_json()
