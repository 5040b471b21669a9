"""Conversion cost per path and CPU inference time per target, for every reference model.

Converts each (model, target) through the artifact store (so shared chain prefixes are converted once),
reads each step's wall time and peak memory from the manifests (steps run in a worker record their own peak
RSS; in-process steps record time only), and times inference of every artifact in its own framework: same
seeded batch, same thread count, warm-up excluded, median of repeats. Prints tables and writes JSON.

    python scripts/bench_targets.py --batch 8 --threads 2 --repeats 10 --json bench-targets.json
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

from rosetta.bench.inference import time_predict
from rosetta.convert.targets import get_target, list_targets
from rosetta.frameworks.torch import TorchModuleRunner
from rosetta.manifest import Manifest
from rosetta.models import get_model, list_models
from rosetta.models.inputs import generate_inputs
from rosetta.progress import progress_bar
from rosetta.report.plots import inference_chart
from rosetta.timing import time_call


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=",".join(list_models()))
    parser.add_argument("--targets", default=",".join(list_targets("onnx")))
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--work-dir", type=Path)
    parser.add_argument("--json", type=Path, default=Path("bench-targets.json"))
    args = parser.parse_args()

    from rosetta.convert.store import ArtifactStore

    models, targets = args.models.split(","), args.targets.split(",")
    rows = []
    with tempfile.TemporaryDirectory() as scratch, progress_bar(len(models) * len(targets), "benchmarking") as advance:
        store = ArtifactStore(args.work_dir or Path(scratch))
        for model in models:
            spec = get_model(model)
            feeds = generate_inputs(spec.inputs, args.batch, 0)
            # the baseline: the PyTorch reference itself, eager, same batch and threads
            reference = TorchModuleRunner(spec.build(0), [o.name for o in spec.outputs], threads=args.threads)
            timing = time_call(lambda: reference.predict(feeds), repeats=args.repeats, warmup=args.warmup)
            rows.append({"model": model, "target": "reference (torch eager)", "steps": [],
                         "inference": {"framework": "torch", "threads": args.threads, **timing.to_json()}})
            for name in targets:
                advance(f"{model} -> {name}")
                target = get_target(name)
                options = target.export_options()
                row = {"model": model, "target": name, "steps": []}
                try:
                    for end in range(2, len(target.chain) + 1):
                        manifest = Manifest.read(store.get(spec, 0, target.chain[:end], options))
                        row["steps"].append({"step": f"{target.chain[end - 2]}->{target.chain[end - 1]}",
                                             "converter": manifest.converter["name"], **manifest.stats})
                    folder = store.get(spec, 0, target.chain, options)
                    # each runner at its defaults (ONNX Runtime with its graph optimiser on), as users run it
                    row["inference"] = time_predict(target.runner, folder, feeds, repeats=args.repeats,
                                                    warmup=args.warmup, threads=args.threads)
                except Exception as error:  # noqa: BLE001 - a failing path is a row with its reason
                    row["error"] = f"{type(error).__name__}: {error}"
                rows.append(row)
        advance(None)

    console = Console(width=200)
    conversions = Table(title="conversion steps (seed 0)")
    for column in ("model", "step", "converter", "seconds", "peak RSS MB", "process"):
        conversions.add_column(column)
    seen = set()
    for row in rows:
        for step in row["steps"]:
            key = (row["model"], step["step"], step["converter"])
            if key not in seen:
                seen.add(key)
                conversions.add_row(row["model"], step["step"], step["converter"], f"{step.get('seconds', 0):.1f}",
                                    f"{step['peak_rss_mb']:.0f}" if "peak_rss_mb" in step else "-", step.get("process", ""))
    console.print(conversions)
    inference = Table(title=f"CPU inference, batch {args.batch}, {args.threads} threads, median of {args.repeats}")
    for column in ("model", "target", "median ms", "p10 ms", "p90 ms", "items/s"):
        inference.add_column(column)
    for row in rows:
        timing = row.get("inference")
        if timing is None:
            inference.add_row(row["model"], row["target"], "FAIL", "", "", row.get("error", "")[:80])
            continue
        inference.add_row(row["model"], row["target"], f"{1e3 * timing['median_s']:.1f}", f"{1e3 * timing['p10_s']:.1f}",
                          f"{1e3 * timing['p90_s']:.1f}", f"{args.batch / timing['median_s']:.0f}")
    console.print(inference)
    args.json.write_text(json.dumps({"batch": args.batch, "threads": args.threads, "repeats": args.repeats,
                                     "rows": rows}, indent=2) + "\n")
    chart = inference_chart(rows, args.json.with_suffix(".png"),
                            f"CPU inference, batch {args.batch}, {args.threads} threads (rosetta)")
    print(f"wrote {args.json} and {chart}")


if __name__ == "__main__":
    main()
