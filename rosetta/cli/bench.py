"""`rosetta bench`: DLF's workloads timed in each framework (rosetta.api.bench); a table, JSON, charts."""

from __future__ import annotations

import argparse
from pathlib import Path

from rosetta import api
from rosetta.cli.flags import said_with_flags
from rosetta.cli.options import (EXIT_FAIL, EXIT_PASS, add_executor_options, add_threads_option, console,
                                 executor_options, positive_int, progress, workload_names)


def add_parser(commands, common: argparse.ArgumentParser) -> None:
    bench = commands.add_parser(
        "bench", parents=[common], help="time the DLF workloads in every framework, from converted models",
        description="Time DLF's workloads (CNN training on CIFAR-10, GRU training on IMDB, ResNet-50 feature "
                    "extraction) in each target framework, each cell in its own process: warm-up excluded, device "
                    "synchronised before every clock read, median and p10-p90 of the timed steps, peak memory "
                    "(and device memory on a GPU). Each row records the device, the precision in force and the "
                    "compiled step as the framework reports them, the workload's FLOPs per sample and, on a GPU, "
                    "its fraction of the device's matmul peak, measured once per run. "
                    "The PyTorch reference is always timed as the baseline, and training workloads also time a "
                    "hand-written PyTorch loop to measure the harness's overhead. --baseline native times each "
                    "converted model against the same model written natively in its framework. Prints a table; writes JSON "
                    "and one PNG chart per workload.",
        epilog="examples:\n  rosetta bench --workload cnn-train --targets torch,keras,mxnet --steps 20\n"
               "  rosetta bench --workload resnet50-features --targets all --json bench.json --plot-dir charts\n"
               "  rosetta bench --workload all --targets all --baseline native   (converted / native per framework)\n"
               "  rosetta bench --workload cnn-train --targets torch,keras --workers 2   (data-parallel scaling)\n"
               "  rosetta bench --workload cnn-train --precision amp-bf16 --compile\n"
               "  rosetta bench --workload all --targets torch --device cuda --precision amp-bf16 --channels-last "
               "--cuda-graphs --resident-data --batch 256\n"
               "  rosetta bench --workload all --device cuda --data ~/datasets   (cifar-10-batches-py/, imdb.npz)\n"
               "exit status: 0 all cells ran (or are n/a: a speed setting a framework lacks), 1 some FAIL, "
               "2 usage or input error",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    bench.add_argument("--workload", default="all", help=f"workloads, comma-separated, or all: {', '.join(workload_names())}")
    bench.add_argument("--targets", default="all",
                       help="targets as for verify (default: all); training workloads time the trainable ones "
                            "(torch, keras, mxnet), resnet50-features all of them")
    bench.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="cpu (default) or cuda")
    length = bench.add_mutually_exclusive_group()
    length.add_argument("--steps", type=positive_int, help="timed steps (batches) per cell (default: a short slice on "
                                                           "CPU, see README)")
    length.add_argument("--epochs", type=positive_int, help="full DLF epochs instead of --steps (training workloads)")
    bench.add_argument("--data", type=Path, help="folder with CIFAR-10 (cifar-10-batches-py/) and IMDB (imdb.npz); "
                                                "default: synthetic data of the same shapes and dtypes")
    add_threads_option(bench)
    bench.add_argument("--no-overhead", action="store_true", help="skip the bare-loop overhead measurement")
    bench.add_argument("--baseline", choices=("reference", "native"), default="reference",
                       help="native: also time each converted model against the model written by hand in its "
                            "framework (Keras, Gluon, a TensorFlow SavedModel; for torch the reference), the two "
                            "alternating in one process: a converted/native column")
    speed = bench.add_argument_group("speed variants (recorded in every row's settings; a framework that lacks "
                                     "one gives an n/a row that says so)")
    speed.add_argument("--precision", choices=("fp32", "tf32", "amp-fp16", "amp-bf16"), default="fp32",
                       help="fp32 (default: strict float32 in every framework: TF32 off in PyTorch and "
                            "TensorFlow, JAX's matmul precision highest), tf32 and amp-fp16 (CUDA only), amp-bf16 "
                            "(autocast / Keras mixed_bfloat16; CPU and GPU)")
    speed.add_argument("--channels-last", action="store_true",
                       help="NHWC memory for 4-D tensors where the framework lets a run choose (PyTorch)")
    speed.add_argument("--compile", action="store_true",
                       help="the framework's graph compiler: torch.compile, Keras jit_compile=True (XLA on "
                            "TensorFlow, jax.jit, torch.compile), MXNet hybridize(static_alloc), ONNX Runtime's full "
                            "graph optimisation, XLA on a SavedModel")
    speed.add_argument("--eager", action="store_true",
                       help="no graph: Keras run_eagerly, MXNet without hybridize (PyTorch is eager already); "
                            "without it Keras runs as it compiles by default (jax.jit; tf.function, with XLA "
                            "where TensorFlow sees a GPU)")
    speed.add_argument("--cuda-graphs", action="store_true",
                       help="CUDA only: PyTorch's whole training step (forward, loss, backward, optimiser) or "
                            "forward captured once and replayed as one CUDA graph (with --compile: torch.compile's "
                            "reduce-overhead mode)")
    speed.add_argument("--resident-data", action="store_true",
                       help="the batches staged once on the device (or in pinned memory, the next batch's copy "
                            "overlapped), the steps run back to back, timed by the device's clock (CUDA events), "
                            "the loss read back after them (PyTorch)")
    bench.add_argument("--batch", type=positive_int, metavar="N",
                       help="samples per step (per worker) instead of DLF's batch (64, 64, 32): larger batches "
                            "fill a GPU; samples/s, the DLF units and the fraction of peak follow it")
    bench.add_argument("--workers", type=positive_int, default=1, metavar="N",
                       help="time the training workloads data-parallel on N workers beside 1 worker: PyTorch "
                            "through torchrun + DDP (gloo on CPU, NCCL on CUDA), Keras through "
                            "keras.distribution.DataParallel on JAX; throughput per worker and scaling efficiency")
    bench.add_argument("--rounds", type=positive_int, default=3,
                       help="with --baseline native: alternating rounds per pair (default: 3); the ratio is of "
                            "the medians over rounds")
    bench.add_argument("--work-dir", type=Path, help="keep converted artifacts here (default: a temporary folder)")
    bench.add_argument("--json", metavar="FILE", type=Path, help="write the results as JSON")
    bench.add_argument("--plot-dir", type=Path, help="write one PNG chart per workload into this folder")
    bench.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_executor_options(bench)


def run(args) -> int:
    done = api.bench(args.workload, args.targets, device=args.device, steps=args.steps, epochs=args.epochs,
                     data=args.data, threads=args.threads, overhead=not args.no_overhead, work_dir=args.work_dir,
                     progress=progress(args), results_file=args.json, plot_dir=args.plot_dir,
                     baseline=args.baseline, rounds=args.rounds, workers=args.workers, batch=args.batch,
                     precision=args.precision, channels_last=args.channels_last, compile=args.compile,
                     eager=args.eager, cuda_graphs=args.cuda_graphs, resident_data=args.resident_data,
                     **executor_options(args))
    done = said_with_flags(done)
    done.print(console())
    if args.json:
        api.write_json(args.json, done.to_json())
    return EXIT_PASS if done.passed else EXIT_FAIL
