"""What `--locate` costs and whether it is right: every registered converter fault (a target's own chain after
one wrong mapping, rosetta.verify.faults.CONVERTER_FAULTS) through every ONNX-route target, located; a row per
(fault, target) with the node named, whether it is the seeded one, the conversions used and the wall time,
plus the PNG of error/floor by depth per fault (one line per target). The test suite runs a fixed subset;
this is the whole matrix.

    python scripts/bench_locate.py --json locate.json --plot-dir docs
    python scripts/bench_locate.py --faults resnet50-layer3-weight-misread --batch 2

With --route mmdnn: every wrong model registered for the MMdnn route (rosetta.verify.faults.FAULTS) through
each of its targets, and the correct conversions of every reference model MMdnn converts, located by
bisection of MMdnn's IR (rosetta.verify.locate_mmdnn): a correct one must be "not reproduced".

    python scripts/bench_locate.py --route mmdnn --batch 2 --json locate-mmdnn.json
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from rosetta.convert.store import ArtifactStore
from rosetta.convert.targets import get_target, list_targets, load_verify_runner
from rosetta.models import get_model, list_models
from rosetta.progress import progress_bar
from rosetta.report.locate import depth_chart
from rosetta.verify.cells import reference_for
from rosetta.verify.faults import CONVERTER_FAULTS, ConverterFault, faulty_chain
from rosetta.verify.locate import locate
from rosetta.verify.tolerance import TolerancePolicy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--faults", default="all", help="converter faults, comma-separated, or all")
    parser.add_argument("--targets", default="all", help="ONNX-route targets, comma-separated, or all")
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--mechanisms", default="intermediates,bisection",
                        help="intermediates,bisection (default), or bisection alone: what it costs without the "
                             "intermediates model")
    parser.add_argument("--route", default="onnx", choices=("onnx", "mmdnn"))
    parser.add_argument("--correct", action="store_true",
                        help="ONNX route: also the correct conversion of every reference model (must not be blamed)")
    parser.add_argument("--every-target", action="store_true",
                        help="with --route mmdnn: each wrong model through every target, not only the ones the "
                             "tests run it in")
    parser.add_argument("--work-dir", type=Path, help="artifact store (default: a temporary folder)")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--plot-dir", type=Path)
    args = parser.parse_args()
    if args.route == "mmdnn":
        return mmdnn_route(args)
    faults = list(CONVERTER_FAULTS) if args.faults == "all" else \
        [CONVERTER_FAULTS.get(name) for name in args.faults.split(",") if name]
    if args.correct:  # the correct converter of every reference model: each must be "not reproduced"
        faults += [ConverterFault(f"{model} (correct)", model, "the target's own chain", None, "", "")
                   for model in list_models()]
    targets = list_targets("onnx") if args.targets == "all" else args.targets.split(",")
    policy = TolerancePolicy()
    rows, reports = [], {}
    with tempfile.TemporaryDirectory(prefix="rosetta-locate-") as scratch:
        store = ArtifactStore(args.work_dir or Path(scratch) / "store")
        with progress_bar(len(faults) * len(targets), "locating") as advance:
            for fault in faults:
                spec = get_model(fault.model)
                modules = {name for name, _ in spec.build(0).named_modules() if name}
                feeds = reference_for(fault.model, 0, args.batch).feeds
                for name in targets:
                    advance(f"{fault.name} -> {name}")
                    target = get_target(name)
                    source = store.get(spec, 0, target.chain[: target.chain.index("onnx") + 1], target.export_options())
                    start = time.perf_counter()
                    report = locate(source, faulty_chain(target, fault.edit),
                                    lambda folder, runner=target.runner: load_verify_runner(runner, folder), feeds,
                                    policy, Path(scratch) / f"{fault.name}-{name}", name, modules,
                                    mechanisms=tuple(args.mechanisms.split(",")))
                    seconds = time.perf_counter() - start
                    named = [report.first.node, *report.unread] if report.first else []
                    right = fault.node in named if fault.edit else report.verdict == "not reproduced"
                    rows.append({"fault": fault.name, "target": name, "verdict": report.verdict,
                                 "node": report.first.node if report.first else "", "unread": report.unread,
                                 "seeded": fault.node, "right": right, "origin": report.origin,
                                 "expected_origin": fault.origin, "mechanism": report.mechanism,
                                 "conversions": report.conversions, "seconds": round(seconds, 2),
                                 "summary": report.summary()})
                    reports.setdefault(fault.name, []).append(report)
            advance(None)
    table = Table(title=f"--locate on converter faults (batch {args.batch})", title_justify="left")
    for column in ("fault", "target", "named node", "right", "origin", "conversions", "seconds"):
        table.add_column(column)
    for row in rows:
        node = row["node"] + (f" (or {', '.join(row['unread'])})" if row["unread"] else "")
        table.add_row(row["fault"], row["target"], node or row["verdict"], "yes" if row["right"] else "NO",
                      row["origin"] or "?", str(row["conversions"]), f"{row['seconds']:.1f}")
    Console().print(table)
    right = sum(row["right"] for row in rows)
    print(f"named the seeded node in {right}/{len(rows)} cells")
    if args.json:
        args.json.write_text(json.dumps({"batch": args.batch, "rows": rows}, indent=2) + "\n")
    if args.plot_dir:
        args.plot_dir.mkdir(parents=True, exist_ok=True)
        for name, fault_reports in reports.items():
            print(f"wrote {depth_chart(name, fault_reports, policy.multiple, args.plot_dir / f'locate-{name}.png')}")


def mmdnn_route(args) -> None:
    """The MMdnn route's wrong models and correct conversions, located by IR bisection; a row each."""
    from rosetta.verify.cells import VerifyCell
    from rosetta.verify.faults import fault_cases
    from rosetta.verify.locate import source_layer
    from rosetta.verify.locate_mmdnn import locate_reference_cell

    targets = list_targets("mmdnn") if args.targets == "all" else args.targets.split(",")
    faults = {fault.name: fault for fault, _ in fault_cases("mmdnn")
              if args.faults == "all" or fault.name in args.faults.split(",")}
    cases = [(fault, fault.model, target) for fault in faults.values() for target in targets
             if args.every_target or target in fault.applies_to("mmdnn")]
    cases += [(None, model, target) for model in ("cnn", "resnet50") for target in targets]  # GRU: CANNOT
    rows = []
    with tempfile.TemporaryDirectory(prefix="rosetta-locate-") as scratch:
        store = ArtifactStore(args.work_dir or Path(scratch) / "store")
        with progress_bar(len(cases), "locating") as advance:
            for fault, model, name in cases:
                advance(f"{fault.name if fault else model} -> mmdnn:{name}")
                target = get_target(name, "mmdnn")
                ir = fault.export(store, 0, target, {}) if fault else None
                store.get(get_model(model), 0, target.chain[:2], target.export_options())  # the IR, made before timing
                start = time.perf_counter()
                report = locate_reference_cell(VerifyCell(model, name, "mmdnn", seed=0, batch=args.batch), target,
                                               store, Path(scratch) / f"{fault.name if fault else model}-{name}", ir=ir)
                seconds = time.perf_counter() - start
                modules = {m for m, _ in get_model(model).build(0).named_modules() if m}
                right = (report.verdict == "not reproduced") if fault is None else \
                    (report.first is not None and report.first.source_layer == source_layer(fault.node, modules))
                rows.append({"case": fault.name if fault else f"{model} (correct)", "target": name,
                             "verdict": report.verdict, "node": report.first.node if report.first else "",
                             "right": right, "origin": report.origin, "conversions": report.conversions,
                             "seconds": round(seconds, 2), "summary": report.summary()})
            advance(None)
    table = Table(title=f"--locate on the MMdnn route (IR bisection, batch {args.batch})", title_justify="left")
    for column in ("case", "target", "named IR node", "right", "origin", "emissions", "seconds"):
        table.add_column(column)
    for row in rows:
        table.add_row(row["case"], row["target"], row["node"] or row["verdict"], "yes" if row["right"] else "NO",
                      row["origin"] or "-", str(row["conversions"]), f"{row['seconds']:.1f}")
    Console(width=150).print(table)
    print(f"right in {sum(row['right'] for row in rows)}/{len(rows)} cells")
    if args.json:
        args.json.write_text(json.dumps({"route": "mmdnn", "batch": args.batch, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
