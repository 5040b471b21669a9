"""Ports written by hand (tests/verify/ports/make_ports.py), in three directions: PyTorch -> Keras (renamed
inputs, NHWC, int32 tokens), PyTorch -> MXNet Gluon, Keras -> PyTorch; a CNN with BatchNorm and recurrent text
models. Each correct port PASSes with no mapping flag; each classic porting bug FAILs, is located at its layer
(introduced there) and named by its class; an ambiguous pairing is refused with its candidates."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tests.shared import shared_folder
from tests.test_cli import run_here
from tests.verify.ports.checks import all_problems, verify_ports

HERE = Path(__file__).parent / "ports"


def _build(folder: Path) -> None:
    shutil.copyfile(HERE / "torch_nets.py", folder / "torch_nets.py")
    for part in ("keras", "gluon"):
        subprocess.run([sys.executable, str(HERE / "make_ports.py"), str(folder), part], check=True,
                       capture_output=True, timeout=600)


@pytest.fixture(scope="module")
def ports(tmp_path_factory) -> Path:
    return shared_folder(tmp_path_factory, "hand-ports", _build)


IMAGE, TOKENS = ["--input", "image:Nx3x16x16:float32"], ["--input", "tokens:Nx10:int64:0:100"]
# (reference, its --input, {port: (verdict, the reference layer it diverges at, what the diagnosis says)})
DIRECTIONS = {
    "pytorch-to-keras-cnn": ("torch_nets.py:cnn", IMAGE, {
        "keras-cnn.keras": ("PASS", "", ""),
        "keras-cnn-flatten.keras": ("FAIL", "fc", "flatten order: the port flattens NHWC"),
        "keras-cnn-padding.keras": ("FAIL", "conv2", "padding: 'same' at stride 2 pads (0,1), (0,1) here"),
        "keras-cnn-epsilon.keras": ("FAIL", "bn1", "epsilon 0.001 here, 1e-05 in the reference"),
        "keras-cnn-kernel.keras": ("FAIL", "conv1", "kernel transposed in H and W")}),
    "pytorch-to-keras-gru": ("torch_nets.py:gru", TOKENS, {
        "keras-gru.keras": ("PASS", "", ""),
        "keras-gru-gates.keras": ("FAIL", "rnn", "GRU gates r and z swapped"),
        "keras-gru-reset.keras": ("FAIL", "rnn", "reset_after=False here, True in the reference")}),
    "pytorch-to-keras-lstm": ("torch_nets.py:lstm", TOKENS, {
        "keras-lstm.keras": ("PASS", "", ""),
        "keras-lstm-bias.keras": ("FAIL", "rnn", "LSTM bias: the port's bias is PyTorch's bias_ih_l0 alone")}),
    "pytorch-to-gluon-cnn": ("torch_nets.py:cnn", IMAGE, {
        "gluon-cnn-symbol.json": ("PASS", "", ""),
        "gluon-cnn-epsilon-symbol.json": ("FAIL", "bn1", "epsilon 0.001 here, 1e-05 in the reference"),
        "gluon-cnn-kernel-symbol.json": ("FAIL", "conv1", "kernel transposed in H and W")}),
    "pytorch-to-gluon-gru": ("torch_nets.py:gru", TOKENS, {
        "gluon-gru-symbol.json": ("PASS", "", ""),
        "gluon-gru-gates-symbol.json": ("FAIL", "rnn", "GRU gates r and z swapped")}),
    "keras-to-pytorch-cnn": ("keras-reference.keras", IMAGE, {
        "torch_nets.py:torch_port": ("PASS", "", ""),
        "torch_nets.py:torch_port_flatten": ("FAIL", "fc", "flatten order: the port flattens NCHW"),
        "torch_nets.py:torch_port_epsilon": ("FAIL", "bn1", "epsilon 1e-05 here, 0.001 in the reference")}),
}


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_hand_ports_verify_and_every_bug_is_located_and_named(direction, ports, tmp_path, monkeypatch):
    monkeypatch.chdir(ports)  # the factories are named as a user in that folder names them
    reference, inputs, expected = DIRECTIONS[direction]
    found = verify_ports(reference, inputs, expected, tmp_path / "r.json", judge=hand_problems)
    assert not all_problems(found), all_problems(found)


def hand_problems(port: str, row: dict, expected: tuple) -> list[str]:
    """A hand port's row against (verdict, the reference layer it is located at, a phrase of the diagnosis): its
    layers line up one to one, so the first diverging pair is named and its bug introduced there."""
    verdict, layer, named = expected
    if row["verdict"] != verdict:
        return [f"{port}: verdict {row['verdict']}, expected {verdict} ({row.get('reason', '')})"]
    if verdict == "PASS":
        return [] if row["pairing"]["inputs"] else [f"{port}: the pairing it used is not said"]
    located, found = row.get("locate") or {}, []
    if located.get("verdict") != "located" or (located.get("first") or {}).get("node") != layer:
        found.append(f"{port}: located {located.get('verdict')} at {(located.get('first') or {}).get('node')}, "
                     f"expected {layer}")
    if named not in located.get("diagnosis", ""):
        found.append(f"{port}: diagnosis {located.get('diagnosis')!r} does not say {named!r}")
    if not port.startswith("gluon-gru") and located.get("origin") != "introduced":  # MXNet's fused RNN takes
        found.append(f"{port}: origin {located.get('origin')!r}, expected 'introduced'")  # another layout alone
    return found


def test_the_pairing_is_said(ports, tmp_path, monkeypatch):
    monkeypatch.chdir(ports)
    out = run_here("verify", "torch_nets.py:cnn", "keras-cnn.keras", "--input", "image:Nx3x16x16:float32",
                   "--trust-code", "--no-progress", "--json", tmp_path / "r.json")
    assert out.returncode == 0, out.stdout + out.stderr
    row = json.loads((tmp_path / "r.json").read_text())["results"][0]
    assert "image (N,3,16,16) -> input_1" not in row["pairing"]["description"]  # shapes are not in the summary
    assert "image -> input_1, transposed 0,2,3,1" in row["pairing"]["description"]


def _square(path: Path, name: str) -> Path:
    """Identity + Relu on an (N, 4, 4, 4) input: every layout fits its shape."""
    graph = helper.make_graph([helper.make_node("Relu", [name], ["y"])], "square",
                              [helper.make_tensor_value_info(name, TensorProto.FLOAT, ["N", 4, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4, 4, 4])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), str(path))
    return path


def test_an_ambiguous_pairing_is_refused_with_its_candidates_and_given_by_pair(tmp_path):
    reference, port = _square(tmp_path / "a.onnx", "x"), _square(tmp_path / "b.onnx", "renamed")
    out = run_here("verify", reference, port, "--no-progress")
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert "x -> renamed, transposed 0,2,3,1" in out.stderr and "--pair" in out.stderr
    out = run_here("verify", reference, port, "--pair", "x=renamed", "--no-progress")
    assert out.returncode == 0, out.stdout + out.stderr


def test_options_anywhere_on_the_line(ports, monkeypatch):
    """As people type them: an option between the two models."""
    monkeypatch.chdir(ports)
    out = run_here("verify", "torch_nets.py:cnn", "--trust-code", "--input", "image:Nx3x16x16:float32",
                   "keras-cnn.keras", "--no-progress")
    assert out.returncode == 0, out.stdout + out.stderr


def test_a_layer_map_gives_the_pairing(ports, tmp_path, monkeypatch):
    monkeypatch.chdir(ports)
    (tmp_path / "map.txt").write_text("# reference = port\nconv1 = conv1\nbn1 = bn1\n")
    out = run_here("verify", "torch_nets.py:cnn", "keras-cnn-epsilon.keras", "--input", "image:Nx3x16x16:float32",
                   "--trust-code", "--locate", "--layer-map", tmp_path / "map.txt", "--no-progress", "--json",
                   tmp_path / "r.json")
    located = json.loads((tmp_path / "r.json").read_text())["results"][0]["locate"]
    assert out.returncode == 1 and located["first"]["node"] == "bn1" and len(located["rows"]) == 2, located


UNREADABLE_LAYER = r'''
import json, os
os.environ["ROSETTA_WORKER"] = "tensorflow"  # Keras jobs run in this process, where the layer's class is registered
import keras, torch
import rosetta

@keras.saving.register_keras_serializable(package="tests")
class LibraryTanh(keras.layers.Layer):
    """A library's layer whose get_config raises once loaded (its bug)."""
    def __init__(self, loaded=False, **kwargs):
        super().__init__(**kwargs)
        self.loaded = loaded
    def call(self, x):
        return keras.ops.tanh(x)
    def get_config(self):
        if self.loaded:
            raise AttributeError("'LibraryTanh' object has no attribute 'units'")
        return {**super().get_config(), "loaded": True}

