"""`rosetta conformance`: ONNX's backend test cases through every ONNX-route target (rosetta.verify.conformance)."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from pathlib import Path

from rosetta.cli.options import (EPILOG_EXIT, add_executor_options, check_writable_file, console, executor,
                                 positive_int, progress, target_names)
from rosetta.errors import RosettaError

DEFAULT_TIMEOUT_S = 300  # per job: a converter that hangs on one case is that case's ERROR


def add_parser(commands, common: argparse.ArgumentParser) -> None:
    conformance = commands.add_parser(
        "conformance", parents=[common], help="run ONNX's backend test suite through every target",
        description="Convert each case of ONNX's own backend test suite (the onnx wheel's node tests, generated in "
                    "memory, and its pytorch-converted, pytorch-operator and simple model tests) to each target, "
                    "run it, and compare with the suite's expected outputs at the suite's tolerance (rtol 1e-3, "
                    "atol 1e-7), recording rosetta's float32 rule beside it. Each (case, target) is PASS, FAIL "
                    "(converted, wrong numbers), CANNOT (refused, with the reason) or ERROR (crash or hang).",
        epilog="examples:\n  rosetta conformance --targets all --ops Conv,GRU,Hardmax --json conformance.json\n"
               "  rosetta conformance --targets all --suite all --report docs\n"
               "      (the whole suite, 2,024 cases x 6 targets: about 11 min on 2 cores)\n"
               "  rosetta conformance --targets torch,mxnet --suite node,simple --cases test_relu,test_cumsum_1d\n"
               "  rosetta conformance --targets all --ops Conv --json c.json --resume --check expected.json\n"
               "  rosetta conformance --targets all --ops Hardmax,CumSum --check   (against rosetta's own expectations)\n"
               + EPILOG_EXIT,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    conformance.add_argument("--targets", default="all",
                             help=f"targets, comma-separated, or all (default): {', '.join(target_names())}")
    conformance.add_argument("--suite", default="node",
                             help="suites, comma-separated: node (default), pytorch-converted, pytorch-operator, simple; or all")
    conformance.add_argument("--modes", default="all",
                             help="plain (every input a graph input, as the suite writes it), initializers (the "
                                  "inputs real models hold as constants, weights, shapes, pads, axes, bound as "
                                  "initializers), or all (default): comma-separated")
    conformance.add_argument("--ops", help="only the cases whose graph uses one of these ONNX ops, comma-separated")
    conformance.add_argument("--cases", help="only these cases, by name, comma-separated (e.g. test_relu)")
    conformance.add_argument("--work-dir", type=Path, help="write the cases and conversions here (default: a temporary folder)")
    conformance.add_argument("--json", metavar="FILE", type=Path, help="write every row and the summary as JSON")
    conformance.add_argument("--report", metavar="DIR", type=Path,
                             help="write DIR/conformance.md (summary, op x target table, every FAIL) and DIR/conformance.png")
    conformance.add_argument("--resume", action="store_true",
                             help="keep the rows of --json FILE from an earlier run (all but ERROR rows and rows "
                                  "made by other versions of rosetta, a converter or the runtime) and run only the "
                                  "rest; FILE is rewritten every 60 pairs, so a run that is stopped resumes where "
                                  "it was")
    conformance.add_argument("--check", metavar="FILE", type=Path, nargs="?", const=True,
                             help="compare every verdict with the expectations in FILE (--write-expectations; "
                                  "default: rosetta's own, the full suite on the pinned converters): exit 1 and "
                                  "list each pair whose verdict changed, for better or worse")
    conformance.add_argument("--write-expectations", metavar="FILE", type=Path,
                             help="write this run's verdicts as expectations for --check")
    conformance.add_argument("--timeout", type=positive_int, default=DEFAULT_TIMEOUT_S,
                             help=f"seconds a conversion or run may take before it is an ERROR (default {DEFAULT_TIMEOUT_S})")
    conformance.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_executor_options(conformance)


def run(args) -> int:
    from rosetta.convert.targets import parse_target_list
    from rosetta.report.conformance import (conformance_heatmap, conformance_markdown, conformance_table,
                                            coverage_table, summary)
    from rosetta.scratch import scratch_folder
    from rosetta.output import atomic_write_text
    from rosetta.verify.conformance import (EXPECTATIONS, MODES, SUITES, check_expectations, collect_cases,
                                            expectations, expectations_text, reusable, row_key, run_conformance,
                                            version_drift)
    from rosetta.verify.results import exit_status

    targets = parse_target_list(args.targets)
    suites = list(SUITES) if args.suite.strip() == "all" else [s.strip() for s in args.suite.split(",") if s.strip()]
    unknown = [s for s in suites if s not in SUITES]
    if unknown:
        raise RosettaError(f"unknown suite {', '.join(unknown)}; choose from: {', '.join(SUITES)}")
    modes = list(MODES) if args.modes.strip() == "all" else [m.strip() for m in args.modes.split(",") if m.strip()]
    if not modes or set(modes) - set(MODES):
        raise RosettaError(f"unknown mode {args.modes!r}; choose from: {', '.join(MODES)}, all")
    check_writable_file(args.json)
    check_writable_file(args.write_expectations)
    if args.check is True:
        args.check = EXPECTATIONS
    expected = _read_json(args.check, "--check") if args.check else None
    if args.resume and not args.json:
        raise RosettaError("--resume needs --json FILE: the rows of the earlier run are read from it")
    done = {}
    if args.resume and args.json.is_file():
        done = reusable({row_key(r): r for r in _read_json(args.json, "--json").get("rows", [])}, targets)
    ops = [o.strip() for o in args.ops.split(",")] if args.ops else None
    names = [c.strip() for c in args.cases.split(",")] if args.cases else None
    chosen = executor(args)

    def write(results) -> None:
        if args.json:
            rows = [r.to_json() for r in results]
            atomic_write_text(args.json, json.dumps({"suites": suites, "modes": modes, "targets": [t.name for t in targets],
                                                     "executor": chosen.describe(), "summary": summary(rows),
                                                     "rows": rows}, indent=1) + "\n")

    started = time.monotonic()
    with scratch_folder("rosetta-conformance-") as scratch:
        work = args.work_dir or Path(scratch)
        cases = collect_cases(work / "cases", suites, ops, names, modes)
        if not cases:
            raise RosettaError("no test case matches --ops/--cases in the chosen suites")
        results = run_conformance(cases, targets, work / "converted", chosen, progress(args), done, write)
    rows = [r.to_json() for r in results]
    kept = sum(row_key(r) in done for r in rows)
    minutes, seconds = divmod(round(time.monotonic() - started), 60)
    how = (f"{len(rows) - kept:,} pairs run in {minutes} min {seconds:02d} s" + (f" ({kept:,} kept from an earlier run)"
           if kept else "") + f", executor {chosen.name}" + (f" ({chosen.jobs} at a time)" if getattr(chosen, "jobs", 0) else "")
           + f", on {os.cpu_count()} cores")
    console().print(conformance_table(rows))
    console().print(coverage_table(rows))
    command = "rosetta " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv[1:] else "rosetta conformance"
    write(results)
    if done:
        print(f"resumed: {kept} of {len(rows)} rows kept from {args.json}")
    if args.write_expectations:
        atomic_write_text(args.write_expectations, expectations_text(expectations(rows, targets)))
        print(f"wrote {args.write_expectations}")
    if args.report:
        args.report.mkdir(parents=True, exist_ok=True)
        (args.report / "conformance.md").write_text(conformance_markdown(rows, "ONNX backend-test conformance", command,
                                                                                how))
        conformance_heatmap(rows, args.report / "conformance.png")
        print(f"wrote {args.report / 'conformance.md'}, {args.report / 'conformance.png'}")
    status = exit_status([row["verdict"] for row in rows])
    if expected is not None:
        differences, unnamed = check_expectations(rows, expected)
        for line in version_drift(expected, targets) if differences else []:
            print(f"{args.check} was written with other versions: {line}")
        for line in differences:
            print(f"changed: {line}")
        if unnamed:
            print(f"{len(unnamed)} pair(s) not in {args.check} (not checked), e.g. {unnamed[0]}")
        print(f"--check: {len(rows) - len(unnamed) - len(differences)} verdicts as expected, {len(differences)} changed")
        return 1 if differences else 0  # an expected FAIL or ERROR is what --check was told to expect
    return status


def _read_json(path: Path, flag: str) -> dict:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError) as error:
        raise RosettaError(f"{flag} {path}: not a readable JSON file ({type(error).__name__})") from None
