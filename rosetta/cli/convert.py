"""`rosetta convert`: a model file to other frameworks, each conversion verified, or a reference model to one
target; both through rosetta.api.convert."""

from __future__ import annotations

import argparse
from pathlib import Path

from rosetta import api
from rosetta.cli.flags import said_with_flags
from rosetta.cli.options import (EPILOG_EXIT, EXIT_PASS, add_executor_options, add_export_options, add_locate_options,
                                 add_model_options, add_tolerance_options, add_user_model_options,
                                 check_input_options, check_locate_options, executor_options, exit_for,
                                 export_options, print_report, progress, refuse_unused, target_names, write_locate)
from rosetta.api import MODEL_FORMATS as FORMATS_HELP
from rosetta.errors import RosettaError


def add_parser(commands, common: argparse.ArgumentParser) -> None:
    convert = commands.add_parser(
        "convert", parents=[common], help="convert your model file (or a reference model) to other frameworks",
        description="Convert a model to other formats and verify each conversion against the original on "
                    "generated inputs. MODEL is " + FORMATS_HELP + ". Each target is written to OUTPUT/TARGET/ "
                    "(artifact + manifest.json); all targets are installed together at the end, so an error or an "
                    "interruption leaves the old output or the new one, never half of one. A target that "
                    "cannot be converted is a CANNOT row with its reason; the others still run.",
        epilog="examples:\n"
               "  rosetta convert model.onnx --to all -o out/\n"
               "  rosetta convert model.keras --to onnx,torch,mxnet -o out/\n"
               "  rosetta convert net.py:build --input image:Nx3x32x32:float32 --trust-code --to tensorflow,keras,onnxruntime -o out/\n"
               "  rosetta convert saved_model_dir/ --to onnx,torch -o out/ --atol logits:1e-4\n"
               "  rosetta convert model.h5 --via mmdnn --to torch -o out/ --locate   (where does a FAIL diverge?)\n"
               "  rosetta convert --model cnn --to onnx -o out/cnn-onnx    (a reference model: one target)\n"
               + EPILOG_EXIT,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    convert.add_argument("path", nargs="?", metavar="MODEL", help="your model (see above); or use --model")
    convert.add_argument("--model", help="a reference model instead of a file (see `rosetta models`)")
    convert.add_argument("--to", required=True,
                         help=f"targets, comma-separated, or all: onnx, {', '.join(target_names())}")
    convert.add_argument("-o", "--output", required=True, type=Path,
                         help="output folder: new or empty (with --force, see there); written into, never replaced, "
                              "and never one that holds the model")
    convert.add_argument("--via", default="onnx",
                         help="route: onnx (default) or mmdnn (MMdnn's IR; from PyTorch, MXNet and Keras models)")
    convert.add_argument("--no-progress", action="store_true", help="no progress bar")
    convert.add_argument("--force", action="store_true",
                         help="write into a non-empty output folder, replacing only what rosetta wrote there before "
                              "under the same names (never your other files); the old entries stay until the new "
                              "ones are complete")
    convert.add_argument("--no-verify", action="store_true", help="convert only; do not verify the conversions")
    convert.add_argument("--json", metavar="FILE", type=Path, help="also write the results (or the manifest) as JSON")
    add_model_options(convert)
    add_user_model_options(convert)
    add_tolerance_options(convert)
    add_locate_options(convert)
    add_export_options(convert)
    add_executor_options(convert)


# what only a model file's conversion uses (it is verified; a reference model's conversion is not): given with
# --model, each is refused rather than ignored
MODEL_FILE_ONLY = {"input": "--input", "trust_code": "--trust-code", "atol": "--atol", "rtol": "--rtol",
                   "tolerance_multiple": "--tolerance-multiple", "max_memory": "--max-memory", "locate": "--locate",
                   "no_verify": "--no-verify", "threads": "--threads", "jobs": "--jobs", "strict": "--strict"}


def run(args) -> int:
    check_locate_options(args)
    check_input_options(args)
    # a reference model named as MODEL: as --model NAME; the file test first, since the registry imports torch
    if args.path is not None and not args.model and not Path(args.path).exists() and args.path in api.list_models():
        args.model, args.path = args.path, None
    if args.path is not None:
        if args.model:
            raise RosettaError("give a model file or --model NAME, not both")
        return _convert_file(args)
    if not args.model:
        raise RosettaError("give the model to convert: a file (rosetta convert MODEL --to ...) or --model NAME")
    refuse_unused(args, MODEL_FILE_ONLY, "is for converting a model file; a reference model (--model) is "
                                         "converted without verification (see `rosetta verify --model`)")
    if args.model not in api.list_models():
        raise RosettaError(f"unknown model {args.model!r}; choose from: {', '.join(api.list_models())}")
    api.check_writable(args.json)
    done = api.convert(args.model, args.to, via=args.via, output_dir=args.output, seed=args.seed, force=args.force,
                       **export_options(args))
    manifest = done.manifest
    print(f"{args.model} -> {' -> '.join(manifest['chain'][1:])}: {args.output / manifest['artifact']} "
          f"(sha256 {manifest['sha256'][:12]})")
    if args.json:
        api.write_json(args.json, manifest)
    return EXIT_PASS


def _convert_file(args) -> int:
    """`rosetta convert MODEL --to ...`: each target converted, verified against MODEL, written to -o."""
    done = api.convert(args.path, args.to, via=args.via, output_dir=args.output, force=args.force,
                       inputs=args.input, trust_code=args.trust_code, batch=args.batch, seed=args.seed,
                       threads=args.threads, tolerance=args.tolerance_multiple, atol=dict(args.atol) or None,
                       rtol=dict(args.rtol) or None, max_memory=args.max_memory, verify=not args.no_verify,
                       progress=progress(args), results_file=args.json, locate=args.locate,
                       **export_options(args), **executor_options(args))
    done = said_with_flags(done)
    print_report(done.report, args.verbose)
    if done.artifacts:
        print(f"written: {', '.join(str(path) for path in done.artifacts.values())}")
    if args.json:
        done.report.write_json(args.json)
    write_locate(args, done.report)
    return exit_for(done.report, args)
