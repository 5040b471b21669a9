"""Where two ONNX models diverge, found by `rosetta verify A B --locate` and by Polygraphy (`polygraphy run
--onnx-outputs mark all`, the reference's outputs saved, then compared with the candidate's), side by side in
one run on the same pair: ResNet-50 (rosetta's reference export) and a copy with one convolution's weights
multiplied by 1.05. Prints both wall times, their ratio and the node each names first; writes JSON.

Polygraphy is not one of rosetta's dependencies: install it where you run this (`pip install polygraphy`, or
`PYTHONPATH` to a folder holding it) and give its command with --polygraphy.

    python scripts/locate_vs_polygraphy.py --json locate-vs-polygraphy.json [--polygraphy polygraphy]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from rosetta.atomic import atomic_write_text


def timed(command: list[str], cwd: Path) -> tuple[float, subprocess.CompletedProcess]:
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    return time.perf_counter() - started, done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--polygraphy", default="polygraphy", help="Polygraphy's command (default: polygraphy)")
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--layer", default="layer3/layer3.0/conv2",
                        help="the Conv whose weights are multiplied by 1.05: a part of its node name")
    parser.add_argument("--json", type=Path, default=Path("locate-vs-polygraphy.json"))
    args = parser.parse_args()
    if shutil.which(args.polygraphy) is None:
        parser.error(f"{args.polygraphy}: no such command; pip install polygraphy, or give its path with --polygraphy")
    import onnx

    from rosetta.frameworks.onnx_graph import edit_initializers

    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        subprocess.run([sys.executable, "-m", "rosetta.cli", "convert", "resnet50", "--to", "onnx",
                        "-o", str(work / "converted"), "--no-progress"], check=True, capture_output=True)
        reference = next((work / "converted").rglob("*.onnx"))
        model = onnx.load(str(reference))
        weights = [node.input[1] for node in model.graph.node if node.op_type == "Conv" and args.layer in node.name]
        if not weights:
            parser.error(f"no Conv node of ResNet-50's export has {args.layer!r} in its name")
        edit_initializers(model, weights[:1], lambda _, array: array * 1.05)
        candidate = work / "modified.onnx"
        onnx.save(model, str(candidate))
        name = model.graph.input[0].name
        shape = [args.batch] + [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim[1:]]

        rosetta_s, done = timed([sys.executable, "-m", "rosetta.cli", "verify", str(reference), str(candidate),
                                 "--locate", "--batch", str(args.batch), "--no-progress", "--json",
                                 str(work / "r.json")], work)
        located = json.loads((work / "r.json").read_text())["results"][0].get("locate") or {}
        rosetta_node = (located.get("first") or {}).get("node", f"(none: exit {done.returncode})")

        shapes = ["--input-shapes", f"{name}:{shape}"]
        save_s, saved = timed([args.polygraphy, "run", str(reference), "--onnxrt", "--onnx-outputs", "mark", "all",
                               *shapes, "--save-inputs", "inputs.json", "--save-outputs", "outputs.json"], work)
        compare_s, compared = timed([args.polygraphy, "run", str(candidate), "--onnxrt", "--onnx-outputs", "mark",
                                     "all", "--load-inputs", "inputs.json", "--load-outputs", "outputs.json"], work)
        text = compared.stdout + compared.stderr
        failed = re.findall(r"FAILED \| Output: '([^']+)'", text)
        polygraphy_first = failed[0] if failed else f"(none: exit {compared.returncode}, save exit {saved.returncode})"

    polygraphy_s = save_s + compare_s
    table = Table(title=f"where ResNet-50 with {args.layer} x 1.05 diverges, batch {args.batch}")
    for column in ("tool", "wall s", "first named", "how"):
        table.add_column(column)
    table.add_row("rosetta verify --locate", f"{rosetta_s:.1f}", rosetta_node, located.get("mechanism", ""))
    table.add_row("polygraphy run --onnx-outputs mark all", f"{polygraphy_s:.1f}", polygraphy_first,
                  f"every tensor an output, two runs ({save_s:.1f} s + {compare_s:.1f} s); {len(failed)} outputs fail")
    Console(width=200).print(table)
    print(f"rosetta / polygraphy: {rosetta_s / polygraphy_s:.2f}x")
    atomic_write_text(args.json, json.dumps({
        "batch": args.batch, "edited": args.layer, "rosetta_seconds": round(rosetta_s, 1),
        "rosetta_first": rosetta_node, "rosetta_mechanism": located.get("mechanism", ""),
        "polygraphy_seconds": round(polygraphy_s, 1), "polygraphy_first": polygraphy_first,
        "polygraphy_failed_outputs": len(failed), "ratio": round(rosetta_s / polygraphy_s, 3)}, indent=2) + "\n")
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
