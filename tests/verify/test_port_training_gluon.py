"""Training equivalence of PyTorch <-> Gluon ports (issue 44): a PyTorch setup against a Gluon factory file
`gluon_setup.py:fn` returning (block, trainer, loss), told apart by its imports (never run in this process) and
trained in rosetta's MXNet worker. A few cases (the whole table is scripts/port_training.py's): one correct pair per
optimiser over 20 steps in both directions, four seeded bugs named (Gluon's own trainer.step(batch_size) rescale
among them), the command-line form, and the refusals. The pairs are built by tests/verify/port_training_pairs.py in
a process of its own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.verify.test_port_training_pairs import BUGS

ROOT = Path(__file__).resolve().parents[2]
PAIRS = Path(__file__).with_name("port_training_pairs.py")
EXPECTED = {**BUGS, "step-rescale": ("trainer.step rescale", 1, "the loss agrees at step 1")}
CORRECT = [("mlp", "torch->gluon", "sgd"), ("cnn", "gluon->torch", "adam"), ("mlp", "gluon->torch", "adam-wd")]
SEEDED = [("mlp", "torch->gluon", "step-rescale", "sgd"), ("cnn", "torch->gluon", "batchnorm-momentum", "sgd"),
          ("mlp", "gluon->torch", "weight-decay", "adam"), ("mlp", "torch->gluon", "dropout", "sgd")]


@pytest.fixture(scope="module")
def cases() -> dict:
    asked = [{"model": m, "direction": d, "optimizer": o, "steps": 20} for m, d, o in CORRECT]
    asked += [{"model": m, "direction": d, "bug": b, "optimizer": o, "steps": 8} for m, d, b, o in SEEDED]
    done = subprocess.run([sys.executable, str(PAIRS), json.dumps(asked)], capture_output=True, text=True,
                          timeout=900, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    found = [json.loads(line[5:]) for line in done.stdout.splitlines() if line.startswith("CASE ")]
    assert len(found) == len(asked), done.stdout[-2000:]
    return {(c["model"], c["direction"], c.get("bug", ""), c["optimizer"]): c["training"][0] for c in found}


@pytest.mark.parametrize("model,direction,optimizer", CORRECT)
def test_a_correct_gluon_pair_trains_alike_over_20_steps(cases, model, direction, optimizer):
    training = cases[(model, direction, "", optimizer)]
    assert training["verdict"] == "PASS", training["reason"]
    assert "20 steps alike" in training["reason"] and training["worst"] <= 20
    assert not training["unpaired"] and training["paired"] == 8, training  # BatchNorm statistics included
    if optimizer != "sgd":
        assert "Gluon Adam's epsilon placed after the bias correction" in training["reason"]


@pytest.mark.parametrize("model,direction,bug,optimizer", SEEDED)
def test_a_seeded_gluon_bug_fails_at_its_first_step_named(cases, model, direction, bug, optimizer):
    name, step, structure = EXPECTED[bug]
    training = cases[(model, direction, bug, optimizer)]
    assert training["verdict"] == "FAIL", training["reason"]
    assert training["named"] == name, training["reason"]
    assert training["first_step"] == step and structure in training["reason"], training
    assert "Gluon" in training["says"], training["says"]


def _files(tmp_path: Path) -> tuple[str, str]:
    """A PyTorch factory file and the Gluon factory file of the same MLP (the same seeded weights)."""
    from tests.verify.port_training_pairs import build_torch_for_gluon, gluon_setup_file

    torch_setup = tmp_path / "setup.py"
    torch_setup.write_text(f"import sys\nsys.path.insert(0, {str(ROOT)!r})\nfrom tests.verify.port_training_pairs "
                           "import build_torch_for_gluon\n\n\ndef fn():\n    return build_torch_for_gluon('mlp', '', "
                           "'sgd', 0)\n")
    net = build_torch_for_gluon("mlp", "", "sgd", 0)[0]
    return f"{torch_setup}:fn", gluon_setup_file(tmp_path, "mlp", "", "sgd", net)


def test_a_gluon_file_is_told_by_its_imports_without_running_it(tmp_path):
    from rosetta.sources.training_setup import is_gluon_setup_text, is_setup_text
    from rosetta.verify.port_training import file_pair

    torch_text, _ = _files(tmp_path)
    gluon = tmp_path / "never_run.py"
    gluon.write_text("from mxnet import gluon\nraise SystemExit('ran')\n\n\ndef fn():\n    pass\n")
    assert is_gluon_setup_text(f"{gluon}:fn") and not is_setup_text(f"{gluon}:fn")
    assert is_setup_text(torch_text) and not is_gluon_setup_text(torch_text)
    assert file_pair(torch_text, f"{gluon}:fn")[2] == "torch"
    assert file_pair(f"{gluon}:fn", torch_text)[2] == "gluon"
    assert "mxnet" not in sys.modules


def test_a_gluon_setup_needs_trust_code(tmp_path):
    from rosetta.errors import BadInput
    from rosetta.verify.port_training import TrainingOptions, verify_port_training_files

    torch_text, gluon_text = _files(tmp_path)
    with pytest.raises(BadInput, match="trust_code=True"):
        verify_port_training_files(torch_text, gluon_text, ["x:Nx6:float32"], "labels:N:int64:0:4", 2,
                                   options=TrainingOptions(trust_code=False))


def test_the_command_line_trains_a_torch_setup_against_a_gluon_setup(tmp_path):
    torch_text, gluon_text = _files(tmp_path)
    done = subprocess.run([sys.executable, "-m", "rosetta.cli", "verify", torch_text, gluon_text, "--trust-code",
                           "--input", "x:Nx6:float32", "--labels", "labels:N:int64:0:4", "--train-steps", "5",
                           "--json", str(tmp_path / "out.json")], capture_output=True, text=True, timeout=600, cwd=ROOT)
    rows = json.loads((tmp_path / "out.json").read_text())["results"] if (tmp_path / "out.json").exists() else []
    training = [row for row in rows if row.get("check") == "training"]
    assert training, done.stdout[-2000:] + done.stderr[-2000:]
    assert training[0]["verdict"] == "PASS" and "5 steps alike" in training[0]["reason"], training[0]
    assert training[0]["target"] == "mxnet"
    inference = [row for row in rows if row.get("check") != "training"]
    assert inference and {row["verdict"] for row in inference} == {"PASS"}, inference  # the block, exported
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_python_api_trains_a_setup_in_memory_against_a_gluon_file(tmp_path):
    import rosetta
    from tests.verify.port_training_pairs import build_torch_for_gluon

    _, gluon_text = _files(tmp_path)
    report = rosetta.verify(build_torch_for_gluon("mlp", "", "sgd", 0), gluon_text,
                            inputs=["x:Nx6:float32"], labels="labels:N:int64:0:4", train_steps=3,
                            settings=rosetta.RunSettings(trust_code=True))
    (training,) = [row for row in report.rows if row.check == "training"]
    assert training.verdict == "PASS" and training.target == "mxnet", training.reason
    assert "mxnet" not in sys.modules  # built, trained and exported in the MXNet worker only
