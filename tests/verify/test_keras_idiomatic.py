"""Keras 3 models as people and model libraries write them, read as they are (issue 42, item 4): dict inputs
(keras-hub's backbones take {"token_ids", "padding_mask"}), dict and nested outputs, two outputs of one nested
layer, a free sequence axis; against a PyTorch reference factory. Keras runs in rosetta's workers, or (the
in-memory models of the API) in a process of its own: TensorFlow does not share the tests' process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.shared import shared_folder
from tests.test_cli import run_here

REFERENCE = r'''
import torch


class Encoder(torch.nn.Module):
    """An embedding, a projection masked by padding_mask, and two heads on it."""

    def __init__(self):
        super().__init__()
        self.embedding = torch.nn.Embedding(100, 8)
        self.dense = torch.nn.Linear(8, 4)
        self.x = torch.nn.Linear(4, 3)
        self.y = torch.nn.Linear(4, 2)

    def forward(self, token_ids, padding_mask):
        h = self.dense(self.embedding(token_ids) * padding_mask.unsqueeze(-1).float())
        return {"sequence_output": h, "pooled.x": self.x(h), "pooled.y": self.y(h)}


class Tokens(Encoder):
    """The same without a mask, its input and outputs named otherwise."""

    def forward(self, tokens):
        h = self.dense(self.embedding(tokens))
        return h, self.x(h), self.y(h)


def encoder():
    torch.manual_seed(0)
    return Encoder().eval()


def tokens():
    torch.manual_seed(0)
    return Tokens().eval()
'''

# the ports, built with the reference's weights: Keras 3 functional models as keras-hub writes its backbones
PORTS = r'''
import os, sys
sys.path.insert(0, sys.argv[1])
import keras
from reference import encoder


def weights(wrong=False):
    reference = encoder()
    w = {name: value.detach().numpy() for name, value in reference.state_dict().items()}
    return [w["embedding.weight"], w["dense.weight"].T, w["dense.bias"], w["x.weight"].T, w["x.bias"],
            w["y.weight"].T, w["y.bias"] + (0.5 if wrong else 0)]


def layers():
    """The embedding, the masked projection's Dense, and the two heads as one nested model."""
    inner = keras.Input((None, 4))
    heads = keras.Model(inner, [keras.layers.Dense(3, name="x")(inner), keras.layers.Dense(2, name="y")(inner)],
                        name="heads")
    return keras.layers.Embedding(100, 8, name="embedding"), keras.layers.Dense(4, name="dense"), heads


def masked(wrong=False):
    embedding, dense, heads = layers()
    ids = keras.Input((None,), dtype="int32", name="token_ids")
    mask = keras.Input((None,), dtype="int32", name="padding_mask")
    h = dense(embedding(ids) * keras.ops.expand_dims(keras.ops.cast(mask, "float32"), -1))
    x, y = heads(h)
    return {"token_ids": ids, "padding_mask": mask}, h, x, y


def save(model, name, wrong=False):
    model.set_weights(weights(wrong))
    model.save(os.path.join(sys.argv[1], name))


