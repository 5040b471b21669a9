"""Does a port train alike (issue 44, first slice)? A PyTorch setup (module, optimizer, loss_fn) against a compiled
keras.Model through rosetta.verify(..., labels=..., train_steps=N): the correct pair PASSes with SGD-momentum, Adam
and AdamW over 20 steps, each seeded training bug FAILs at the first step where it shows with its name, and the same
pairs still PASS inference. Keras runs in a process of its own (one script runs every case, as tests/test_api.py's
in-memory Keras models do): TensorFlow never shares a process with the tests."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.verify.test_port_training_pairs import BUGS as SEEDED_BUGS, OPTIMIZER

SCRIPT = r'''
import json, sys
import numpy as np
import torch
import keras
import rosetta


def build(bug="", optimizer="sgd", seed=0):
    """An MLP with BatchNorm and a Dense head in PyTorch, its Keras port with the weights copied, each compiled
    with its own optimiser and loss; `bug` seeds one training bug into the port (or the reference)."""
    torch.manual_seed(seed)
    layers = [torch.nn.Linear(6, 16), torch.nn.BatchNorm1d(16), torch.nn.ReLU()]
    if bug == "dropout":  # the reference drops, the port (inference-equal) does not
        layers.append(torch.nn.Dropout(0.5))
    net = torch.nn.Sequential(*layers, torch.nn.Linear(16, 4)).eval()  # inference as users run it; rosetta trains a copy in train mode
    x = keras.Input((6,), name="x")
    h = keras.layers.Dense(16, name="dense")(x)
    h = keras.layers.BatchNormalization(momentum=0.1 if bug == "batchnorm-momentum" else 0.9, epsilon=1e-5,
                                        name="bn")(h)
    port = keras.Model(x, keras.layers.Dense(4, name="head")(keras.layers.ReLU()(h)))
    w = [p.detach().numpy() for p in net.parameters()]
    port.get_layer("dense").set_weights([w[0].T, w[1]])
    port.get_layer("bn").set_weights([w[2], w[3], np.zeros(16), np.ones(16)])
    port.get_layer("head").set_weights([w[4].T, w[5]])
    if optimizer == "sgd":
        opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
        kopt = keras.optimizers.SGD(learning_rate=0.05, momentum=0.9)
    elif optimizer == "adam":
        opt = torch.optim.Adam(net.parameters(), lr=1e-3, weight_decay=0.01 if bug == "weight-decay" else 0.0)
        kopt = (keras.optimizers.AdamW(learning_rate=1e-3, weight_decay=0.01, epsilon=1e-8) if bug == "weight-decay"
                else keras.optimizers.Adam(learning_rate=1e-3, epsilon=1e-7 if bug == "adam-epsilon" else 1e-8))
    else:
        opt = torch.optim.AdamW(net.parameters(), lr=1e-3, weight_decay=0.01)
        kopt = keras.optimizers.AdamW(learning_rate=1e-3, weight_decay=0.01, epsilon=1e-8)
    loss = torch.nn.CrossEntropyLoss(reduction="sum" if bug == "loss-reduction" else "mean")
    port.compile(optimizer=kopt, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=bug != "from-logits"))
    return (net, opt, loss), port


(net, opt, loss), port = build()
for label, call in (("uncompiled", lambda: rosetta.verify((net, opt, loss), keras.Model(port.inputs, port.outputs),
                                                          inputs=["x:Nx6:float32"], labels="labels:N:int64:0:4",
                                                          train_steps=2)),
                    ("no labels", lambda: rosetta.verify((net, opt, loss), port, inputs=["x:Nx6:float32"],
                                                         train_steps=2))):
    try:
        call()
    except rosetta.BadInput as error:
        print(f"REFUSED {label}: {error}", flush=True)

for case in json.loads(sys.argv[1]):
    setup, port = build(case.get("bug", ""), case.get("optimizer", "sgd"))
    report = rosetta.verify(setup, port, inputs=["x:Nx6:float32"], labels="labels:N:int64:0:4",
                            train_steps=case["steps"])
    training = [row for row in report.rows if row.check == "training"]
    assert str(report) and report.to_json()["results"]  # the table and --json take the training row
    if training and training[0].verdict != "PASS":
        assert "diverges first at step" in report.message(), report.message()
    print("CASE " + json.dumps({**case, "inference": [row.verdict for row in report.rows if row.check != "training"],
                                "training": [{"verdict": row.verdict, "reason": row.reason,
                                              "first_step": row.training["first_step"],
                                              "named": row.training["diagnosis"]["name"],
                                              "says": row.training["diagnosis"]["says"],
                                              "worst": max(o.error_ratio for o in row.outputs)}
                                             for row in training]}), flush=True)
'''

CORRECT = [{"optimizer": name, "steps": 20} for name in ("sgd", "adam", "adamw")]
BUGS = {bug: SEEDED_BUGS[bug] for bug in ("dropout", "from-logits", "loss-reduction", "weight-decay", "adam-epsilon",
                                          "batchnorm-momentum")}  # the first slice's, on the Keras port of a torch MLP


@pytest.fixture(scope="module")
def cases(tmp_path_factory) -> dict:
    script = tmp_path_factory.mktemp("port-training") / "pairs.py"
    script.write_text(SCRIPT)
    asked = CORRECT + [{"bug": bug, "optimizer": OPTIMIZER.get(bug, "sgd"), "steps": 8} for bug in BUGS] + [
        {"bug": "batchnorm-momentum", "optimizer": "sgd", "steps": 0}]
    done = subprocess.run([sys.executable, str(script), json.dumps(asked)], capture_output=True, text=True,
                          timeout=1200, cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert "REFUSED uncompiled: " in done.stdout and "not compiled" in done.stdout, done.stdout[-2000:]
    assert "REFUSED no labels: labels: " in done.stdout, done.stdout[-2000:]
    found = [json.loads(line[5:]) for line in done.stdout.splitlines() if line.startswith("CASE ")]
    return {(case.get("bug", ""), case["optimizer"], case["steps"]): case for case in found}


@pytest.mark.parametrize("optimizer", ["sgd", "adam", "adamw"])
def test_a_correct_port_trains_alike_over_20_steps(cases, optimizer):
    case = cases[("", optimizer, 20)]
    assert case["inference"] and set(case["inference"]) == {"PASS"}, case
    (training,) = case["training"]
    assert training["verdict"] == "PASS", training["reason"]
    assert training["worst"] <= 20 and "20 steps alike" in training["reason"]
    if optimizer != "sgd":  # Adam's epsilon placement is the frameworks' convention: modelled, said
        assert "epsilon placed after the bias correction" in training["reason"]


@pytest.mark.parametrize("bug", list(BUGS))
def test_a_seeded_training_bug_fails_at_its_first_step_named(cases, bug):
    name, step, structure = BUGS[bug]
    case = cases[(bug, OPTIMIZER.get(bug, "sgd"), 8)]
    (training,) = case["training"]
    assert training["verdict"] == "FAIL", training["reason"]
    assert training["named"] == name, training["reason"]
    assert training["first_step"] == step and f"diverges first at step {step}" in training["reason"]
    assert structure in training["reason"], training["reason"]
    if bug == "dropout":  # named dropout, never blamed on a parameter
        assert "diverges first at step 1: the loss" in training["reason"]
    assert set(case["inference"]) == {"PASS"}, case  # the bug is training-only: the port is the same function


def test_inference_of_the_same_pair_still_passes_without_train_steps(cases):
    case = cases[("batchnorm-momentum", "sgd", 0)]
    assert case["training"] == [] and case["inference"] and set(case["inference"]) == {"PASS"}, case


def test_train_steps_between_two_models_takes_a_compiled_keras_port_only():
    """Refused before any work, in one line: a torch candidate against a setup, and two modules without a setup
    (PyTorch trains against Keras, either first)."""
    import torch

    import rosetta

    net = torch.nn.Sequential(torch.nn.Linear(6, 4))
    setup = (net, torch.optim.SGD(net.parameters(), lr=0.1), torch.nn.CrossEntropyLoss())
    with pytest.raises(rosetta.BadInput, match="and one compiled keras.Model"):
        rosetta.verify(setup, net, inputs=["x:Nx6:float32"], labels="labels:N:int64:0:4", train_steps=2)
    with pytest.raises(rosetta.BadInput, match="a PyTorch training setup, the tuple"):
        rosetta.verify(net, net, inputs=["x:Nx6:float32"], train_steps=2)
