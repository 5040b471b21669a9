"""The `rosetta` command: parses arguments, calls the library, prints. No logic of its own.

Exit status: 0 when every verdict is PASS, 1 when any is FAIL, 2 on a usage or input error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from rosetta import __version__
from rosetta.errors import RosettaError
from rosetta.scratch import scratch_folder
from rosetta.sources.files import FORMATS_HELP
from rosetta.execution import DEFAULT_TIMEOUT_S

EXIT_PASS, EXIT_FAIL, EXIT_USAGE = 0, 1, 2

EPILOG_EXIT = "exit status: 0 all PASS, 1 some FAIL, 2 usage or input error"


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage error on one line (and exit 2), without the usage dump."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_USAGE, f"rosetta: error: {message} (see `{self.prog} --help`)\n")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0, got {text!r}")
    return value


def _seed_list(text: str) -> list[int]:
    try:
        seeds = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seeds like 0 or 0,1,2, got {text!r}") from None
    if not seeds or any(s < 0 for s in seeds):
        raise argparse.ArgumentTypeError(f"expected non-negative seeds like 0 or 0,1,2, got {text!r}")
    return seeds


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="rosetta", description="Convert deep-learning models between frameworks, "
                     "verify that the converted model computes the same function, and time it.",
                     epilog=EPILOG_EXIT)
    parser.add_argument("--version", action="version", version=f"rosetta {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="show framework logs and failure details")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    common = argparse.ArgumentParser(add_help=False)  # -v also after the command: `rosetta verify -v`
    common.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                        help="show framework logs and failure details")

    models = commands.add_parser("models", parents=[common], help="list the reference models",
                                 description="List the reference models with their inputs and parameter counts.",
                                 epilog="example: rosetta models --json models.json")
    models.add_argument("--json", metavar="FILE", type=Path, help="also write the list as JSON")

    convert = commands.add_parser(
        "convert", parents=[common], help="convert your model file (or a reference model) to other frameworks",
        description="Convert a model to other formats and verify each conversion against the original on "
                    "generated inputs. MODEL is " + FORMATS_HELP + ". Each target is written to OUTPUT/TARGET/ "
                    "(artifact + manifest.json), atomically: nothing is left behind on an error. A target that "
                    "cannot be converted is a FAIL row with its reason; the others still run.",
        epilog="examples:\n"
               "  rosetta convert model.onnx --to all -o out/\n"
               "  rosetta convert model.keras --to onnx,torch,mxnet -o out/\n"
               "  rosetta convert net.py:build --input image:Nx3x32x32:float32 --trust-code --to tensorflow,keras,onnxruntime -o out/\n"
               "  rosetta convert saved_model_dir/ --to onnx,torch -o out/ --atol logits:1e-4\n"
               "  rosetta convert --model cnn --to onnx -o out/cnn-onnx    (a reference model: one target)\n"
               + EPILOG_EXIT,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    convert.add_argument("path", nargs="?", metavar="MODEL", help="your model (see above); or use --model")
    convert.add_argument("--model", help="a reference model instead of a file (see `rosetta models`)")
    convert.add_argument("--to", required=True,
                         help=f"targets, comma-separated, or all: onnx, {', '.join(_target_names())}")
    convert.add_argument("-o", "--output", required=True, type=Path, help="output folder (must not exist or be empty)")
    convert.add_argument("--via", default="onnx",
                         help="route: onnx (default) or mmdnn (MMdnn's IR; from PyTorch, MXNet and Keras models)")
    convert.add_argument("--no-progress", action="store_true", help="no progress bar")
    convert.add_argument("--force", action="store_true", help="replace a non-empty output folder")
    convert.add_argument("--no-verify", action="store_true", help="convert only; do not verify the conversions")
    convert.add_argument("--json", metavar="FILE", type=Path, help="also write the results (or the manifest) as JSON")
    _add_model_options(convert)
    _add_user_model_options(convert)
    _add_tolerance_options(convert)
    _add_export_options(convert)

    verify = commands.add_parser(
        "verify", parents=[common], help="compare model files, or verify converted reference models",
        description="With MODEL files: run them all on the same inputs and compare each with the first (the "
                    "reference), or with outputs saved earlier (--load-outputs). MODEL is " + FORMATS_HELP + ". "
                    "Without: convert the reference models (--model) to --targets and verify each against "
                    "PyTorch. The reference runs in float32 and, where rosetta can cast it (PyTorch), float64: a "
                    "model PASSes when its error stays within a multiple of the reference's own float32 noise "
                    "floor (or within --atol/--rtol); without float64, within 1000 float32 ulps at the output's "
                    "scale.",
        epilog="examples:\n  rosetta verify model.onnx out/torch out/keras\n"
               "  rosetta verify model.onnx --save-inputs in.npz --save-outputs ref.npz   (on one machine)\n"
               "  rosetta verify model.keras --inputs in.npz --load-outputs ref.npz      (on another)\n"
               "  rosetta verify net.py:build model.onnx --input x:Nx16:float32 --trust-code --atol out:1e-5\n"
               "  rosetta verify --model cnn,gru,resnet50 --targets onnxruntime --json results.json\n"
               "  rosetta verify --model gru --targets all\n"
               "  rosetta verify --model resnet50 --via onnx,mmdnn --targets torch,tensorflow,keras,mxnet,onnxruntime\n"
               "  rosetta verify --model cnn,gru --targets torch,keras,mxnet --train-steps 5 --precision float64\n"
               + EPILOG_EXIT,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    verify.add_argument("paths", nargs="*", metavar="MODEL", help="model files to compare, the first as reference")
    verify.add_argument("--model", help="reference models, comma-separated, or all (default without MODEL: all)")
    verify.add_argument("--targets", default="onnxruntime",
                        help=f"targets, comma-separated, or all (default: onnxruntime); onnx route: {', '.join(_target_names())}")
    verify.add_argument("--via", default="onnx",
                        help="route(s) the targets are reached by, comma-separated: onnx (default), mmdnn (MMdnn's "
                             "IR), or onnx,mmdnn for both side by side")
    verify.add_argument("--seed", type=_seed_list, default=[0], help="seed(s) for weights and inputs, e.g. 0 or 0,1,2")
    _add_tolerance_options(verify)
    verify.add_argument("--train-steps", type=_positive_int, metavar="K",
                        help="also check training: K optimiser steps (DLF optimiser) from the same weights on the same "
                             "batches in each trainable target (torch, keras, mxnet), comparing losses and weights")
    verify.add_argument("--precision", choices=("float32", "float64"), default="float32",
                        help="training check precision: float32 (calibrated tolerance) or float64 (must agree to "
                             "~1e-10: separates conversion bugs from float32 noise); default float32")
    verify.add_argument("--train-batch", type=_positive_int, default=4, help="training check batch size (default: 4)")
    verify.add_argument("--threads", type=int, default=0, help="CPU threads per framework (default: framework's own)")
    verify.add_argument("--work-dir", type=Path, help="keep converted artifacts here (default: a temporary folder)")
    verify.add_argument("--json", metavar="FILE", type=Path, help="write the results as JSON")
    verify.add_argument("--no-progress", action="store_true", help="no progress bar")
    _add_user_model_options(verify)
    verify.add_argument("--inputs", metavar="FILE.npz", type=Path, help="inputs to run (default: generated)")
    verify.add_argument("--save-inputs", metavar="FILE.npz", type=Path, help="write the inputs used")
    verify.add_argument("--save-outputs", metavar="FILE.npz", type=Path, help="write the reference's outputs")
    verify.add_argument("--load-outputs", metavar="FILE.npz", type=Path,
                        help="compare every MODEL with these outputs (from --save-outputs; give the same --inputs)")
    _add_export_options(verify)

    bench = commands.add_parser(
        "bench", parents=[common], help="time the DLF workloads in every framework, from converted models",
        description="Time DLF's workloads (CNN training on CIFAR-10, GRU training on IMDB, ResNet-50 feature "
                    "extraction) in each target framework, each cell in its own process: warm-up excluded, device "
                    "synchronised before every clock read, median and p10-p90 of the timed steps, peak memory. "
                    "The PyTorch reference is always timed as the baseline, and training workloads also time a "
                    "hand-written PyTorch loop to measure the harness's overhead. Prints a table; writes JSON "
                    "and one PNG chart per workload.",
        epilog="examples:\n  rosetta bench --workload cnn-train --targets torch,keras,mxnet --steps 20\n"
               "  rosetta bench --workload resnet50-features --targets all --json bench.json --plot-dir charts\n"
               "  rosetta bench --workload all --device cuda --data ~/datasets   (cifar-10-batches-py/, imdb.npz)\n"
               "exit status: 0 all cells ran, 1 some FAIL, 2 usage or input error",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    bench.add_argument("--workload", default="all", help=f"workloads, comma-separated, or all: {', '.join(_workload_names())}")
    bench.add_argument("--targets", default="all",
                       help="targets as for verify (default: all); training workloads time the trainable ones "
                            "(torch, keras, mxnet), resnet50-features all of them")
    bench.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="cpu (default) or cuda")
    length = bench.add_mutually_exclusive_group()
    length.add_argument("--steps", type=_positive_int, help="timed steps (batches) per cell (default: a short slice on "
                                                            "CPU, see README)")
    length.add_argument("--epochs", type=_positive_int, help="full DLF epochs instead of --steps (training workloads)")
    bench.add_argument("--data", type=Path, help="folder with CIFAR-10 (cifar-10-batches-py/) and IMDB (imdb.npz); "
                                                "default: synthetic data of the same shapes and dtypes")
    bench.add_argument("--threads", type=int, default=0, help="CPU threads per framework (default: framework's own)")
    bench.add_argument("--no-overhead", action="store_true", help="skip the bare-loop overhead measurement")
    bench.add_argument("--work-dir", type=Path, help="keep converted artifacts here (default: a temporary folder)")
    bench.add_argument("--json", metavar="FILE", type=Path, help="write the results as JSON")
    bench.add_argument("--plot-dir", type=Path, help="write one PNG chart per workload into this folder")
    bench.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser


def _workload_names() -> list[str]:
    from rosetta.bench.workloads import WORKLOADS

    return WORKLOADS.keys()


def _target_names() -> list[str]:
    from rosetta.convert.targets import list_targets

    return list_targets("onnx")


def _conversion_choices() -> list[str]:
    return sorted(set(_target_names()) | {"onnx"})


def _add_model_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seed", type=int, default=0, help="weight seed of a reference model, and the seed of "
                                                          "the generated inputs (default: 0)")
    parser.add_argument("--threads", type=int, default=0, help="CPU threads per framework (default: framework's own)")


def _add_user_model_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--input", action="append", default=[], metavar="NAME:SHAPE:DTYPE[:LOW:HIGH]",
                        type=_input_option, help="an input's shape, dtype and value range, e.g. "
                        "image:Nx3x32x32:float32 or tokens:Nx100:int64:0:20000 (N: batch); needed where the "
                        "model does not say (PyTorch factories, MXNet symbols, free axes); repeatable")
    parser.add_argument("--batch", type=_positive_int, default=8, help="batch size of the generated inputs (default: 8)")
    parser.add_argument("--trust-code", action="store_true",
                        help="allow what runs code or reaches outside the model's folder: PyTorch factories "
                             "(file.py:function), Keras Lambda layers, pickled objects and unchecked expressions "
                             "in .pt2 files, SavedModel ops outside rosetta's list of pure tensor ops (file, "
                             "Python, print ops), MMdnn's generated code. Off by default (README: Safety)")
    parser.add_argument("--timeout", type=_positive_float, metavar="SECONDS",
                        help=f"kill a framework worker that runs longer (default: {DEFAULT_TIMEOUT_S:g})")
    _add_memory_option(parser)


def _add_memory_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--max-memory", type=_positive_float, metavar="GIB",
                        help="refuse, before any work, generated inputs and reference outputs larger than this "
                             "(default: half of this machine's memory)")


def _add_tolerance_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--atol", action="append", default=[], type=_tolerance_option, metavar="[OUTPUT:]VALUE",
                        help="absolute tolerance instead of the calibrated one, for all outputs or one; repeatable")
    parser.add_argument("--rtol", action="append", default=[], type=_tolerance_option, metavar="[OUTPUT:]VALUE",
                        help="relative tolerance instead of the calibrated one, for all outputs or one; repeatable")
    parser.add_argument("--tolerance-multiple", type=_non_negative_float, default=None,
                        help="calibrated tolerance: allowed multiple of the noise floor (default: see README)")


def _input_option(text: str):
    from rosetta.sources.signature import parse_input_option

    try:
        return parse_input_option(text)
    except RosettaError as error:
        raise argparse.ArgumentTypeError(str(error).removeprefix(f"--input {text!r}: ")) from None


def _tolerance_option(text: str) -> tuple[str, float]:
    name, _, value = text.rpartition(":")
    return name, _non_negative_float(value)


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a finite number > 0, got {text!r}")
    return value


def tolerance_policy(args, multiple: float | None = None):
    """The TolerancePolicy the options ask for: calibrated, or global and per-output atol/rtol."""
    from rosetta.verify.tolerance import DEFAULT_MULTIPLE, TolerancePolicy

    given = {"atol": args.atol, "rtol": args.rtol}
    if args.tolerance_multiple is not None and (args.atol or args.rtol):
        raise RosettaError("give either --tolerance-multiple or --atol/--rtol, not both")
    overall = {kind: next((v for name, v in reversed(values) if not name), None) for kind, values in given.items()}
    per_output = tuple((name, kind, value) for kind, values in given.items() for name, value in values if name)
    if args.tolerance_multiple is not None:
        multiple = args.tolerance_multiple
    return TolerancePolicy(multiple=multiple if multiple is not None else DEFAULT_MULTIPLE, atol=overall["atol"],
                           rtol=overall["rtol"], per_output=per_output)


def _add_export_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--opset", type=_positive_int, default=17, help="ONNX opset (default: 17)")
    parser.add_argument("--exporter", choices=("torchscript", "dynamo"), default="torchscript",
                        help="torch.onnx exporter (default: torchscript)")
    parser.add_argument("--training", choices=("eval", "preserve", "train"), default=None,
                        help="export mode: eval (BatchNorm folded), preserve (BatchNorm kept, for training), "
                             "train (training-mode graph); default: preserve for trainable targets "
                             "(torch, keras, mxnet), else eval")


def _export_options(args) -> dict:
    options = {"opset": args.opset, "exporter": args.exporter, "training": args.training}
    return {key: value for key, value in options.items() if value is not None}


def _console():
    from rich.console import Console

    return Console(width=None if sys.stdout.isatty() else 200)


def _check_writable_file(path: Path | None) -> None:
    if path is None:
        return
    parent = path.resolve().parent
    if path.is_dir():
        raise RosettaError(f"{path} is a folder; give a file name for the JSON output")
    if not parent.is_dir():
        raise RosettaError(f"cannot write {path}: folder {parent} does not exist")
    if not os.access(parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise RosettaError(f"cannot write {path}: permission denied")


def cmd_models(args) -> int:
    from rosetta.models import get_model, list_models
    from rosetta.report.tables import models_table

    _check_writable_file(args.json)
    specs = [get_model(name) for name in list_models()]
    _console().print(models_table(specs))
    if args.json:
        args.json.write_text(json.dumps({"models": [spec.to_json() for spec in specs]}, indent=2) + "\n")
    return EXIT_PASS


def cmd_convert(args) -> int:
    if args.path is not None:
        if args.model:
            raise RosettaError("give a model file or --model NAME, not both")
        return convert_model_file(args)
    if not args.model:
        raise RosettaError("give the model to convert: a file (rosetta convert MODEL --to ...) or --model NAME")
    from dataclasses import asdict

    from rosetta.convert.output import check_output_folder
    from rosetta.convert.store import run_conversion, torch_source
    from rosetta.convert.targets import target_for_conversion
    from rosetta.models import get_model

    spec = get_model(args.model)
    target = target_for_conversion(args.to, args.via)
    chain = target.chain
    check_output_folder(args.output, args.force)
    _check_writable_file(args.json)
    options = target.export_options(_export_options(args))
    manifest = run_conversion(torch_source(spec, args.seed), chain, args.output, options, force=args.force)
    print(f"{args.model} -> {' -> '.join(chain[1:])}: {args.output / manifest.artifact} (sha256 {manifest.sha256[:12]})")
    if args.json:
        args.json.write_text(json.dumps(asdict(manifest), indent=2) + "\n")
    return EXIT_PASS


def convert_model_file(args) -> int:
    """`rosetta convert MODEL --to ...`: each target converted, verified against MODEL, written to -o."""
    from rosetta.convert.output import check_output_folder
    from rosetta.convert.store import ArtifactStore
    from rosetta.convert.user import convert_user_model, parse_user_targets, write_converted
    from rosetta.sources.model import open_model
    from rosetta.verify.artifacts import reference_outputs, run_artifact_cells
    from rosetta.verify.inputs import check_memory, generate_inputs
    from rosetta.verify.results import FAIL

    targets = parse_user_targets(args.to, args.via)
    check_output_folder(args.output, args.force)
    _check_writable_file(args.json)
    policy = tolerance_policy(args)
    progress = not args.no_progress and sys.stderr.isatty()
    check_memory(args.input, [], args.batch, args.max_memory)  # the --input shapes alone may not fit
    with scratch_folder("rosetta-") as scratch:
        model = open_model(args.path, args.input, args.trust_code, Path(scratch))
        check_memory(model.inputs, model.outputs, args.batch, args.max_memory, model.has_float64)
        cells = convert_user_model(model, targets, ArtifactStore(Path(scratch) / "store"), _export_options(args),
                                   args.threads, progress)
        if args.no_verify:
            results = [_conversion_row(cell) for cell in cells]
        else:
            reference = reference_outputs(model, generate_inputs(model.inputs, args.batch, args.seed), args.threads)
            policy = reference.policy(policy, args.tolerance_multiple is not None)
            results = run_artifact_cells(cells, reference, policy, progress)
        written = write_converted(cells, args.output, args.force)
    title = f"rosetta convert {model.label}" + ("" if args.no_verify else f" ({policy.describe()})")
    _print_results(results, title, args.verbose)
    if written:
        print(f"written: {', '.join(str(args.output / name) for name in written)}")
    if args.json:
        from rosetta.verify.results import write_results_json

        write_results_json(results, args.json, {"model": model.file.to_json(), "output": str(args.output),
                                                "tolerance": policy.to_json(), "verified": not args.no_verify})
    return EXIT_PASS if all(r.verdict != FAIL for r in results) else EXIT_FAIL


def _conversion_row(cell):
    from rosetta.verify.results import FAIL, VerifyResult

    return VerifyResult(model=cell.model, route=cell.route, target=cell.target,
                        verdict=FAIL if cell.failure else "converted", reason=cell.failure, artifact=cell.folder)


def _print_results(results, title: str, verbose: bool) -> None:
    from rosetta.report.tables import failure_lines, verify_table

    console = _console()
    console.print(verify_table(results, title=title))
    for line in failure_lines(results):
        console.print(f"[red]FAIL[/red] {line}", highlight=False)
    if verbose:
        for result in results:
            if result.detail:
                console.print(result.detail, highlight=False, markup=False)


def verify_model_files(args) -> int:
    """`rosetta verify A B [C ...]`: B, C, ... (or all, with --load-outputs) against A's outputs."""
    from rosetta.sources.files import identify
    from rosetta.sources.model import open_model
    from rosetta.verify.artifacts import (ArtifactCell, ReferenceOutputs, load_inputs, reference_outputs,
                                          run_artifact_cells, save_npz)
    from rosetta.verify.inputs import check_memory, generate_inputs
    from rosetta.execution import load_npz

    for path in (args.json, args.save_inputs, args.save_outputs):
        _check_writable_file(path)
    if args.load_outputs is not None and args.inputs is None:
        raise RosettaError("--load-outputs needs the inputs those outputs came from: add --inputs FILE.npz "
                           "(written by --save-inputs)")
    if args.load_outputs is None and len(args.paths) < 2 and not (args.save_inputs or args.save_outputs):
        raise RosettaError("give two or more models to compare (the first is the reference), or one with "
                           "--save-outputs or --load-outputs")
    policy = tolerance_policy(args)
    progress = not args.no_progress and sys.stderr.isatty()
    if args.inputs is None:
        check_memory(args.input, [], args.batch, args.max_memory)
    with scratch_folder("rosetta-") as scratch:
        for path in args.paths:  # a path that names nothing readable is a usage error, before any work
            identify(path)
        first = open_model(args.paths[0], args.input, args.trust_code, Path(scratch))
        if args.inputs is None:
            check_memory(first.inputs, first.outputs, args.batch, args.max_memory, first.has_float64)
        feeds = load_inputs(args.inputs, first) if args.inputs else generate_inputs(first.inputs, args.batch, args.seed[0])
        if args.load_outputs is not None:
            try:
                reference = ReferenceOutputs(feeds, load_npz(args.load_outputs))
            except (OSError, ValueError) as error:
                raise RosettaError(f"--load-outputs {args.load_outputs}: not a readable .npz file ({error})") from None
            label, paths = args.load_outputs.name, args.paths
        else:
            reference = reference_outputs(first, feeds, args.threads)
            label, paths = first.label, args.paths[1:]
        if args.save_inputs:
            save_npz(args.save_inputs, feeds)
        if args.save_outputs:
            save_npz(args.save_outputs, reference.float32)
        policy = reference.policy(policy, args.tolerance_multiple is not None)
        cells = []
        for path in paths:  # reading a model can crash or hang its worker: that is its row's FAIL
            try:
                model = first if path == args.paths[0] else open_model(path, args.input, args.trust_code, Path(scratch))
                failure = "" if model.folder else "a PyTorch factory can only be the reference"
                folder = str(model.folder or "")
            except RosettaError as error:
                failure, folder = f"reading failed: {error}", ""
            cells.append(ArtifactCell(label, path, folder, failure, threads=args.threads, trust_code=args.trust_code))
        results = run_artifact_cells(cells, reference, policy, progress)
    if results:
        _print_results(results, f"rosetta verify: against {label} ({policy.describe()})", args.verbose)
    else:
        print(f"{label}: ran on {len(feeds)} input(s); outputs: {', '.join(reference.float32)}")
    if args.json:
        from rosetta.verify.results import write_results_json

        write_results_json(results, args.json, {"reference": label, "tolerance": policy.to_json()})
    return EXIT_PASS if all(r.passed for r in results) else EXIT_FAIL


