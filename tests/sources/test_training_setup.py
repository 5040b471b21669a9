"""The command line's side of training equivalence (issue 44), as a library function: a PyTorch factory file
`setup.py:fn` returning (module, optimizer, loss_fn), run only with --trust-code, against a saved .keras file that
keeps its compile config, in either order (rosetta.verify.port_training.verify_port_training_files; loading in
rosetta.sources.training_setup). Keras runs in a process of its own for the files and the end-to-end runs."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from rosetta.errors import BadInput
from rosetta.sources.training_setup import check_compiled_keras, is_training_setup, load_torch_setup

ROOT = Path(__file__).resolve().parents[2]
FACTORY = f'''
import sys
sys.path.insert(0, {str(ROOT / "tests" / "verify")!r})
from port_training_pairs import build


def fn():
    return build("mlp", BUG)[0]
'''
PLAIN = '''
import torch


def fn():
    net = torch.nn.Sequential(torch.nn.Linear(6, 4))
    return net, torch.optim.SGD(net.parameters(), lr=0.1), torch.nn.CrossEntropyLoss()


def module_only():
    return torch.nn.Sequential(torch.nn.Linear(6, 4))
'''
SCRIPT = r'''
import json, sys
sys.path.insert(0, sys.argv[1])
from port_training_pairs import build
from rosetta.errors import BadInput
from rosetta.verify.port_training import TrainingOptions, verify_port_training_files

folder = sys.argv[2]
(net, opt, loss), port = build("mlp")
port.save(f"{folder}/port.keras")
import keras
keras.Model(port.inputs, port.outputs).save(f"{folder}/uncompiled.keras")
out = {}
for key, (reference, candidate) in {"torch->keras": (f"{folder}/setup.py:fn", f"{folder}/port.keras"),
                                    "keras->torch": (f"{folder}/port.keras", f"{folder}/setup.py:fn"),
                                    "nesterov": (f"{folder}/nesterov.py:fn", f"{folder}/port.keras")}.items():
    row = verify_port_training_files(reference, candidate, ["x:Nx6:float32"], "labels:N:int64:0:4", 6,
                                     options=TrainingOptions(trust_code=True))
    out[key] = {"verdict": row.verdict, "target": row.target, "model": row.model, "reason": row.reason,
                "named": row.training["diagnosis"]["name"], "reference": row.training["reference"]}
for key, call in {"untrusted": lambda: verify_port_training_files(f"{folder}/setup.py:fn", f"{folder}/port.keras",
                                                                  ["x:Nx6:float32"], "labels:N:int64:0:4", 2),
                  "uncompiled": lambda: verify_port_training_files(f"{folder}/setup.py:fn",
                                                                   f"{folder}/uncompiled.keras", ["x:Nx6:float32"],
                                                                   "labels:N:int64:0:4", 2,
                                                                   options=TrainingOptions(trust_code=True)),
                  "two keras": lambda: verify_port_training_files(f"{folder}/port.keras", f"{folder}/port.keras",
                                                                  ["x:Nx6:float32"], "labels:N:int64:0:4", 2)}.items():
    try:
        call()
        out[key] = "not refused"
    except BadInput as error:
        out[key] = str(error)
import rosetta
(net, opt, loss), port = build("mlp")
for key, (reference, candidate) in {"api torch->keras": ((net, opt, loss), port),
                                    "api keras->torch": (port, (net, opt, loss))}.items():
    report = rosetta.verify(reference, candidate, inputs=["x:Nx6:float32"], labels="labels:N:int64:0:4",
                            train_steps=6)
    out[key] = [{"verdict": row.verdict, "check": row.check, "reason": row.reason} for row in report]
print("RESULT " + json.dumps(out))
'''


def _factory(folder: Path, name: str, bug: str | None = None) -> str:
    """A factory file: the port pairs' MLP setup (it builds the Keras port too: only in the subprocess), or a plain
    torch one (bug None) for this process."""
    (folder / f"{name}.py").write_text(PLAIN if bug is None else FACTORY.replace("BUG", repr(bug)))
    return f"{folder / name}.py:fn"


def test_a_factory_runs_only_with_trust_code(tmp_path):
    text = _factory(tmp_path, "setup")
    with pytest.raises(BadInput, match="it needs trust_code=True"):
        load_torch_setup(text, trust_code=False)


def test_a_factory_returns_a_training_setup(tmp_path):
    text = _factory(tmp_path, "setup")
    setup = load_torch_setup(text, trust_code=True)
    assert is_training_setup(setup)
    with pytest.raises(BadInput, match=r"returned Sequential; train_steps= between two models needs \(torch"):
        load_torch_setup(text.replace(":fn", ":module_only"), trust_code=True)


def test_a_keras_file_without_its_compile_config_is_refused(tmp_path):
    uncompiled = tmp_path / "model.keras"
    with zipfile.ZipFile(uncompiled, "w") as archive:  # what Keras writes for a model never compiled
        archive.writestr("config.json", json.dumps({"class_name": "Sequential", "compile_config": {}}))
    with pytest.raises(BadInput, match="saved without a compile config"):
        check_compiled_keras(uncompiled)
    with pytest.raises(BadInput, match="takes a saved .keras file"):
        check_compiled_keras(tmp_path / "model.h5")


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("training-setup")
    _factory(folder, "setup", "")
    _factory(folder, "nesterov", "nesterov")
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(ROOT / "tests" / "verify"), str(folder)],
                          capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    (line,) = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    return {**json.loads(line[7:]), "folder": folder}


@pytest.mark.parametrize("direction", ["torch->keras", "keras->torch"])
def test_a_factory_and_a_keras_file_train_alike_in_either_order(files, direction):
    row = files[direction]
    assert row["verdict"] == "PASS", row["reason"]
    assert row["reference"] == direction.partition("->")[0] and row["target"] == direction.partition("->")[2]


def test_a_training_bug_in_the_factory_is_named(files):
    assert files["nesterov"]["verdict"] == "FAIL" and files["nesterov"]["named"] == "Nesterov", files["nesterov"]


def test_what_cannot_train_is_refused_in_one_line(files):
    assert "it needs trust_code=True" in files["untrusted"], files["untrusted"]
    assert "saved without a compile config" in files["uncompiled"], files["uncompiled"]
    assert "one PyTorch factory and one other" in files["two keras"], files["two keras"]


@pytest.mark.parametrize("direction", ["api torch->keras", "api keras->torch"])
def test_in_memory_setups_train_alike_in_either_order(files, direction):
    """rosetta.verify(setup, compiled keras.Model, ...) and the other way round: the inference rows of the module
    and the training row, all PASS."""
    rows = files[direction]
    assert [row["check"] for row in rows][-1] == "training" and len(rows) >= 2, rows
    assert all(row["verdict"] == "PASS" for row in rows), rows


def _cli(*arguments: str) -> subprocess.CompletedProcess:
    """`rosetta verify ARGUMENTS` through the CLI's main in this process (tests/test_cli.run_here): the training
    runs in rosetta's own workers either way, and a process of its own imported torch anew each call (20 s)."""
    from tests.test_cli import run_here

    return run_here("verify", *arguments)


TRAINING = ("--trust-code", "--input", "x:Nx6:float32", "--labels", "labels:N:int64:0:4", "--train-steps", "6")


def test_the_command_line_trains_a_factory_against_a_keras_file(files):
    """rosetta verify setup.py:fn port.keras --train-steps: the inference row and the training row, PASS, exit 0;
    the Nesterov bug in the factory: FAIL named, exit 1."""
    folder = files["folder"]
    done = _cli(f"{folder}/setup.py:fn", f"{folder}/port.keras", *TRAINING, "--json", str(folder / "ok.json"))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    rows = json.loads((folder / "ok.json").read_text())["results"]
    assert [row["check"] for row in rows][-1] == "training" and all(row["verdict"] == "PASS" for row in rows), rows
    done = _cli(f"{folder}/nesterov.py:fn", f"{folder}/port.keras", *TRAINING)
    assert done.returncode == 1 and "Nesterov" in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]


def test_labels_without_train_steps_is_refused_in_one_line(files):
    folder = files["folder"]
    done = _cli(f"{folder}/setup.py:fn", f"{folder}/port.keras", "--trust-code", "--input", "x:Nx6:float32",
                "--labels", "labels:N:int64:0:4")
    assert done.returncode == 2 and "--labels is for --train-steps" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
