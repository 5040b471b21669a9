"""`rosetta conformance`: ONNX's backend test cases through every ONNX-route target (rosetta.api.conformance)."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from rosetta import api
from rosetta.cli.flags import said_with_flags
from rosetta.cli.options import (EPILOG_EXIT, add_executor_options, console, executor_options, positive_int,
                                 progress, target_names)

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
               "      (the whole suite, 2,024 cases in both modes x 6 targets: about 16 min on 2 cores, --jobs 2)\n"
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
                                  "rest; FILE is rewritten every minute, so a run that is stopped resumes where "
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
    command = "rosetta " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv[1:] else "rosetta conformance"
    done = api.conformance(args.targets, args.suite, modes=args.modes, ops=args.ops, cases=args.cases, results_file=args.json,
                           resume=args.resume, report_dir=args.report, work_dir=args.work_dir, check=args.check,
                           write_expectations=args.write_expectations, command=command, progress=progress(args),
                           **executor_options(args))
    done = said_with_flags(done)
    done.print(console())
    return done.status