def cmd_verify(args) -> int:
    if args.paths:
        if args.model or args.train_steps:
            raise RosettaError("--model and --train-steps are for reference models; give model files or --model")
        return verify_model_files(args)
    for flag in ("inputs", "save_inputs", "save_outputs", "load_outputs"):
        if getattr(args, flag) is not None:
            raise RosettaError(f"--{flag.replace('_', '-')} needs model files: rosetta verify MODEL [MODEL ...]")

    from rosetta.convert.store import ArtifactStore
    from rosetta.convert.targets import parse_routes, parse_target_list
    from rosetta.models import parse_model_list
    from rosetta.verify.cells import plan_cells, run_cells
    from rosetta.verify.inputs import check_memory
    from rosetta.verify.results import write_results_json

    specs = parse_model_list(args.model or "all")
    routes = {route: parse_target_list(args.targets, route) for route in parse_routes(args.via)}
    for spec in specs:
        check_memory(spec.inputs, spec.outputs, max(args.batch, args.train_batch), args.max_memory, float64=True)
    _check_writable_file(args.json)
    policy = tolerance_policy(args)
    if policy.per_output:
        raise RosettaError("per-output tolerances (--atol OUTPUT:VALUE) are for model files; use --atol VALUE")
    export = tuple(sorted(_export_options(args).items()))
    cells = [cell for route, targets in routes.items()
             for cell in plan_cells([s.name for s in specs], [t.name for t in targets], route=route,
                                    seeds=tuple(args.seed), batch=args.batch, tolerance=policy, export=export,
                                    threads=args.threads)]
    if args.train_steps:
        cells += plan_training_cells(specs, [t for targets in routes.values() for t in targets], args, export)
    with scratch_folder("rosetta-") as scratch:
        store = ArtifactStore(args.work_dir or Path(scratch))
        results = run_cells(cells, store, progress=not args.no_progress and sys.stderr.isatty())
    _print_results(results, f"rosetta verify ({policy.describe()})", args.verbose)
    if args.json:
        write_results_json(results, args.json, {"tolerance": policy.to_json()})
    return EXIT_PASS if all(r.passed for r in results) else EXIT_FAIL


