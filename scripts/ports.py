"""The hand-port benchmark: the ports of tests/verify/ports (PyTorch -> Keras, PyTorch -> Gluon, Keras ->
PyTorch; each correct, and with one classic porting bug) verified with `rosetta verify REFERENCE PORTS...
--locate`, one direction per process, as a user runs it.

Prints, per port: the verdict, the reference layer it first diverges at, whether it was introduced there, the
porting bug named, and the direction's wall time; writes it all as JSON. Exits 0 whatever the verdicts: it
measures; tests/verify/test_ports.py holds the expected ones.

    python scripts/ports.py --json ports.json [--work-dir ports-work]
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
from tests.verify.test_ports import DIRECTIONS, _build  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work-dir", type=Path, help="keep the ports here")
    parser.add_argument("--json", type=Path, default=Path("ports.json"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.work_dir or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        _build(folder)
        build_seconds = time.perf_counter() - started
        rows = []
        for direction, (reference, inputs, expected) in DIRECTIONS.items():
            report = folder / f"{direction}.json"
            started = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "rosetta.cli", "verify", reference, "--trust-code", *inputs,
                                   *expected, "--locate", "--no-progress", "--json", str(report)],
                                  cwd=folder, capture_output=True, text=True)
            seconds = time.perf_counter() - started
            results = json.loads(report.read_text())["results"] if report.is_file() else []
            if not results:
                print(f"{direction}: no results (exit {done.returncode}): {(done.stdout + done.stderr)[-500:]}")
            for row in results:
                located = row.get("locate") or {}
                rows.append({"direction": direction, "port": row["target"], "verdict": row["verdict"],
                             "expected": expected[row["target"]][0], "layer": (located.get("first") or {}).get("node", ""),
                             "origin": located.get("origin", ""), "diagnosis": located.get("diagnosis", ""),
                             "direction_seconds": round(seconds, 1)})
    table = Table(title=f"rosetta verify REFERENCE PORTS --locate: {len(rows)} hand ports")
    for column in ("direction", "port", "verdict", "layer", "origin", "porting bug named", "s (direction)"):
        table.add_column(column)
    for row in rows:
        table.add_row(row["direction"], row["port"], row["verdict"], row["layer"], row["origin"], row["diagnosis"],
                      f"{row['direction_seconds']:.0f}")
    Console(width=220).print(table)
    right = sum(row["verdict"] == row["expected"] for row in rows)
    print(f"{right} of {len(rows)} verdicts as expected; ports built in {build_seconds:.0f} s")
    atomic_write_text(args.json, json.dumps({"build_seconds": round(build_seconds, 1), "rows": rows}, indent=2) + "\n")
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
