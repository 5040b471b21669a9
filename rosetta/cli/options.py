"""What the commands share: the parser class, argument types, option groups, exit statuses, result printing."""

from __future__ import annotations

import argparse
import os
import sys

from rosetta import api
from rosetta.api import DEFAULT_TIMEOUT_S, EXPORT_DEFAULTS
from rosetta.errors import RosettaError

__all__ = ["EXIT_PASS", "EXIT_FAIL", "EXIT_USAGE", "EXIT_ERROR", "EPILOG_EXIT", "exit_for", "Parser", "positive_int",
           "non_negative_int", "seed_list", "add_threads_option", "refuse_unused", "check_input_options",
           "target_names", "workload_names", "add_model_options", "add_user_model_options", "add_tolerance_options",
           "add_export_options", "export_options", "progress", "console", "print_report", "add_locate_options",
           "check_locate_options", "write_locate", "executor_options"]

EXIT_PASS, EXIT_FAIL, EXIT_USAGE, EXIT_ERROR = 0, 1, 2, 3

EPILOG_EXIT = ("verdicts: PASS (numbers agree), FAIL (numbers differ: a wrong conversion), CANNOT (a converter "
               "refused the model or lacks an op), ERROR (a crash, a hang, or an artifact that does not run), "
               "INCONCLUSIVE (numbers agree, but the reference output is constant, so they could not differ). "
               "exit status: 0 no FAIL or ERROR, 1 some FAIL (with --strict: anything but PASS), 2 usage or "
               "input error, 3 some ERROR and no FAIL")


class Parser(argparse.ArgumentParser):
    """argparse that reports a usage error on one line (and exit 2), without the usage dump."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_USAGE, f"rosetta: error: {message} (see `{self.prog} --help`)\n")


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {text!r}")
    return value


def _non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0, got {text!r}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a finite number > 0, got {text!r}")
    return value


def seed_list(text: str) -> list[int]:
    try:
        seeds = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seeds like 0 or 0,1,2, got {text!r}") from None
    if not seeds or any(s < 0 for s in seeds):
        raise argparse.ArgumentTypeError(f"expected non-negative seeds like 0 or 0,1,2, got {text!r}")
    return seeds


def input_spec(text: str):
    try:
        return api.parse_input(text)
    except RosettaError as error:
        raise argparse.ArgumentTypeError(str(error).removeprefix(f"--input {text!r}: ")) from None


def _tolerance_option(text: str) -> tuple[str, float]:
    name, _, value = text.rpartition(":")
    return name, _non_negative_float(value)


def workload_names() -> list[str]:
    return api.list_workloads()


def target_names() -> list[str]:
    return api.list_targets("onnx")[1:]  # without "onnx", the route's hub


def add_model_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seed", type=non_negative_int, default=0,
                        help="weight seed of a reference model, and the seed of the generated inputs (default: 0)")
    add_threads_option(parser)


def add_threads_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--threads", type=non_negative_int, default=0,
                        help="CPU threads per framework (default: 0, the framework's own)")


def refuse_unused(args, options: dict[str, str], why: str) -> None:
    """Refuse options the command would ignore here (`options`: destination -> flag): given with a value
    other than None, False or empty, each is one line that says `why`, not a silent no-op."""
    for dest, flag in options.items():
        if getattr(args, dest, None) not in (None, False, [], ()):
            raise RosettaError(f"{flag} {why}")


def check_input_options(args) -> None:
    """One --input per input name: a repeated one would silently replace the first."""
    names = [spec.name for spec in getattr(args, "input", [])]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise RosettaError(f"--input {repeated[0]} is given more than once; give each input once")


def add_user_model_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--input", action="append", default=[], metavar="NAME:SHAPE:DTYPE[:LOW:HIGH]",
                        type=input_spec, help="an input's shape, dtype and value range, e.g. "
                        "image:Nx3x32x32:float32 or tokens:Nx100:int64:0:20000 (N: batch); needed where the "
                        "model does not say (PyTorch factories, MXNet symbols, free axes); repeatable")
    parser.add_argument("--batch", type=positive_int, default=8, help="batch size of the generated inputs (default: 8)")
    parser.add_argument("--trust-code", action="store_true",
                        help="allow what runs code or reaches outside the model's folder: PyTorch factories "
                             "(file.py:function), Keras Lambda layers, pickled objects and unchecked expressions "
                             "in .pt2 files, SavedModel ops outside rosetta's list of pure tensor ops (file, "
                             "Python, print ops), MMdnn's generated code. Off by default (README: Safety)")
    parser.add_argument("--timeout", type=_positive_float, metavar="SECONDS",
                        help=f"kill a framework worker that runs longer, and stop a PyTorch factory or module "
                             f"that runs longer in rosetta's own process (default: {DEFAULT_TIMEOUT_S:g}); with "
                             "--address: how long to wait for the Ray cluster (default: 30)")
    _add_memory_option(parser)


def _add_memory_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--max-memory", type=_positive_float, metavar="GIB",
                        help="refuse, before any work, generated inputs and reference outputs larger than this "
                             "(default: half of this machine's memory)")


def add_tolerance_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--atol", action="append", default=[], type=_tolerance_option, metavar="[OUTPUT:]VALUE",
                        help="absolute tolerance instead of the calibrated one, for all outputs or one; repeatable")
    parser.add_argument("--rtol", action="append", default=[], type=_tolerance_option, metavar="[OUTPUT:]VALUE",
                        help="relative tolerance instead of the calibrated one, for all outputs or one; repeatable")
    parser.add_argument("--tolerance-multiple", type=_non_negative_float, default=None,
                        help="calibrated tolerance: allowed multiple of the noise floor (default: see README)")
    parser.add_argument("--strict", action="store_true",
                        help="exit 1 unless every row is PASS (CANNOT and INCONCLUSIVE rows included)")


def exit_for(report, args) -> int:
    """The exit status the verdicts of a report's rows give (--strict: anything but PASS is 1)."""
    return report.exit_status(args.strict)