def cmd_bench(args) -> int:
    import math

    from rosetta.bench.run import run_bench
    from rosetta.bench.workloads import parse_workloads
    from rosetta.convert.store import ArtifactStore
    from rosetta.convert.targets import parse_target_list
    from rosetta.report.plots import bench_chart
    from rosetta.report.tables import bench_lines, bench_table

    workloads = parse_workloads(args.workload)
    targets = parse_target_list(args.targets)
    _check_writable_file(args.json)
    if args.data is not None and not args.data.is_dir():
        raise RosettaError(f"--data {args.data}: no such folder (it should hold cifar-10-batches-py/ and imdb.npz)")
    if args.plot_dir is not None:
        args.plot_dir.mkdir(parents=True, exist_ok=True)
    results, overheads, notes = [], {}, []
    with scratch_folder("rosetta-") as scratch:
        store = ArtifactStore(args.work_dir or Path(scratch))
        for workload in workloads:
            steps = args.steps or 0
            if args.epochs:
                steps = args.epochs * math.ceil(workload.epoch_samples / workload.batch)
            done, overhead, skipped = run_bench([workload], targets, store, device=args.device, steps=steps,
                                                threads=args.threads, data=str(args.data or ""),
                                                overhead=not args.no_overhead,
                                                progress=not args.no_progress and sys.stderr.isatty())
            results += done
            overheads.update(overhead)
            notes += skipped
    console = _console()
    console.print(bench_table(results, title=f"rosetta bench ({args.device})"))
    for line in bench_lines(results, overheads) + notes:
        console.print(line, highlight=False)
    if args.plot_dir is not None:
        for workload in workloads:
            console.print(f"chart: {bench_chart(workload, results, args.plot_dir / f'{workload.name}.png', args.device)}")
    if args.json:
        from rosetta import __version__

        payload = {"rosetta_version": __version__, "device": args.device, "threads": args.threads,
                   "workloads": [w.__dict__ for w in workloads], "results": [r.to_json() for r in results],
                   "overhead": overheads, "notes": notes}
        args.json.write_text(json.dumps(payload, indent=2, allow_nan=True) + "\n")
    return EXIT_PASS if all(r.status == "ok" for r in results) else EXIT_FAIL