inputs, h, x, y = masked()
save(keras.Model(inputs, {"sequence_output": h, "pooled": {"x": x, "y": y}}), "dict.keras")
inputs, h, x, y = masked()
save(keras.Model(inputs, {"sequence_output": h, "pooled": {"x": x, "y": y}}), "dict-wrong.keras", wrong=True)
inputs, h, x, y = masked()
save(keras.Model(inputs, [h, x, y]), "nested.keras")
embedding, dense, heads = layers()
ids = keras.Input((None,), dtype="int32", name="token_ids")
h = dense(embedding(ids))
save(keras.Model(ids, [h, *heads(h)]), "free-axis.keras")
'''


def _build(folder: Path) -> None:
    (folder / "reference.py").write_text(REFERENCE)
    done = subprocess.run([sys.executable, "-c", PORTS, str(folder)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.fixture(scope="module")
def ports(tmp_path_factory) -> Path:
    return shared_folder(tmp_path_factory, "keras-idiomatic", _build)


MASKED = ["--input", "token_ids:Nx12:int64:0:100", "--input", "padding_mask:Nx12:int32:0:2"]


def _verify(tmp_path, *argv) -> tuple[subprocess.CompletedProcess, dict]:
    out = run_here("verify", *argv, "--trust-code", "--no-progress", "--json", tmp_path / "r.json")
    assert "\x1b" not in out.stdout + out.stderr  # one-line messages, no terminal codes
    rows = json.loads((tmp_path / "r.json").read_text())["results"] if (tmp_path / "r.json").is_file() else []
    return out, {row["target"]: row for row in rows}


def test_dict_inputs_and_nested_outputs_are_read_by_key_and_paired_by_name(ports, tmp_path, monkeypatch):
    """Each leaf by its key or path: the reference's token_ids and padding_mask, both (N, 12) integers, pair
    with the port's by name alone (by shape they could not be told apart), and so do its outputs; a head
    with a wrong bias FAILs."""
    monkeypatch.chdir(ports)
    out, rows = _verify(tmp_path, "reference.py:encoder", "dict.keras", "dict-wrong.keras", *MASKED)
    assert out.returncode == 1, out.stdout + out.stderr
    right, wrong = rows["dict.keras"], rows["dict-wrong.keras"]
    assert right["verdict"] == "PASS", right["reason"]
    assert {(p["reference"], p["other"], p["how"]) for p in right["pairing"]["inputs"]} == {
        ("token_ids", "token_ids", "name"), ("padding_mask", "padding_mask", "name")}
    # the nested outputs by their path (PyTorch's keys that are no identifiers are output_KEY: paired by shape)
    assert {(p["reference"], p["other"]) for p in right["pairing"]["outputs"]} == {
        ("sequence_output", "sequence_output"), ("output_pooled.x", "pooled.x"), ("output_pooled.y", "pooled.y")}
    assert wrong["verdict"] == "FAIL" and "output_pooled.y" in wrong["reason"], wrong["reason"]


def test_two_outputs_of_one_nested_layer_each_have_a_name_and_are_compared(ports, tmp_path, monkeypatch):
    """The nested model `heads` gives two outputs: `heads` and `heads_1`, both paired (by shape) and compared,
    none dropped (one name for both kept one output: the reference's other output was then missing)."""
    monkeypatch.chdir(ports)
    out, rows = _verify(tmp_path, "reference.py:encoder", "nested.keras", *MASKED)
    assert out.returncode == 0, out.stdout + out.stderr
    row = rows["nested.keras"]
    assert row["verdict"] == "PASS", row["reason"]
    assert {(p["reference"], p["other"]) for p in row["pairing"]["outputs"]} == {
        ("sequence_output", "dense"), ("output_pooled.x", "heads"), ("output_pooled.y", "heads_1")}


def test_a_free_axis_is_sized_from_the_paired_reference_input(ports, tmp_path, monkeypatch):
    """token_ids (N, ?) takes its 12 from the reference's tokens, which it pairs with: no --input for it."""
    monkeypatch.chdir(ports)
    out, rows = _verify(tmp_path, "reference.py:tokens", "free-axis.keras", "--input", "tokens:Nx12:int64:0:100")
    assert out.returncode == 0, out.stdout + out.stderr
    row = rows["free-axis.keras"]
    assert row["verdict"] == "PASS", row["reason"]
    assert [(p["reference"], p["other"]) for p in row["pairing"]["inputs"]] == [("tokens", "token_ids")]


def test_an_input_option_naming_one_models_input_applies_to_that_model_only(ports, tmp_path, monkeypatch):
    """padding_mask is the port's alone: the reference factory (forward(tokens)) is not given it (it stopped
    with exit 2), and the port is fed the values it describes (all ones: no token masked, as the reference)."""
    monkeypatch.chdir(ports)
    out, rows = _verify(tmp_path, "reference.py:tokens", "dict.keras", "--input", "tokens:Nx12:int64:0:100",
                        "--input", "padding_mask:Nx12:int32:1:2")
    assert out.returncode == 0, out.stdout + out.stderr
    row = rows["dict.keras"]
    assert row["verdict"] == "PASS", row["reason"]
    assert {(p["reference"], p["other"]) for p in row["pairing"]["inputs"]} == {
        ("tokens", "token_ids"), ("padding_mask", "padding_mask")}
    # a mask of zeros and ones masks tokens the reference does not: the values described reach the port
    out, rows = _verify(tmp_path, "reference.py:tokens", "dict.keras", "--input", "tokens:Nx12:int64:0:100",
                        "--input", "padding_mask:Nx12:int32:0:2")
    assert out.returncode == 1 and rows["dict.keras"]["verdict"] == "FAIL", out.stdout + out.stderr


IN_MEMORY = r'''
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import keras
import rosetta
from reference import encoder

port = keras.saving.load_model(sys.argv[1] + "/dict.keras")
rng = np.random.default_rng(0)
arrays = {"token_ids": rng.integers(0, 100, (4, 12)), "padding_mask": rng.integers(0, 2, (4, 12)).astype("int32")}
found = {"verdict": rosetta.verify(encoder(), port, inputs=arrays).verdict}
try:
    rosetta.verify(encoder(), port, inputs={**arrays, "nope": arrays["token_ids"]})
except rosetta.BadInput as error:
    found["refused"] = str(error)
print(json.dumps(found))
'''


def test_the_api_reads_an_in_memory_dict_model_and_refuses_a_name_of_no_input(ports):
    """The same model in memory; an array named after no input of either model is refused, with their names,
    not paired by position."""
    done = subprocess.run([sys.executable, "-c", IN_MEMORY, str(ports)], capture_output=True, text=True,
                          timeout=600, cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["verdict"] == "PASS", found
    assert found.get("refused", "").startswith("inputs: 'nope' names no input of either model ("), found
    assert "takes token_ids, padding_mask" in found["refused"] and "takes padding_mask, token_ids" in found["refused"]
