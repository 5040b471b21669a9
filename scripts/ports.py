"""The hand-port benchmark: the ports of tests/verify/ports verified with `rosetta verify REFERENCE PORTS...
--locate`, one direction per process, as a user runs it. Three tables: ports whose layers line up one to one
(tests/verify/test_ports.py: PyTorch -> Keras, PyTorch -> Gluon, Keras -> PyTorch; each correct, and with one
classic porting bug) and ports whose layers do not (tests/verify/test_unaligned_ports.py: split padding, fused
activations, folded BatchNorm, a transformer block as one Keras layer, ResNet v1 against v1.5); and ports written
by model libraries (tests/verify/test_library_ports.py: keras.applications' ResNet50 with rosetta's ResNet-50
weights copied in, against the v1 network and against rosetta's v1.5 model; tests/verify/test_hub_ports.py:
keras-hub's BERT, GPT-2, Llama and ViT converted from tiny seeded Hugging Face checkpoints, each correct and with
bugs seeded inside blocks); and more hand ports of architectures the others lack (tests/verify/ports/
more_table.py: depthwise-separable conv with ReLU6, squeeze-and-excitation, a bidirectional LSTM, a projection
shortcut, a dilated causal Conv1d, GroupNorm with SiLU, embedding + mean-pool + tanh-GELU, a U-Net upsample +
concat, PReLU, average pooling that counts its padding, a transposed conv; `--tables more`).

Prints, per port: the verdict, the located segment on each side (the reference modules and the port layers
between two matched tensors; where locate gives no segment, the one pair of layers it names), whether the bug was
introduced there, the cause named, and the direction's wall time; writes it all as JSON. Exits 0 whatever the
verdicts: it measures; the two test modules hold the expected ones.

    python scripts/ports.py --json ports.json [--work-dir ports-work] [--tables hub library ...]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.verify.ports, from a checkout

from rosetta.atomic import atomic_write_text  # noqa: E402
from tests.verify.test_hub_ports import HUB  # noqa: E402
from tests.verify.test_hub_ports import _build as _build_hub  # noqa: E402
from tests.verify.test_library_ports import LIBRARY  # noqa: E402
from tests.verify.test_library_ports import _build as _build_library  # noqa: E402
from tests.verify.test_ports import DIRECTIONS, _build  # noqa: E402
from tests.verify.ports.more_table import MORE  # noqa: E402
from tests.verify.ports.more_table import build as _build_more  # noqa: E402
from tests.verify.test_unaligned_ports import UNALIGNED  # noqa: E402
from tests.verify.test_unaligned_ports import _build as _build_unaligned  # noqa: E402

TABLES = {"hand": (DIRECTIONS, _build), "unaligned": (UNALIGNED, _build_unaligned),
          "library": (LIBRARY, _build_library), "hub": (HUB, _build_hub), "more": (MORE, _build_more)}


def segment_of(located: dict) -> tuple[list[str], list[str]]:
    """(reference side, port side) of the located segment; without one, the single pair `first` names."""
    segment, first = located.get("segment") or {}, located.get("first") or {}
    if segment:
        return list(segment.get("reference") or []), list(segment.get("port") or [])
    return [first["node"]] if first.get("node") else [], [first["source_layer"]] if first.get("source_layer") else []


def run_direction(folder: Path, table: str, direction: str, reference: str, inputs: list, expected: dict) -> list:
    """One `rosetta verify REFERENCE PORTS... --locate` in a process of its own: a row per port."""
    report = folder / f"{direction}.json"
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "rosetta.cli", "verify", reference, "--trust-code", *inputs,
                           *expected, "--locate", "--no-progress", "--json", str(report)],
                          cwd=folder, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    results = json.loads(report.read_text())["results"] if report.is_file() else []
    if not results:
        print(f"{direction}: no results (exit {done.returncode}): {(done.stdout + done.stderr)[-500:]}")
    rows = []
    for row in results:
        located = row.get("locate") or {}
        reference_side, port_side = segment_of(located)
        rows.append({"table": table, "direction": direction, "port": row["target"], "verdict": row["verdict"],
                     "expected": expected[row["target"]][0], "segment_reference": reference_side,
                     "segment_port": port_side, "origin": located.get("origin", ""),
                     "diagnosis": located.get("diagnosis", "") or (row.get("reason", "") if row["verdict"] == "ERROR"
                                                                   else f"{located['verdict']}: {located.get('reason', '')}"
                                                                   if located.get("verdict") not in (None, "located")
                                                                   else ""),
                     "direction_seconds": round(seconds, 1)})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work-dir", type=Path, help="keep the ports here")
    parser.add_argument("--json", type=Path, default=Path("ports.json"))
    parser.add_argument("--tables", nargs="+", choices=list(TABLES), default=list(TABLES),
                        help="which tables to run (default: all)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.work_dir or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        rows, build_seconds = [], {}
        for table in args.tables:
            directions, build = TABLES[table]
            built = folder / table
            built.mkdir(exist_ok=True)
            started = time.perf_counter()
            build(built)
            build_seconds[table] = round(time.perf_counter() - started, 1)
            for direction, (reference, inputs, expected) in directions.items():
                rows += run_direction(built, table, direction, reference, inputs, expected)
    grid = Table(title=f"rosetta verify REFERENCE PORTS --locate: {len(rows)} hand ports")
    for column in ("direction", "port", "verdict", "located segment (reference side)",
                   "located segment (port side)", "origin", "named cause", "seconds"):
        grid.add_column(column)
    for row in rows:
        grid.add_row(row["direction"], row["port"], row["verdict"], ", ".join(row["segment_reference"]),
                      ", ".join(row["segment_port"]), row["origin"], row["diagnosis"][:160],
                      f"{row['direction_seconds']:.0f}")
    Console(width=240).print(grid)
    right = sum(row["verdict"] == row["expected"] for row in rows)
    times = ", ".join(f"{name} in {seconds:.0f} s" for name, seconds in build_seconds.items())
    print(f"{right} of {len(rows)} verdicts as expected; ports built: {times}")
    atomic_write_text(args.json, json.dumps({"build_seconds": build_seconds, "rows": rows}, indent=2) + "\n")
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
