"""A conformance run from start to end, as `rosetta conformance` asks for it: the suites, modes and targets
chosen, an earlier run's rows kept (resume), every (case, target) pair run, the results file rewritten as it
goes, expectations written or checked. What it says is data (rows, lines); the tables and the report files are
rosetta.report's, the API's to draw."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rosetta.errors import BadInput
from rosetta.settings import RunSettings, listed
from rosetta.verify.conformance import (EXPECTATIONS, MODES, SUITES, check_expectations, collect_cases,
                                        expectations, expectations_text, reusable, row_key, run_conformance,
                                        version_drift)


@dataclass(frozen=True)
class CaseSelection:
    """Which cases run: those of `suites` ("node", "pytorch-converted", "pytorch-operator", "simple") in
    `modes` ("plain", "initializers"), only those whose graph uses one of `ops` or named in `cases` (None: all)."""

    suites: tuple[str, ...] = ("node",)
    modes: tuple[str, ...] = MODES
    ops: tuple[str, ...] | None = None
    cases: tuple[str, ...] | None = None

    @classmethod
    def given(cls, suite, modes, ops=None, cases=None) -> "CaseSelection":
        """From names as the API takes them ("a,b", a list, or "all"), checked."""
        return cls(tuple(chosen_suites(suite)), tuple(chosen_modes(modes)),
                   tuple(listed(ops)) if ops else None, tuple(listed(cases)) if cases else None)


@dataclass(frozen=True)
class Expectations:
    """The verdicts a run is checked against: `check` (True: the committed expectations, or a file; None: no
    check), and where to write this run's (`write`; None: nowhere)."""

    check: Path | bool | None = None
    write: Path | None = None


@dataclass
class SuiteRun:
    """What a conformance run did: every (case, target) row as JSON, how long it took, what it says before the
    report files (`notes`) and after them (`checked`), and its exit status."""

    rows: list[dict]
    how: str  # "N pairs run in M min S s, executor ..., on C cores"
    notes: list[str] = field(default_factory=list)
    checked: list[str] = field(default_factory=list)
    status: int = 0


def read_json(path: Path, parameter: str) -> dict:
    """A JSON file a parameter names, or one line saying why it cannot be read."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError) as error:
        raise BadInput(f"{parameter}={path}: not a readable JSON file ({type(error).__name__})") from None


def chosen_suites(suite: str | Sequence[str]) -> list[str]:
    suites = list(SUITES) if listed(suite) == ["all"] else listed(suite)
    unknown = [s for s in suites if s not in SUITES]
    if unknown:
        raise BadInput(f"unknown suite {', '.join(unknown)}; choose from: {', '.join(SUITES)}")
    return suites


def chosen_modes(modes: str | Sequence[str]) -> list[str]:
    chosen = list(MODES) if listed(modes) == ["all"] else listed(modes)
    if not chosen or set(chosen) - set(MODES):
        raise BadInput(f"unknown mode {','.join(listed(modes))!r}; choose from: {', '.join(MODES)}, all")
    return chosen


def run_suites(targets: list, selection: CaseSelection, run: RunSettings = RunSettings(), *, resume: bool = False,
               expected: Expectations = Expectations(), executor=None,
               summarize: Callable[[list[dict]], dict] | None = None) -> SuiteRun:
    """ONNX's backend test cases `selection` names through `targets` (convert.targets.Target):
    `run.results_file` rewritten as it goes with `summarize(rows)` beside the rows (`resume`: its rows kept,
    where still good), `run.work_dir` the cases' and artifacts' folder (None: a temporary one), `expected`
    checked or written. Refused before any work: a results file that cannot be written, resume without one, an
    expectations file that cannot be read, no case matching."""
    from rosetta.execution.executors import get_executor
    from rosetta.output import check_writable_file
    from rosetta.atomic import atomic_write_json, atomic_write_text
    from rosetta.scratch import scratch_folder
    from rosetta.verify.results import exit_status

    results_file, write_to = run.results_file, expected.write
    check_writable_file(results_file)
    check_writable_file(write_to)
    check = EXPECTATIONS if expected.check is True else expected.check or None
    wanted = read_json(check, "check") if check else None
    if resume and not results_file:
        raise BadInput("resume= needs results_file=FILE: the rows of the earlier run are read from it")
    done = {}
    if resume and results_file.is_file():
        done = reusable({row_key(r): r for r in read_json(results_file, "results_file").get("rows", [])}, targets)
    executor = executor or get_executor("local")

    def write(results) -> None:
        if results_file:
            rows = [r.to_json() for r in results]
            atomic_write_json(results_file, {
                "suites": list(selection.suites), "modes": list(selection.modes), "targets": [t.name for t in targets],
                "executor": executor.describe(), "summary": summarize(rows) if summarize else {}, "rows": rows})

    started = time.monotonic()
    with scratch_folder("rosetta-conformance-") as scratch:
        work = run.work_dir or Path(scratch)
        found = collect_cases(work / "cases", list(selection.suites), list(selection.ops or []) or None,
                              list(selection.cases or []) or None, list(selection.modes))
        if not found:
            raise BadInput("no test case matches ops= or cases= in the chosen suites")
        results = run_conformance(found, targets, work / "converted", executor, run.progress, done, write)
    rows = [r.to_json() for r in results]
    kept = sum(row_key(r) in done for r in rows)
    minutes, seconds = divmod(round(time.monotonic() - started), 60)
    how = (f"{len(rows) - kept:,} pairs run in {minutes} min {seconds:02d} s"
           + (f" ({kept:,} kept from an earlier run)" if kept else "") + f", executor {executor.name}"
           + (f" ({executor.jobs} at a time)" if getattr(executor, "jobs", 0) else "") + f", on {os.cpu_count()} cores")
    write(results)
    outcome = SuiteRun(rows, how, status=exit_status([row["verdict"] for row in rows]))
    if done:
        outcome.notes.append(f"resumed: {kept} of {len(rows)} rows kept from {results_file}")
    if write_to:
        atomic_write_text(write_to, expectations_text(expectations(rows, targets)))
        outcome.notes.append(f"wrote {write_to}")
    if wanted is not None:
        differences, unnamed = check_expectations(rows, wanted)
        outcome.checked += [f"{check} was written with other versions: {line}"
                            for line in (version_drift(wanted, targets) if differences else [])]
        outcome.checked += [f"changed: {line}" for line in differences]
        if unnamed:
            outcome.checked.append(f"{len(unnamed)} pair(s) not in {check} (not checked), e.g. {unnamed[0]}")
        outcome.checked.append(f"check: {len(rows) - len(unnamed) - len(differences)} verdicts as expected, "
                               f"{len(differences)} changed")
        outcome.status = 1 if differences else 0  # an expected FAIL or ERROR is what the check was told to expect
    return outcome