def plan_training_cells(specs, targets, args, export: tuple) -> list:
    """Training cells for the trainable targets among `targets`; a usage error if there are none."""
    from rosetta.frameworks import trainable_frameworks
    from rosetta.verify.training import TRAINING_MULTIPLE, TrainCell

    trainable = [t for t in targets if t.trains and t.runner in trainable_frameworks()]
    if not trainable:
        raise RosettaError(f"--train-steps: {', '.join(f'{t.name} ({t.route})' for t in targets)} can only infer; "
                           f"trainable targets: {', '.join(trainable_frameworks())} (onnx route)")
    untrained = [s.name for s in specs if s.training is None]
    if untrained:
        raise RosettaError(f"--train-steps: model {', '.join(untrained)} has no training settings")
    policy = tolerance_policy(args, TRAINING_MULTIPLE)
    return [TrainCell(model=s.name, target=t.name, route=t.route, seed=seed, batch=args.train_batch,
                      steps=args.train_steps, precision=args.precision, tolerance=policy, export=export,
                      threads=args.threads)
            for s in specs for t in trainable for seed in args.seed]


COMMANDS = {"models": cmd_models, "convert": cmd_convert, "verify": cmd_verify, "bench": cmd_bench}


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help()
        return EXIT_USAGE
    if getattr(args, "timeout", None):
        os.environ["ROSETTA_WORKER_TIMEOUT"] = str(args.timeout)
    import logging
    import warnings

    from rosetta.processes import Terminated, raise_on_sigterm

    with warnings.catch_warnings():
        if not args.verbose:  # quiet on success: framework logs and warnings only with -v
            os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
            warnings.simplefilter("ignore")
            logging.disable(logging.WARNING)
        restore_sigterm = raise_on_sigterm()  # SIGTERM as Ctrl-C: the same cleanup runs, then exit 143
        try:
            return COMMANDS[args.command](args)
        except RosettaError as error:
            print(f"rosetta: error: {error}", file=sys.stderr)
            return EXIT_USAGE
        except OSError as error:  # a file the user named cannot be read or written
            print(f"rosetta: error: {error.strerror or error}: {error.filename or ''}", file=sys.stderr)
            return EXIT_USAGE
        except KeyboardInterrupt as interrupt:
            terminated = isinstance(interrupt, Terminated)
            print(f"rosetta: {'terminated' if terminated else 'interrupted'}", file=sys.stderr)
            return 143 if terminated else 130
        finally:
            restore_sigterm()
            logging.disable(logging.NOTSET)

if __name__ == "__main__":
    sys.exit(main())