torch.manual_seed(0)
reference = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.Tanh(), torch.nn.Linear(5, 3)).eval()
w = [p.detach().numpy() for p in reference.parameters()]
x = keras.Input((6,), name="x")
port = keras.Model(x, keras.layers.Dense(3, name="out")(LibraryTanh(name="act")(keras.layers.Dense(5, name="hidden")(x))))
port.set_weights([w[0].T, w[1], w[2].T, w[3] * 1.01])  # the head's bias copied wrongly
report = rosetta.verify(reference, port, inputs=["x:Nx6:float32"], locate=True)
print(json.dumps({"verdict": report.verdict, "locate": report.rows[0].locate}, default=str))
'''


def test_a_layer_whose_settings_cannot_be_read_is_noted_and_the_rest_located(tmp_path):
    """In a process of its own (TensorFlow does not share the tests' process)."""
    script = tmp_path / "port.py"
    script.write_text(UNREADABLE_LAYER)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    locate = found["locate"]
    assert found["verdict"] == "FAIL", found
    assert locate["verdict"] == "located", locate.get("reason")
    assert (locate["first"]["node"], locate["first"]["source_layer"]) == ("2", "out"), locate["first"]
    assert len(locate["notes"]) == 1 and locate["notes"][0].endswith(
        ": layer act (LibraryTanh) read without its settings: get_config raised AttributeError: 'LibraryTanh' "
        "object has no attribute 'units'"), locate["notes"]
