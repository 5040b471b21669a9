"""`rosetta verify`: model files compared with the first, or the reference models converted to targets and
verified against PyTorch; both through rosetta.api.verify."""

from __future__ import annotations

import argparse
from pathlib import Path

from rosetta import api
from rosetta.cli.flags import said_with_flags
from rosetta.api import MODEL_FORMATS as FORMATS_HELP
from rosetta.cli.options import (EPILOG_EXIT, add_executor_options, add_export_options, add_locate_options,
                                 add_threads_option, add_tolerance_options, add_user_model_options,
                                 check_input_options, check_locate_options, executor_options, exit_for,
                                 export_options, input_spec, positive_int, print_report, progress, refuse_unused, seed_list,
                                 target_names, write_locate)
from rosetta.errors import RosettaError


def add_parser(commands, common: argparse.ArgumentParser) -> None:
    verify = commands.add_parser(
        "verify", parents=[common], help="compare model files, or verify converted reference models",
        description="With MODEL files: run them all on the same inputs and compare each with the first (the "
                    "reference), or with outputs saved earlier (--load-outputs). MODEL is " + FORMATS_HELP + ". "
                    "Without: convert the reference models (--model) to --targets and verify each against "
                    "PyTorch. The reference runs in float32 and, where rosetta can (PyTorch, Keras, MXNet, ONNX), "
                    "float64: a model PASSes when its error stays within a multiple of the reference's own float32 "
                    "noise floor (or within --atol/--rtol); without float64 (a SavedModel), within 40 float32 "
                    "ulps at the output's scale (docs/calibration.md).",
        epilog="examples:\n  rosetta verify model.onnx out/torch out/keras\n"
               "  rosetta verify model.onnx --save-inputs in.npz --save-outputs ref.npz   (on one machine)\n"
               "  rosetta verify model.keras --inputs in.npz --load-outputs ref.npz      (on another)\n"
               "  rosetta verify net.py:build model.onnx --input x:Nx16:float32 --trust-code --atol out:1e-5\n"
               "  rosetta verify --model cnn,gru,resnet50 --targets onnxruntime --json results.json\n"
               "  rosetta verify --model gru --targets all\n"
               "  rosetta verify --model cnn --targets keras,tensorflow --locate   (where does a FAIL diverge?)\n"
               "  rosetta verify model.onnx optimised.onnx --locate                (first node that differs)\n"
               "  rosetta verify --model resnet50 --via onnx,mmdnn --targets torch,tensorflow,keras,mxnet,onnxruntime\n"
               "  rosetta verify --model cnn,gru --targets torch,keras,mxnet --train-steps 5 --precision float64\n"
               "  rosetta verify setup.py:fn port.keras --trust-code --input x:Nx16:float32 --labels labels:N:int64:0:4 "
               "--train-steps 8\n"
               "  rosetta verify setup.py:fn gluon_setup.py:fn --trust-code --input x:Nx6:float32 "
               "--labels labels:N:int64:0:4 --train-steps 8\n"
               "  rosetta verify --model cnn,gru,resnet50 --targets torch,keras --device cuda   (GPU vs CPU reference)\n"
               + EPILOG_EXIT,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    verify.add_argument("paths", nargs="*", metavar="MODEL", help="model files to compare, the first as reference")
    verify.add_argument("--model", help="reference models, comma-separated, or all (default without MODEL: all)")
    verify.add_argument("--targets", help=f"with --model: targets, comma-separated, or all (default: onnxruntime); "
                                          f"onnx route: {', '.join(target_names())}")
    verify.add_argument("--via", help="with --model: route(s) the targets are reached by, comma-separated: onnx "
                                      "(default), mmdnn (MMdnn's IR), or onnx,mmdnn for both side by side")
    verify.add_argument("--seed", type=seed_list, help="seed(s) for weights and inputs, e.g. 0 or 0,1,2 (default: 0; "
                                                       "with model files: one seed, for the generated inputs)")
    add_tolerance_options(verify)
    verify.add_argument("--train-steps", type=positive_int, metavar="K",
                        help="also check training: with --model, K optimiser steps (DLF optimiser) from the same "
                             "weights on the same batches in each trainable target (torch, keras, mxnet), comparing "
                             "losses and weights; with two MODEL files, a PyTorch factory returning (module, "
                             "optimizer, loss_fn) (--trust-code) and its port, a compiled .keras file or a Gluon factory "
                             "returning (block, trainer, loss) (a file importing mxnet), either first: each "
                             "trained K steps by its own optimiser and loss on the same batches, the loss and every "
                             "paired parameter compared after each step, the first diverging step and the "
                             "training bug named (needs --input and --labels; docs/port-training.md)")
    verify.add_argument("--labels", type=input_spec, metavar="NAME:SHAPE:DTYPE[:LOW:HIGH]",
                        help="with --train-steps between two model files: the labels' spec, in --input's syntax, "
                             "e.g. labels:N:int64:0:4 (class indices 0..3)")
    verify.add_argument("--precision", choices=("float32", "float64"),
                        help="training check precision: float32 (calibrated tolerance) or float64 (must agree to "
                             "~1e-10: separates conversion bugs from float32 noise); default float32")
    verify.add_argument("--train-batch", type=positive_int, help="training check batch size (default: 4)")
    add_threads_option(verify)
    verify.add_argument("--work-dir", type=Path, help="with --model: keep converted artifacts here, each checked "
                                                      "against its manifest's sha256 before reuse (default: a "
                                                      "temporary folder)")
    verify.add_argument("--device", choices=("cpu", "cuda"), default=None,
                        help="where the converted models (with --model) or the compared model files run "
                             "(default: cpu); the reference runs on the CPU, so cuda checks a GPU run (TF32 off, "
                             "cuDNN's algorithms) against it; a framework that sees no GPU, or reports another "
                             "device, is a CANNOT row, never a CPU run; each row records the device its framework "
                             "reports")
    add_locate_options(verify)
    verify.add_argument("--json", metavar="FILE", type=Path, help="write the results as JSON")
    verify.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_user_model_options(verify)
    verify.add_argument("--pair", action="append", default=[], metavar="REF=OTHER[:PERMUTATION]",
                        help="pair an input or output of the reference with one of the other models' where rosetta "
                             "cannot tell which by name, position and shape up to a layout permutation (it refuses "
                             "then, listing the candidates), e.g. --pair image=input_1:0,2,3,1; repeatable")
    verify.add_argument("--layer-map", metavar="FILE", type=Path,
                        help="with --locate between two independently written models: the layer pairing to use, "
                             "one `REFERENCE_LAYER = PORT_LAYER` per line (or a JSON object), instead of the "
                             "alignment at matched tensors; either side may name a block (a PyTorch module path "
                             "such as blocks.1, a Keras layer or sublayer path such as block_1/attention)")
    verify.add_argument("--inputs", metavar="FILE.npz", type=Path, help="inputs to run (default: generated)")
    verify.add_argument("--save-inputs", metavar="FILE.npz", type=Path, help="write the inputs used")
    verify.add_argument("--save-outputs", metavar="FILE.npz", type=Path, help="write the reference's outputs")
    verify.add_argument("--load-outputs", metavar="FILE.npz", type=Path,
                        help="compare every MODEL with these outputs (from --save-outputs; give the same --inputs)")
    add_export_options(verify)
    add_executor_options(verify)


# options of one form of the command only: given to the other, each is refused rather than ignored
REFERENCE_MODEL_ONLY = {"model": "--model", "targets": "--targets", "via": "--via", "precision": "--precision",
                        "train_batch": "--train-batch", "work_dir": "--work-dir"}
MODEL_FILES_ONLY = {"inputs": "--inputs", "save_inputs": "--save-inputs", "save_outputs": "--save-outputs",
                    "load_outputs": "--load-outputs", "input": "--input", "trust_code": "--trust-code",
                    "pair": "--pair", "layer_map": "--layer-map", "labels": "--labels"}


def run(args) -> int:
    check_locate_options(args)
    check_input_options(args)
    if args.paths:
        refuse_unused(args, REFERENCE_MODEL_ONLY, "is for reference models (--model); with model files, each file "
                                                  "is compared with the first")
        if args.labels is not None and not args.train_steps:
            raise RosettaError("--labels is for --train-steps between two model files (the labels each side's loss "
                               "is trained on); give --train-steps K")
        training = {"train_steps": args.train_steps, "labels": args.labels} if args.train_steps else {}
        if args.seed is not None and len(args.seed) > 1:
            raise RosettaError("--seed: model files take one seed (for the generated inputs); run once per seed")
        report = api.verify(args.paths[0], args.paths[1:], inputs=args.input, inputs_file=args.inputs,
                            load_outputs=args.load_outputs, save_inputs=args.save_inputs,
                            save_outputs=args.save_outputs, trust_code=args.trust_code, batch=args.batch,
                            pair=args.pair, layer_map=args.layer_map, device=args.device or "cpu",
                            seed=(args.seed or [0])[0], threads=args.threads, **training, **_shared(args))
    else:
        refuse_unused(args, MODEL_FILES_ONLY, "needs model files: rosetta verify MODEL [MODEL ...]")
        report = api.verify(args.model or "all", targets=args.targets or "onnxruntime", via=args.via or "onnx",
                            device=args.device or "cpu", work_dir=args.work_dir, seeds=args.seed or [0],
                            batch=args.batch, threads=args.threads, train_steps=args.train_steps or 0,
                            train_batch=args.train_batch or 4, precision=args.precision or "float32",
                            **export_options(args), **_shared(args))
    report = said_with_flags(report)
    if report.rows or not args.paths:
        print_report(report, args.verbose)
    else:
        print(f"{report.info['reference']}: ran on {report.info['inputs']} input(s); outputs: "
              f"{', '.join(report.info['outputs'])}")
    if args.json:
        report.write_json(args.json)
    write_locate(args, report)
    return exit_for(report, args)


def _shared(args) -> dict:
    """The API's arguments both forms of the command take."""
    return {"tolerance": args.tolerance_multiple, "atol": _pairs(args.atol), "rtol": _pairs(args.rtol),
            "locate": args.locate, "max_memory": args.max_memory, "results_file": args.json,
            "progress": progress(args), **executor_options(args)}


def _pairs(given: list[tuple[str, float]]) -> dict | None:
    """--atol/--rtol [OUTPUT:]VALUE pairs as the API takes them: {output or "": value}, the last one winning."""
    return dict(given) if given else None
