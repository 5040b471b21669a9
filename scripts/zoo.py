"""The real-model zoo benchmark: every model of tests/zoo/models.py (torchvision, timm, Hugging Face
transformers, Keras applications, the Gluon model zoo, plain torch.nn) converted with
`rosetta convert MODEL --to all`, one model at a time.

Prints the verdict of every (model, target), each model's conversion time (its targets' conversion steps, from
their manifests), verification time (loading and running each artifact) and wall time of the whole
`--to all`, the share of PASS cells in all, per target and per source library, and the reason of every cell
that is not PASS; writes it all as JSON. Exits 0 whatever the
verdicts: it measures; tests/zoo/test_zoo.py holds the expected table.

    python scripts/zoo.py --json zoo.json [--models keras-mobilenetv2,torch-bilstm] [--work-dir zoo-work] [--resume]

The JSON is rewritten after every model, so a run that is stopped keeps what it measured; --resume keeps the
models already in it and runs the rest.
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


def library_of(model: str) -> str:
    """The source library a zoo model comes from, by its name's prefix (tv-, timm-, hf-, keras-, gluon-, torch-)."""
    return {"tv": "torchvision", "timm": "timm", "hf": "transformers", "keras": "Keras", "gluon": "Gluon",
            "torch": "plain torch.nn"}.get(model.split("-", 1)[0], "other")


def pass_shares(runs: list[ZooRun]) -> dict[str, str]:
    """PASS cells of all, per target and per source library: 'passed of cells (percent)'."""
    groups: dict[str, list[str]] = {}
    for run in runs:
        for target, verdict in run.verdicts.items():
            groups.setdefault(f"target {target}", []).append(verdict)
            groups.setdefault(f"library {library_of(run.model)}", []).append(verdict)
    return {label: f"{cells.count('PASS')} of {len(cells)} ({100.0 * cells.count('PASS') / len(cells):.0f} %)"
            for label, cells in sorted(groups.items())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="all", help=f"comma-separated, or all: {', '.join(ZOO)}")
    parser.add_argument("--work-dir", type=Path, help="keep the model files and converted artifacts here")
    parser.add_argument("--json", type=Path, default=Path("zoo.json"))
    parser.add_argument("--resume", action="store_true", help="keep the models already in --json, run the rest")
    args = parser.parse_args()
    models = list(ZOO) if args.models == "all" else args.models.split(",")
    unknown = [m for m in models if m not in ZOO]
    if unknown:
        parser.error(f"unknown zoo model(s) {', '.join(unknown)}; choose from: {', '.join(ZOO)}")

    kept = {}
    if args.resume and args.json.is_file():
        kept = {entry["model"]: entry for entry in json.loads(args.json.read_text())["models"] if entry["model"] in models}
    runs = []
    with tempfile.TemporaryDirectory() as scratch, progress_bar(len(models), "zoo") as advance:
        root = args.work_dir or Path(scratch)
        for model in models:
            advance(model)
            runs.append(KeptRun(kept[model], root) if model in kept else convert_to_all(model, root / model))
            write_json(args.json, runs)
        advance(None)

    targets = list(dict.fromkeys(target for run in runs for target in run.verdicts))
    console = Console(width=200)
    table = Table(title=f"rosetta convert MODEL --to all: {len(runs)} zoo models")
    for column in ("model", *targets, "convert s", "verify s", "--to all s", "exit"):
        table.add_column(column)
    for run in runs:
        cells = [run.verdicts.get(t, "-") for t in targets]
        table.add_row(run.model, *(f"[{STYLES.get(c, '')}]{c}" for c in cells),
                      f"{sum(run.conversion_seconds.values()):.0f}", f"{sum(run.verification_seconds.values()):.0f}",
                      f"{run.seconds:.0f}", str(run.exit_status))
    console.print(table)
    console.print(f"PASS: {pass_percent(runs):.1f} % of {sum(len(r.verdicts) for r in runs)} cells; "
                  f"total --to all time {sum(r.seconds for r in runs):.0f} s")
    for label, share in pass_shares(runs).items():
        console.print(f"  {label}: {share}", highlight=False)
    for run in runs:
        if not run.results:  # rosetta stopped before any row: its own message says why
            console.print(f"[bold red]{run.model}[/]: no results (exit {run.exit_status}): {run.log.strip()[-500:]}")
        for row in run.results:
            if row["verdict"] != "PASS":
                console.print(f"[{STYLES.get(row['verdict'], '')}]{row['verdict']}[/] {run.model} -> {row['target']}: "
                              f"{row['reason']}", highlight=False)

    write_json(args.json, runs)
    print(f"wrote {args.json}")


def write_json(path: Path, runs: list[ZooRun]) -> None:
    from rosetta.atomic import atomic_write_text

    atomic_write_text(path, json.dumps({
        "pass_percent": pass_percent(runs),
        "verdicts": {run.model: run.verdicts for run in runs},
        "pass_shares": pass_shares(runs),
        "seconds": round(sum(run.seconds for run in runs), 1),
        "models": [{"model": run.model, "arguments": run.arguments, "seconds": round(run.seconds, 1),
                    "conversion_seconds": run.conversion_seconds, "verification_seconds": run.verification_seconds,
                    "exit_status": run.exit_status, "results": run.results} for run in runs],
    }, indent=2) + "\n")


class KeptRun(ZooRun):
    """A model measured by an earlier run (--resume): its figures as that run wrote them."""

    def __init__(self, entry: dict, root: Path) -> None:
        super().__init__(entry["model"], entry["arguments"], entry["results"], entry["exit_status"],
                         entry["seconds"], root / entry["model"] / "out", "")
        self.kept_conversion, self.kept_verification = entry["conversion_seconds"], entry["verification_seconds"]

    @property
    def conversion_seconds(self) -> dict[str, float]:
        return self.kept_conversion

    @property
    def verification_seconds(self) -> dict[str, float]:
        return self.kept_verification


if __name__ == "__main__":
    main()
