"""The port-training benchmark (issue 44): port pairs of tests/verify/port_training_pairs.py (an MLP and a CNN with
BatchNorm, GRU and LSTM text models, a pre-LN transformer block; PyTorch -> Keras and Keras -> PyTorch; and the MLP
and CNN PyTorch -> Gluon and Gluon -> PyTorch) trained alike or with one seeded training bug, through
rosetta.verify.port_training. Two tables:

- seeded bugs: model x direction x bug -> verdict, first diverging step, the cause named, whether it is the
  expected name (tests/verify/test_port_training_pairs.py's BUGS), the pair's inference verdict, and seconds;
- correct pairs (the calibration of PORT_TRAINING_MULTIPLE): model x direction x optimiser x seed -> verdict and
  the worst figure over all steps as a multiple of the noise floor.

Writes it all as JSON. Exits 0 whatever the verdicts: it measures; the tests hold the expected ones.

    python scripts/port_training.py --json port-training.json [--steps 8] [--correct-steps 20] [--seeds 0,1,2]
        [--models mlp,cnn,gru,lstm,transformer] [--gluon-models mlp,cnn] (an empty list skips that side)

The Gluon rows' optimisers are SGD-momentum, Adam and Adam with wd (MXNet 1.9.1 has no AdamW; Gluon's wd is L2,
PyTorch's Adam(weight_decay=...)); their bugs are tests/verify/port_training_pairs.py's GLUON_BUGS.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.verify, from a checkout

from rosetta.atomic import atomic_write_text  # noqa: E402
from tests.verify.port_training_pairs import GLUON_BUGS, GLUON_OPTIMIZERS  # noqa: E402
from tests.verify.test_port_training_gluon import EXPECTED as BUGS  # noqa: E402: the Keras bugs' and Gluon's own
from tests.verify.test_port_training_pairs import OPTIMIZER  # noqa: E402

PAIRS = ROOT / "tests" / "verify" / "port_training_pairs.py"
DIRECTIONS = ("torch->keras", "keras->torch")
GLUON_DIRECTIONS = ("torch->gluon", "gluon->torch")
NOT_IN = {  # model -> the bugs its pair cannot hold (no Dropout layer, no BatchNorm, no LSTM)
    "mlp": {"lstm-biases"},
    "cnn": {"dropout", "lstm-biases"},
    "gru": {"dropout", "batchnorm-momentum", "bn-inference", "bn-eval", "lstm-biases"},
    "lstm": {"dropout", "batchnorm-momentum", "bn-inference", "bn-eval"},
    "transformer": {"dropout", "batchnorm-momentum", "bn-inference", "bn-eval", "lstm-biases"},
}
KERAS_BUGS = [bug for bug in BUGS if bug != "step-rescale"]  # Gluon's own


def run(cases: list[dict]) -> list[dict]:
    """The cases run in one process of their own (Keras never shares this one), its CASE lines read back."""
    done = subprocess.run([sys.executable, str(PAIRS), json.dumps(cases)], capture_output=True, text=True, cwd=ROOT)
    found = [json.loads(line[5:]) for line in done.stdout.splitlines() if line.startswith("CASE ")]
    if done.returncode != 0 or len(found) != len(cases):
        sys.exit(f"the pairs' process failed ({done.returncode}): {done.stderr[-2000:]}")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", default="port-training.json")
    parser.add_argument("--steps", type=int, default=8, help="steps of a seeded-bug pair")
    parser.add_argument("--correct-steps", type=int, default=20, help="steps of a correct pair")
    parser.add_argument("--seeds", default="0,1,2", help="seeds of the correct pairs")
    parser.add_argument("--models", default="mlp,cnn,gru,lstm,transformer")
    parser.add_argument("--gluon-models", default="mlp,cnn")
    args = parser.parse_args()
    models = [m for m in args.models.split(",") if m]
    gluon = [m for m in args.gluon_models.split(",") if m]
    seeds = [int(s) for s in args.seeds.split(",")]
    start = time.perf_counter()
    bugs = run([{"model": m, "direction": d, "bug": bug, "optimizer": OPTIMIZER.get(bug, "sgd"),
                 "steps": args.steps} for m in models for d in DIRECTIONS for bug in KERAS_BUGS
                if bug not in NOT_IN[m]]
               + [{"model": m, "direction": d, "bug": bug, "optimizer": OPTIMIZER.get(bug, "sgd"), "steps": args.steps}
                  for m in gluon for d in GLUON_DIRECTIONS for bug in GLUON_BUGS if bug not in NOT_IN[m]])
    correct = run([{"model": m, "direction": d, "optimizer": o, "seed": s, "steps": args.correct_steps,
                    "inference": False} for m in models for d in DIRECTIONS for o in ("sgd", "adam", "adamw")
                   for s in seeds]
                  + [{"model": m, "direction": d, "optimizer": o, "seed": s, "steps": args.correct_steps}
                     for m in gluon for d in GLUON_DIRECTIONS for o in GLUON_OPTIMIZERS for s in seeds])
    console = Console(width=200)
    table = Table(title=f"Seeded training bugs ({args.steps} steps, batch 8)")
    for column in ("model", "direction", "bug", "verdict", "first step", "named", "expected", "inference", "s"):
        table.add_column(column)
    for case in bugs:
        (row,) = case["training"]
        expected = BUGS[case["bug"]][0]
        table.add_row(case["model"], case["direction"], case["bug"], row["verdict"], str(row["first_step"]),
                      row["named"] or "-", "yes" if row["named"] == expected else f"no ({expected})",
                      ",".join(case["inference"]), f"{case['seconds']:.1f}")
    console.print(table)
    table = Table(title=f"Correct pairs ({args.correct_steps} steps): worst error / noise floor, seeds {args.seeds}")
    for column in ("model", "direction", "optimizer", "verdicts", "worst x floor", "s (mean)"):
        table.add_column(column)
    groups: dict[tuple, list] = {}
    for case in correct:
        groups.setdefault((case["model"], case["direction"], case["optimizer"]), []).append(case)
    for (model, direction, optimizer), found in groups.items():
        rows = [case["training"][0] for case in found]
        table.add_row(model, direction, optimizer, ",".join(sorted({r["verdict"] for r in rows})),
                      f"{max(r['worst'] for r in rows):.3g}",
                      f"{sum(c['seconds'] for c in found) / len(found):.1f}")
    console.print(table)
    worst_correct = max(case["training"][0]["worst"] for case in correct)
    named = [case["training"][0] for case in bugs if case["training"][0]["verdict"] == "FAIL"]
    weakest = min((r["worst"] for r in named), default=float("nan"))
    for side, directions in (("Keras", DIRECTIONS), ("Gluon", GLUON_DIRECTIONS)):
        mine = [case["training"][0]["worst"] for case in correct if case["direction"] in directions]
        found = [case["training"][0]["worst"] for case in bugs if case["direction"] in directions
                 and case["training"][0]["verdict"] == "FAIL"]
        if mine:
            console.print(f"{side}: largest correct figure {max(mine):.3g} x floor; weakest detected bug "
                          f"{min(found, default=float('nan')):.3g} x")
    console.print(f"largest correct figure {worst_correct:.3g} x floor; weakest detected bug {weakest:.3g} x; "
                  f"{len(named)}/{len(bugs)} bugs FAIL, "
                  f"{sum(1 for c in bugs if c['training'][0]['named'] == BUGS[c['bug']][0])}/{len(bugs)} named as "
                  f"expected; {time.perf_counter() - start:.0f} s in all")
    atomic_write_text(Path(args.json), json.dumps({"bugs": bugs, "correct": correct, "steps": args.steps,
                                                   "correct_steps": args.correct_steps, "seeds": seeds,
                                                   "largest_correct_ratio": worst_correct,
                                                   "weakest_bug_ratio": weakest}, indent=1))


if __name__ == "__main__":
    main()
