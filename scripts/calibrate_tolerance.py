"""Measure the error/noise-floor ratios that choose rosetta's default tolerance multiple.

For each seed, every reference model goes through every target of the route (correct conversions) and
every registered fault is built (wrong conversions). Prints, per model/target and per fault, the largest
and smallest ratio max|target - ref64| / noise_floor, and writes them all as JSON. The default multiple
(rosetta.verify.tolerance.DEFAULT_MULTIPLE) must sit above every correct ratio, with head-room, and below
every wrong one.

    python scripts/calibrate_tolerance.py --seeds 20 --json calibration.json

With --training it does the same for the training check (rosetta.verify.training, TRAINING_MULTIPLE):
K optimiser steps in every trainable target, and every registered training fault.

    python scripts/calibrate_tolerance.py --training --seeds 5 --json calibration-training.json
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

from rosetta.convert.store import ArtifactStore
from rosetta.convert.targets import get_target, list_targets
from rosetta.models import list_models
from rosetta.progress import progress_bar
from rosetta.verify.cells import VerifyCell, run_cell
from rosetta.verify.faults import fault_cases
from rosetta.verify.tolerance import DEFAULT_MULTIPLE
from rosetta.verify.training import TRAINING_FAULTS, TRAINING_MULTIPLE, TrainCell, run_train_cell


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--route", default="onnx")
    parser.add_argument("--targets", default="", help="comma-separated targets (default: every target of the route)")
    parser.add_argument("--models", default="", help="comma-separated models (default: every reference model)")
    parser.add_argument("--json", type=Path, default=Path("calibration.json"))
    parser.add_argument("--training", action="store_true", help="calibrate the training check instead")
    parser.add_argument("--precision", default="float32", help="with --training: float32 or float64")
    args = parser.parse_args()

    rows: dict[str, list[float]] = {}
    kinds: dict[str, str] = {}
    targets = args.targets.split(",") if args.targets else list_targets(args.route)
    models = args.models.split(",") if args.models else list_models()
    jobs = [("correct", m, t, None) for m in models for t in targets]
    faults = [(f, t) for f in TRAINING_FAULTS for t in f.targets] if args.training else fault_cases(args.route)
    jobs += [("wrong", f.model, t, f) for f, t in faults if t in targets and f.model in models]
    multiple = TRAINING_MULTIPLE if args.training else DEFAULT_MULTIPLE
    with tempfile.TemporaryDirectory() as scratch, progress_bar(args.seeds * len(jobs), "calibrating") as advance:
        for seed in range(args.seeds):
            store = ArtifactStore(Path(scratch) / f"seed{seed}")
            references: dict = {}
            for kind, model, target, fault in jobs:
                label = f"{model} -> {target}" if fault is None else f"{fault.name} -> {target}"
                advance(f"seed {seed}: {label}")
                if args.training:
                    # recheck off: the calibration measures float32's own ratio, which the float64 re-check hides
                    cell = (fault.cell(target, route=args.route, seed=seed, precision=args.precision, recheck=False)
                            if fault else TrainCell(model, target, args.route, seed, precision=args.precision,
                                                    recheck=False))
                    result = run_train_cell(cell, store, references)
                else:
                    artifact = fault.build(store, seed, get_target(target, args.route), {}) if fault else None
                    result = run_cell(VerifyCell(model, target, args.route, seed, args.batch), store, references, artifact)
                ratio = max((o.error_ratio for o in result.outputs), default=float("nan"))
                rows.setdefault(label, []).append(ratio)
                kinds[label] = kind
            store.clear()
        advance(None)

    table = Table(title=f"error / noise floor over {args.seeds} seeds (default multiple {multiple:g})")
    for column in ("artifact", "kind", "min", "median", "max"):
        table.add_column(column)
    for label, ratios in rows.items():
        ordered = sorted(ratios)
        table.add_row(label, kinds[label], f"{ordered[0]:.3g}", f"{ordered[len(ordered) // 2]:.3g}", f"{ordered[-1]:.3g}")
    Console().print(table)
    correct = [r for label, rs in rows.items() if kinds[label] == "correct" for r in rs]
    wrong = [r for label, rs in rows.items() if kinds[label] == "wrong" for r in rs]
    print(f"largest correct ratio {max(correct):.3g}; smallest wrong ratio {min(wrong):.3g}")
    args.json.write_text(json.dumps({"seeds": args.seeds, "batch": args.batch, "default_multiple": multiple, "training": args.training,
                                     "ratios": rows, "kinds": kinds}, indent=2) + "\n")


if __name__ == "__main__":
    main()
