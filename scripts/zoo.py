"""The real-model zoo benchmark: every model of tests/zoo/models.py (Keras applications, Gluon model zoo,
plain torch.nn) converted with `rosetta convert MODEL --to all`, one model at a time.

Prints the verdict of every (model, target), the share of PASS cells, the wall time of each model's
`--to all`, and the reason of every cell that is not PASS; writes it all as JSON. Exits 0 whatever the
verdicts: it measures; tests/zoo/test_zoo.py holds the expected table.

    python scripts/zoo.py --json zoo.json [--models keras-mobilenetv2,torch-bilstm] [--work-dir zoo-work]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.zoo, from a checkout

from rosetta.progress import progress_bar  # noqa: E402
from tests.zoo.models import ZOO, ZooRun, convert_to_all  # noqa: E402

STYLES = {"PASS": "green", "FAIL": "bold red", "ERROR": "bold red", "CANNOT": "yellow", "INCONCLUSIVE": "magenta"}


def pass_percent(runs: list[ZooRun]) -> float:
    cells = [verdict for run in runs for verdict in run.verdicts.values()]
    return 100.0 * cells.count("PASS") / len(cells) if cells else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="all", help=f"comma-separated, or all: {', '.join(ZOO)}")
    parser.add_argument("--work-dir", type=Path, help="keep the model files and converted artifacts here")
    parser.add_argument("--json", type=Path, default=Path("zoo.json"))
    args = parser.parse_args()
    models = list(ZOO) if args.models == "all" else args.models.split(",")
    unknown = [m for m in models if m not in ZOO]
    if unknown:
        parser.error(f"unknown zoo model(s) {', '.join(unknown)}; choose from: {', '.join(ZOO)}")

    runs = []
    with tempfile.TemporaryDirectory() as scratch, progress_bar(len(models), "zoo") as advance:
        root = args.work_dir or Path(scratch)
        for model in models:
            advance(model)
            runs.append(convert_to_all(model, root / model))
        advance(None)

    targets = list(dict.fromkeys(target for run in runs for target in run.verdicts))
    console = Console(width=200)
    table = Table(title=f"rosetta convert MODEL --to all: {len(runs)} zoo models")
    for column in ("model", *targets, "--to all s", "exit"):
        table.add_column(column)
    for run in runs:
        cells = [run.verdicts.get(t, "-") for t in targets]
        table.add_row(run.model, *(f"[{STYLES.get(c, '')}]{c}" for c in cells), f"{run.seconds:.0f}",
                      str(run.exit_status))
    console.print(table)
    console.print(f"PASS: {pass_percent(runs):.1f} % of {sum(len(r.verdicts) for r in runs)} cells; "
                  f"total --to all time {sum(r.seconds for r in runs):.0f} s")
    for run in runs:
        if not run.results:  # rosetta stopped before any row: its own message says why
            console.print(f"[bold red]{run.model}[/]: no results (exit {run.exit_status}): {run.log.strip()[-500:]}")
        for row in run.results:
            if row["verdict"] != "PASS":
                console.print(f"[{STYLES.get(row['verdict'], '')}]{row['verdict']}[/] {run.model} -> {row['target']}: "
                              f"{row['reason']}", highlight=False)

    args.json.write_text(json.dumps({
        "pass_percent": pass_percent(runs),
        "verdicts": {run.model: run.verdicts for run in runs},
        "models": [{"model": run.model, "arguments": run.arguments, "seconds": round(run.seconds, 1),
                    "exit_status": run.exit_status, "results": run.results} for run in runs],
    }, indent=2) + "\n")
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
