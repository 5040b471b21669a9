"""Measure the error / noise-floor ratios that choose rosetta's tolerance multiples, over everything it verifies.

Every reference model through every target of every route (correct conversions; a conversion that cannot be
made is a CANNOT row, never left out) and every registered wrong model or artifact (rosetta.verify.faults) of
that route, for each seed and each batch size, in two modes from the same run:
- calibrated: max|target - ref64| / noise floor, the rule when the reference runs in float64 (DEFAULT_MULTIPLE);
- float32-only: max|target - ref32| / (eps32 * max|ref32|), ulps at the output's scale, the rule for a reference
  that runs in float32 only (ONNX files, SavedModels: FLOAT32_ONLY_MULTIPLE).
Writes every ratio as JSON (after each seed, so a long run can be resumed with --resume, or split over
processes by --seeds and joined with --merge), a table per (route, target) with the margins of each multiple,
and, with --markdown, that table for the README. tests/verify/test_calibration.py reads the JSON
(docs/calibration.json) and asserts the multiples separate correct from wrong by at least 2x on both sides.

    python scripts/calibrate_tolerance.py --seeds 0-19 --batches 4,8 --json docs/calibration.json --markdown docs/calibration.md
    python scripts/calibrate_tolerance.py --seeds 0-9 --json a.json & python scripts/calibrate_tolerance.py --seeds 10-19 --json b.json
    python scripts/calibrate_tolerance.py --merge a.json b.json --json docs/calibration.json --markdown docs/calibration.md

A fault registered later is measured alone and merged in (--merge keeps every cell; one measured again, the later):

    python scripts/calibrate_tolerance.py --routes mmdnn --models cnn --cases artifact-kernels-flipped --json new.json
    python scripts/calibrate_tolerance.py --merge docs/calibration.json new.json --json docs/calibration.json --markdown docs/calibration.md

With --training it calibrates the training check instead (rosetta.verify.training, TRAINING_MULTIPLE):
K optimiser steps in every trainable target, and every registered training fault.

    python scripts/calibrate_tolerance.py --training --seeds 0-4 --json calibration-training.json
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

from rosetta.convert.store import ArtifactStore
from rosetta.convert.targets import get_target, list_routes, list_targets
from rosetta.models import list_models
from rosetta.progress import progress_bar
from rosetta.verify.cells import VerifyCell, run_cell
from rosetta.verify.faults import fault_cases
from rosetta.verify.tolerance import DEFAULT_MULTIPLE, FLOAT32_EPS, FLOAT32_ONLY_MULTIPLE, FLOOR_CEILING
from rosetta.verify.training import TRAINING_FAULTS, TRAINING_MULTIPLE, TrainCell, run_train_cell

MODES = {"calibrated": DEFAULT_MULTIPLE, "float32-only": FLOAT32_ONLY_MULTIPLE}
MARGIN = 2.0  # each multiple must sit 2x above every correct ratio and 2x below every wrong one


def seed_range(text: str) -> list[int]:
    """"0-19" or "0,3,5" -> the seeds."""
    seeds = []
    for part in text.split(","):
        first, _, last = part.partition("-")
        seeds.extend(range(int(first), int(last or first) + 1))
    return seeds


def cases(routes: list[str], targets: list[str], models: list[str], names: list[str] | None = None) -> list[tuple]:
    """(route, target, case name, model, fault or None): correct conversions, then wrong ones; only the cases
    named in `names` where it is given (a model for its correct conversion, a fault by its name)."""
    found = []
    for route in routes:
        chosen = [t for t in list_targets(route) if not targets or t in targets]
        found += [(route, target, model, model, None) for model in models for target in chosen]
        found += [(route, target, fault.name, fault.model, fault) for fault, target in fault_cases(route)
                  if target in chosen and fault.model in models]
    return [case for case in found if not names or case[2] in names]


def ratios(result) -> dict:
    """The cell's largest ratio in each mode over its outputs (NaN where it did not run), and its reference's
    noise floor in float32 ulps at scale (what verify.tolerance.FLOOR_CEILING is judged against)."""
    if not result.outputs:
        return {mode: math.nan for mode in MODES}
    ulps = [o.vs_float32.get("scaled_error", math.nan) / FLOAT32_EPS for o in result.outputs]
    return {"calibrated": max(o.error_ratio for o in result.outputs), "float32-only": max(ulps),
            "reference_ulps": max(o.noise_floor_ulps for o in result.outputs)}


def measure(args) -> dict:
    """Run every case for each seed and batch; the JSON, written after every seed."""
    routes = args.routes.split(",") if args.routes else list_routes()
    found = cases(routes, args.targets.split(",") if args.targets else [],
                  args.models.split(",") if args.models else list_models(), args.cases.split(",") if args.cases else None)
    data = json.loads(args.json.read_text()) if args.resume and args.json.is_file() else \
        {"batches": args.batches, "multiples": MODES, "margin": MARGIN, "cells": []}
    done = {cell["seed"] for cell in data["cells"]}
    seeds = [seed for seed in seed_range(args.seeds) if seed not in done]
    with tempfile.TemporaryDirectory() as scratch, progress_bar(len(seeds) * len(found), "calibrating") as advance:
        for seed in seeds:
            store = ArtifactStore(Path(scratch) / f"seed{seed}")
            references: dict = {}
            for route, target, name, model, fault in found:
                advance(f"seed {seed}: {name} -> {route}:{target}")
                try:
                    artifact = fault.build(store, seed, get_target(target, route), {}) if fault else None
                except Exception as error:  # noqa: BLE001 - a wrong model that cannot be made is a row saying so
                    artifact, failure = None, f"{type(error).__name__}: {error}"
                else:
                    failure = ""
                for batch in data["batches"]:
                    if failure:
                        row = {"verdict": "CANNOT", "reason": failure[:300]}
                    else:
                        result = run_cell(VerifyCell(model, target, route, seed, batch), store, references, artifact)
                        # the reason only where there are no ratios to say what happened
                        row = {"verdict": result.verdict, "reason": "" if result.outputs else result.reason[:300],
                               **ratios(result)}
                    data["cells"].append({"route": route, "target": target, "case": name, "model": model,
                                          "kind": "wrong" if fault else "correct", "seed": seed, "batch": batch, **row})
            store.clear()
            write(data, args.json)
        advance(None)
    return data


def summary(data: dict) -> list[dict]:
    """Per (route, target): the largest correct and smallest wrong ratio in each mode, and the margins."""
    rows = {}
    for cell in data["cells"]:
        key = (cell["route"], cell["target"])
        row = rows.setdefault(key, {"route": key[0], "target": key[1], "seeds": set(), "batches": set(),
                                    "cannot": set(), **{f"{kind} {mode}": [] for kind in ("correct", "wrong")
                                                        for mode in MODES}})
        row["seeds"].add(cell["seed"])
        row["batches"].add(cell["batch"])
        if cell["verdict"] in ("CANNOT", "ERROR") or cell.get("calibrated") is None:
            row["cannot"].add(cell["case"])
            continue
        for mode in MODES:
            if not math.isnan(cell[mode]):
                row[f"{cell['kind']} {mode}"].append((cell[mode], cell["case"]))
    table = []
    for row in rows.values():
        entry = {"route": row["route"], "target": row["target"], "seeds": len(row["seeds"]),
                 "batches": sorted(row["batches"]), "cannot": sorted(row["cannot"])}
        for mode, multiple in data["multiples"].items():
            correct, wrong = row[f"correct {mode}"], row[f"wrong {mode}"]
            worst_correct = max(correct, default=(math.nan, ""))
            best_wrong = min(wrong, default=(math.nan, ""))
            entry[mode] = {"largest correct": worst_correct[0], "its case": worst_correct[1],
                           "smallest wrong": best_wrong[0], "its fault": best_wrong[1],
                           "margin above correct": (multiple / worst_correct[0] if worst_correct[0] > 0 else math.inf)
                           if correct else math.nan,
                           "margin below wrong": best_wrong[0] / multiple if wrong else math.nan}
        table.append(entry)
    return table


def print_summary(data: dict, markdown: Path | None) -> None:
    rows = summary(data)
    seeds = max((row["seeds"] for row in rows), default=0)
    title = (f"error / noise floor, {seeds} seeds x batches {', '.join(map(str, data['batches']))}: calibrated "
             f"(K = {data['multiples']['calibrated']:g}) and float32-only (ulps at scale, K = "
             f"{data['multiples']['float32-only']:g}); margin = K / largest correct, smallest wrong / K")
    columns = ("route", "target", "largest correct", "smallest wrong", "margins", "f32: largest correct",
               "f32: smallest wrong", "f32: margins")
    table = Table(title=title, title_justify="left")
    for column in columns:
        table.add_column(column)
    lines = [f"| {' | '.join(columns)} |", "|" + "---|" * len(columns)]
    for row in rows:
        cells = [row["route"], row["target"]]
        for mode in MODES:
            figures = row[mode]
            cells += [f"{figures['largest correct']:.3g} ({figures['its case']})",
                      f"{figures['smallest wrong']:.3g} ({figures['its fault']})",
                      f"{_times(figures['margin above correct'])} / {_times(figures['margin below wrong'])}"]
        table.add_row(*cells)
        lines.append(f"| {' | '.join(cells)} |")
    Console(width=200).print(table)
    floors = [(cell["reference_ulps"], cell["case"]) for cell in data["cells"] if cell.get("reference_ulps") is not None
              and cell["kind"] == "correct" and not math.isnan(cell["reference_ulps"])]
    if floors:
        largest = max(floors)
        ceiling = FLOOR_CEILING / FLOAT32_EPS
        print(f"reference noise floors: largest {largest[0]:.3g} float32 ulps at scale ({largest[1]}); FLOOR_CEILING "
              f"{FLOOR_CEILING:g} = {ceiling:.0f} ulps, {ceiling / largest[0]:.0f}x above it")
    cannot = sorted({f"{row['route']}:{row['target']}: {', '.join(row['cannot'])}" for row in rows if row["cannot"]})
    if cannot:
        print("not measured (CANNOT/ERROR rows): " + "; ".join(cannot))
    if markdown:
        markdown.write_text(f"{title}\n\n" + "\n".join(lines) + "\n" +
                            (f"\nNot measured (CANNOT/ERROR rows): {'; '.join(cannot)}\n" if cannot else ""))


def write(data: dict, path: Path) -> None:
    """One cell per line: a file that diffs by cell."""
    rounded = [{k: float(f"{v:.4g}") if k in MODES or k == "reference_ulps" else v for k, v in cell.items()}
               for cell in data["cells"]]
    cells = ",\n".join(json.dumps(cell) for cell in rounded)
    head = json.dumps({key: value for key, value in data.items() if key != "cells"})[:-1]
    path.write_text(f"{head}, \"cells\": [\n{cells}\n]}}\n")


def _times(value: float) -> str:
    return "no bound" if math.isinf(value) else "n/a" if math.isnan(value) else f"{value:.2g}x"


def merge(paths: list[Path]) -> dict:
    """The runs joined, judged by the multiples in the code now (a ratio does not depend on the multiple); a
    cell measured again (route, target, case, seed, batch) keeps its later measurement."""
    parts = [json.loads(path.read_text()) for path in paths]
    cells = {(c["route"], c["target"], c["case"], c["seed"], c["batch"]):
             {**c, "reason": "" if c["verdict"] in ("PASS", "FAIL") else c["reason"]}
             for part in parts for c in part["cells"]}
    return {**parts[0], "multiples": MODES, "cells": list(cells.values())}


def calibrate_training(args) -> None:
    """The training check: its ratios over seeds, correct cells and training faults (as before)."""
    rows: dict[str, list[float]] = {}
    kinds: dict[str, str] = {}
    targets = args.targets.split(",") if args.targets else list_targets("onnx")
    models = args.models.split(",") if args.models else list_models()
    jobs = [("correct", m, t, None) for m in models for t in targets]
    jobs += [("wrong", f.model, t, f) for f in TRAINING_FAULTS for t in f.targets if t in targets and f.model in models]
    seeds = seed_range(args.seeds)
    with tempfile.TemporaryDirectory() as scratch, progress_bar(len(seeds) * len(jobs), "calibrating") as advance:
        for seed in seeds:
            store = ArtifactStore(Path(scratch) / f"seed{seed}")
            references: dict = {}
            for kind, model, target, fault in jobs:
                label = f"{model} -> {target}" if fault is None else f"{fault.name} -> {target}"
                advance(f"seed {seed}: {label}")
                # recheck off: the calibration measures float32's own ratio, which the float64 re-check hides
                cell = (fault.cell(target, route="onnx", seed=seed, precision=args.precision, recheck=False)
                        if fault else TrainCell(model, target, "onnx", seed, precision=args.precision, recheck=False))
                result = run_train_cell(cell, store, references)
                rows.setdefault(label, []).append(max((o.error_ratio for o in result.outputs), default=math.nan))
                kinds[label] = kind
            store.clear()
        advance(None)
    table = Table(title=f"training: error / noise floor over {len(seeds)} seeds (multiple {TRAINING_MULTIPLE:g})")
    for column in ("artifact", "kind", "min", "median", "max"):
        table.add_column(column)
    for label, values in rows.items():
        ordered = sorted(values)
        table.add_row(label, kinds[label], f"{ordered[0]:.3g}", f"{ordered[len(ordered) // 2]:.3g}", f"{ordered[-1]:.3g}")
    Console().print(table)
    args.json.write_text(json.dumps({"seeds": seeds, "training": True, "multiple": TRAINING_MULTIPLE, "ratios": rows,
                                     "kinds": kinds}, indent=2) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", default="0-19", help="seeds: 0-19, or 0,3,5")
    parser.add_argument("--batches", default="4,8", help="batch sizes, comma-separated (default 4,8)")
    parser.add_argument("--routes", default="", help="comma-separated routes (default: every route)")
    parser.add_argument("--targets", default="", help="comma-separated targets (default: every target of each route)")
    parser.add_argument("--models", default="", help="comma-separated models (default: every reference model)")
    parser.add_argument("--cases", default="", help="comma-separated case names: a model (its correct conversions) "
                                                     "or a fault; measure a new fault, then --merge it in")
    parser.add_argument("--json", type=Path, default=Path("calibration.json"))
    parser.add_argument("--markdown", type=Path, help="also write the summary table as Markdown")
    parser.add_argument("--resume", action="store_true", help="keep the seeds already in --json, run the others")
    parser.add_argument("--merge", type=Path, nargs="+", help="join these JSON files (runs over other seeds) instead")
    parser.add_argument("--training", action="store_true", help="calibrate the training check instead")
    parser.add_argument("--precision", default="float32", help="with --training: float32 or float64")
    args = parser.parse_args()
    args.batches = [int(b) for b in str(args.batches).split(",")]
    if args.training:
        return calibrate_training(args)
    if args.merge:
        data = merge(args.merge)
        write(data, args.json)
    else:
        data = measure(args)
    print_summary(data, args.markdown)


if __name__ == "__main__":
    main()