def add_locate_options(parser: argparse.ArgumentParser) -> None:
    from pathlib import Path

    parser.add_argument("--locate", action="store_true",
                        help="for each FAIL (inference): name the first node whose value in the target crosses the "
                             "tolerance, its source layer (torch module, Keras layer, MXNet node), and whether its "
                             "conversion introduced the error. ONNX route: the export's ONNX nodes (prefix graphs "
                             "converted along the same chain); MMdnn route: MMdnn's IR nodes (IR prefixes emitted by "
                             "the same emitter, bisected); ONNX files: the first node of each that differs from the "
                             "first (by tensor name); two independently written models (a hand or library port): "
                             "the first segment of layers between two tensors that agree, on each side, whether "
                             "the port's segment introduced the error, and the porting bug named. Per-node figures "
                             "in --json")
    parser.add_argument("--locate-dir", metavar="DIR", type=Path,
                        help="with --locate: write locate-MODEL.png (error/floor by depth, one line per target) and "
                             "locate-MODEL-TARGET.explorer.json (node data for Google's Model Explorer) here")


def check_locate_options(args) -> None:
    if args.locate_dir and not args.locate:
        raise RosettaError("--locate-dir is for --locate: add --locate")
    api.check_writable(args.locate_dir, folder=True)


def write_locate(args, report) -> None:
    """--locate-dir: the PNG and Model Explorer files of the located FAIL rows."""
    if args.locate_dir:
        for path in report.write_locate(args.locate_dir):
            print(f"wrote {path}")


def add_export_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--opset", type=_opset, default=None,
                        help=f"ONNX opset (default: {EXPORT_DEFAULTS['opset']})")
    parser.add_argument("--exporter", choices=("torchscript", "dynamo"), default=None,
                        help="torch.onnx exporter; default: torchscript, and dynamo where the TorchScript "
                             "exporter refuses the model (the manifest says so); one named is the only one tried")
    parser.add_argument("--training", choices=("eval", "preserve", "train"), default=None,
                        help="export mode: eval (BatchNorm folded), preserve (BatchNorm kept, for training), "
                             "train (training-mode graph); default: preserve for trainable targets "
                             "(torch, keras, mxnet), else eval")


OLDEST_OPSET = 7  # the oldest torch.onnx and tf2onnx export


def _opset(text: str) -> int:
    """An ONNX opset that exists: a newer one than the onnx library knows would be stamped on a model no
    runtime reads (torch's dynamo exporter wrote opset 99 without a word)."""
    import onnx

    value = positive_int(text)
    newest = onnx.defs.onnx_opset_version()
    if not OLDEST_OPSET <= value <= newest:
        raise argparse.ArgumentTypeError(f"ONNX opsets run from {OLDEST_OPSET} to {newest} (onnx {onnx.__version__}); "
                                         f"got {text!r}")
    return value


def export_options(args) -> dict:
    options = {"opset": args.opset, "exporter": args.exporter, "training": args.training}
    return {key: value for key, value in options.items() if value is not None}


def add_executor_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--executor", choices=("local", "ray"), default="local",
                        help="where the cells run: local (default: here, frameworks in warm worker processes) or "
                             "ray (each cell a Ray task; needs dl-rosetta[ray])")
    parser.add_argument("--jobs", type=positive_int, default=None, metavar="N",
                        help=f"with --executor local: cells run side by side, each in a process of its own "
                             f"(default: {default_jobs()}, this machine's cores up to {MAX_DEFAULT_JOBS}; "
                             "benchmark cells always one at a time)")
    parser.add_argument("--address", metavar="ADDRESS",
                        help="with --executor ray: a running Ray cluster (auto, or ray://HEAD:10001); default: "
                             "start a local Ray instance. Every node needs rosetta installed and the --work-dir")


MAX_DEFAULT_JOBS = 2  # each side-by-side cell can hold TensorFlow, MXNet and torch at once: a few GB each


def default_jobs() -> int:
    return max(1, min(os.cpu_count() or 1, MAX_DEFAULT_JOBS))


def executor_options(args) -> dict:
    """The API's executor, jobs and address from --executor/--jobs/--address."""
    if args.jobs is not None and args.executor != "local":
        raise RosettaError("--jobs is for --executor local; Ray places cells by their CPUs")
    return {"executor": args.executor, "jobs": args.jobs or default_jobs(), "address": args.address}


def progress(args) -> bool:
    """A progress bar unless --no-progress, and only on a terminal."""
    return not args.no_progress and sys.stderr.isatty()


def console():
    from rich.console import Console

    return Console(width=None if sys.stdout.isatty() else 200)


def print_report(report, verbose: bool) -> None:
    report.print(console(), verbose)
