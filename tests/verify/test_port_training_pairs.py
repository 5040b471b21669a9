"""Training equivalence of ports in both directions (issue 44): a PyTorch setup against a compiled Keras port, and a
compiled Keras reference against a PyTorch port; an MLP with BatchNorm, a CNN with BatchNorm (kernels HWIO/OIHW,
inputs channels-last on the Keras side), GRU/LSTM text models (gate blocks, fused biases) and a pre-LN transformer
block (hand-written q/k/v/o Linears against Keras' MultiHeadAttention). Correct pairs PASS over
20 steps with SGD-momentum, Adam and AdamW; each seeded training bug FAILs at the first step where it shows with its
name and what the per-step structure rules out, while the same pair's inference still PASSes. The pairs are built
by tests/verify/port_training_pairs.py, run in one process of its own (Keras never shares the tests' process)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

PAIRS = Path(__file__).with_name("port_training_pairs.py")
BUGS = {  # bug -> (its name, the first step where it shows, what the per-step structure says)
    "dropout": ("dropout on one side", 1, "the loss already differs"),
    "from-logits": ("from_logits", 1, "the loss already differs"),
    "loss-reduction": ("loss reduction", 1, "the loss already differs"),
    "weight-decay": ("weight decay", 1, "the loss agrees at step 1"),
    "adam-epsilon": ("Adam epsilon", 1, "the loss agrees at step 1"),
    "batchnorm-momentum": ("BatchNorm momentum", 1, "losses and trainable parameters agree"),
    "clipnorm": ("gradient clipping", 1, "the loss agrees at step 1"),
    "label-smoothing": ("label smoothing", 1, "the loss already differs"),
    "class-weights": ("class weights", 1, "the loss already differs"),
    "nesterov": ("Nesterov", 1, "the loss agrees at step 1"),
    "sgd-dampening": ("SGD momentum form", 2, "the loss agrees at step 2"),  # both first steps are lr x g
    "lr-schedule": ("learning rate", 2, "the loss agrees at step 2"),  # the schedule starts at the same rate
    "frozen": ("frozen layers", 1, "the loss agrees at step 1"),
    "bn-inference": ("BatchNorm in inference mode", 1, "the loss already differs"),
    "bn-eval": ("BatchNorm in inference mode", 1, "the loss already differs"),
    "lstm-biases": ("RNN biases", 1, "the loss agrees at step 1"),
}
OPTIMIZER = {"weight-decay": "adam", "adam-epsilon": "adam"}
SEEDED = (  # (model, direction, bugs)
    ("mlp", "torch->keras", ("clipnorm", "label-smoothing", "class-weights", "nesterov", "sgd-dampening",
                             "lr-schedule", "frozen", "bn-inference", "bn-eval")),
    ("lstm", "torch->keras", ("lstm-biases",)),
    ("mlp", "keras->torch", ("dropout", "loss-reduction", "adam-epsilon", "label-smoothing", "class-weights",
                             "lr-schedule")),
    ("cnn", "keras->torch", ("from-logits", "weight-decay", "batchnorm-momentum", "clipnorm", "nesterov",
                             "sgd-dampening", "frozen", "bn-inference", "bn-eval")),
    ("gru", "keras->torch", ("nesterov", "frozen")),
    ("transformer", "keras->torch", ("nesterov", "loss-reduction")),  # pre-LN block: MultiHeadAttention's kernels
)
CORRECT = [("mlp", "keras->torch", name) for name in ("sgd", "adam", "adamw")] + [
    ("cnn", "keras->torch", "sgd"), ("cnn", "keras->torch", "adam"), ("cnn", "torch->keras", "adamw"),
    ("gru", "keras->torch", "adam"), ("gru", "torch->keras", "sgd"),
    ("lstm", "keras->torch", "sgd"), ("lstm", "torch->keras", "adamw"), ("transformer", "torch->keras", "adamw")]
VARIANTS = ("clip-global", "smoothing-both")  # settings written differently that train alike


def _key(case: dict) -> tuple:
    return case.get("model"), case.get("direction"), case.get("bug", ""), case.get("optimizer")


@pytest.fixture(scope="module")
def cases() -> dict:
    asked = [{"model": m, "direction": d, "optimizer": o, "steps": 20} for m, d, o in CORRECT]
    asked += [{"model": "mlp", "direction": "torch->keras", "bug": bug, "optimizer": "sgd", "steps": 20}
              for bug in VARIANTS]
    asked += [{"model": m, "direction": d, "bug": bug, "optimizer": OPTIMIZER.get(bug, "sgd"), "steps": 8}
              for m, d, bugs in SEEDED for bug in bugs]
    done = subprocess.run([sys.executable, str(PAIRS), json.dumps(asked)], capture_output=True, text=True,
                          timeout=1500, cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    found = [json.loads(line[5:]) for line in done.stdout.splitlines() if line.startswith("CASE ")]
    assert len(found) == len(asked), done.stdout[-2000:]
    return {_key(case): case for case in found}


@pytest.mark.parametrize("model,direction,optimizer", CORRECT)
def test_a_correct_pair_trains_alike_over_20_steps(cases, model, direction, optimizer):
    case = cases[(model, direction, "", optimizer)]
    (training,) = case["training"]
    assert training["verdict"] == "PASS", training["reason"]
    assert "20 steps alike" in training["reason"] and training["worst"] <= 20
    assert not training["unpaired"], training  # every Keras weight paired: kernels, gates, fused biases
    assert set(case["inference"]) == {"PASS"}, case


@pytest.mark.parametrize("variant", VARIANTS)
def test_settings_written_differently_that_train_alike_pass(cases, variant):
    """Keras' global_clipnorm is PyTorch's clip_grad_norm_; label smoothing on both sides (Keras' categorical
    cross-entropy on one-hot labels against PyTorch's on class indices)."""
    (training,) = cases[("mlp", "torch->keras", variant, "sgd")]["training"]
    assert training["verdict"] == "PASS", training["reason"]


@pytest.mark.parametrize("model,direction,bug", [(m, d, b) for m, d, bugs in SEEDED for b in bugs])
def test_a_seeded_training_bug_fails_at_its_first_step_named(cases, model, direction, bug):
    name, step, structure = BUGS[bug]
    case = cases[(model, direction, bug, OPTIMIZER.get(bug, "sgd"))]
    (training,) = case["training"]
    assert training["verdict"] == "FAIL", training["reason"]
    assert training["named"] == name, training["reason"]
    assert training["first_step"] == step and f"diverges first at step {step}" in training["reason"], training
    assert structure in training["reason"], training["reason"]
    assert set(case["inference"]) == {"PASS"}, case  # training-only: the pair is the same function


def test_the_structure_says_what_it_rules_out(cases):
    (optimizer,) = cases[("mlp", "torch->keras", "nesterov", "sgd")]["training"]
    assert "ruled out: the model's function, the loss and the labels" in optimizer["reason"]
    (statistic,) = cases[("cnn", "keras->torch", "batchnorm-momentum", "sgd")]["training"]
    assert "ruled out: the forward pass, the loss and the optimiser" in statistic["reason"]


def test_a_frozen_batchnorm_is_named_for_its_mode_not_its_frozen_weights(cases):
    """Keras' trainable=False BatchNormalization also freezes gamma and beta: the forward pass differs first, and
    the inference mode is the cause named, with the setting that caused it."""
    (training,) = cases[("cnn", "keras->torch", "bn-inference", "sgd")]["training"]
    assert "on the Keras side" in training["says"] and "trainable=False" in training["says"], training["says"]
    (training,) = cases[("mlp", "torch->keras", "bn-eval", "sgd")]["training"]
    assert "on the PyTorch side" in training["says"] and "eval mode" in training["says"], training["says"]
