"""Attack files against the trust boundary (rosetta.trust): each would touch a marker file if anything in it
ran, or read or write outside its folder; without --trust-code none of them may. Every refusal is one line
on stderr with exit status 2, and nothing is written."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from rosetta.cli import main
from tests.security import one_line_refusal, run

pytestmark = pytest.mark.filterwarnings("ignore")


# --- .pt2: text torch evaluates as Python ------------------------------------------------------------------

@pytest.fixture(scope="module")
def pt2(tmp_path_factory) -> Path:
    """A small torch.export archive with a symbolic batch (so it holds expr_str texts)."""
    import torch

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(4, 3)

        def forward(self, x):
            return self.linear(x).reshape(x.shape[0] * 3 // 3, 3)

    path = tmp_path_factory.mktemp("pt2") / "net.pt2"
    torch.manual_seed(0)
    program = torch.export.export(Net().eval(), (torch.randn(2, 4),),
                                  dynamic_shapes={"x": {0: torch.export.Dim("batch", min=1, max=1024)}})
    torch.export.save(program, str(path))
    return path


def rewrite_model_json(source: Path, target: Path, edit) -> Path:
    """A copy of a .pt2 whose models/*.json documents went through edit(document)."""
    with zipfile.ZipFile(source) as archive, zipfile.ZipFile(target, "w") as out:
        for info in archive.infolist():
            data = archive.read(info)
            if "/models/" in info.filename and info.filename.endswith(".json"):
                document = json.loads(data)
                edit(document)
                data = json.dumps(document).encode()
            out.writestr(info, data)
    return target


def inject_expression(marker: Path):
    def edit(document):
        text = json.dumps(document)
        payload = f"(__import__('os').system('touch {marker}') * 0 + s77)"
        symbol = "Symbol('s77', positive=True, integer=True)"
        document.clear()
        document.update(json.loads(text.replace(json.dumps(symbol), json.dumps(payload), 1)))
    return edit


def inject_guard(marker: Path):
    def edit(document):
        document["guards_code"] = [f"__import__('os').system('touch {marker}') == 0"]
    return edit


def test_pt2_that_passes_is_unchanged(pt2, tmp_path):
    code, err = run("convert", pt2, "--to", "onnx", "-o", tmp_path / "out")
    assert code == 0, err


@pytest.mark.parametrize("inject", [inject_expression, inject_guard], ids=["expr_str", "guards_code"])
def test_pt2_text_evaluated_by_torch_is_refused_without_trust(pt2, tmp_path, inject):
    marker = tmp_path / "marker"
    attack = rewrite_model_json(pt2, tmp_path / "attack.pt2", inject(marker))
    code, err = run("convert", attack, "--to", "onnx", "-o", tmp_path / "out")
    one_line_refusal(code, err, "attack.pt2 holds", "torch would evaluate as Python", "--trust-code")
    assert not marker.exists() and not (tmp_path / "out").exists()


def test_pt2_expression_runs_only_with_trust(pt2, tmp_path):
    """The attack is real: with --trust-code torch evaluates it (so the refusal above is what stops it)."""
    from rosetta.frameworks.torch import load_exported

    marker = tmp_path / "marker"
    attack = rewrite_model_json(pt2, tmp_path / "attack.pt2", inject_expression(marker))
    try:
        load_exported(attack, trust_code=True)
    except Exception:
        pass
    assert marker.exists()


def test_forged_torch_export_folder_is_refused(pt2, tmp_path):
    """A rosetta folder of format torch-export reaches torch's loader by another door: the same check."""
    marker, folder = tmp_path / "marker", tmp_path / "forged"
    code, err = run("convert", pt2, "--to", "onnx", "-o", tmp_path / "first", "--no-verify")
    assert code == 0, err
    folder.mkdir()
    rewrite_model_json(pt2, folder / "model.pt2", inject_expression(marker))
    from rosetta.manifest import Manifest, sha256_of

    manifest = Manifest(artifact="model.pt2", format="torch-export", source={}, converter={"name": "forged"},
                        inputs=[{"name": "x", "shape": [None, 4], "dtype": "float32"}],
                        outputs=[{"name": "output", "shape": [None, 3], "dtype": "float32"}],
                        sha256=sha256_of(folder / "model.pt2"))
    manifest.write(folder)
    code, err = run("convert", folder, "--to", "onnx", "-o", tmp_path / "out")
    one_line_refusal(code, err, "torch would evaluate as Python")
    assert not marker.exists()


@pytest.mark.parametrize("text, allowed", [
    ("Symbol('s77', positive=True, integer=True)", True),
    ("Mul(Integer(-3), Add(Symbol('s0', integer=True), Integer(1)))", True),
    ("Max(Integer(1), FloorDiv(Symbol('s1', integer=True), Integer(2)))", True),
    ("Symbol('s77', positive=True, integer=True).__class__", False),
    ("Symbol('__import__', integer=True)", False),
    ("Function('f')(Symbol('s0'))", False),
    ("Integer(2) ** Integer(64)", False),
    ("s77", False),
])
def test_expression_grammar(text, allowed):
    from rosetta.trust.pt2 import _problem

    assert (_problem("expr_str", text) == "") is allowed


@pytest.mark.parametrize("target, allowed", [
    ("torch.ops.aten.conv2d.default", True), ("_operator.mul", True), ("torch.sym_max", True),
    ("torch.ops.higher_order.cond", True), ("torch.ops.aten.from_file.default", False),
    ("torch.ops.aten.save.default", False), ("torch.serialization.os.system", False),
    ("torch.ops.debugprims.load_tensor.default", False), ("builtins.exec", False),
])
def test_node_targets_are_tensor_operators(target, allowed):
    from rosetta.trust.pt2 import _problem

    assert (_problem("target", target) == "") is allowed


@pytest.mark.parametrize("guard, allowed", [
    ("L['x'].size()[1] != 4", True), ("L['x'].size()[0] >= 2 and L['x'].stride()[0] == 4", True),
    ("L['x'].__class__", False), ("print(1)", False), ("L['x'].size()[0] == (lambda: 1)()", False),
])
def test_guard_grammar(guard, allowed):
    from rosetta.trust.pt2 import _problem

    assert (_problem("guards_code", guard) == "") is allowed


# --- manifests that point outside their folder ---------------------------------------------------------------

@pytest.fixture()
def onnx_folder(tmp_path) -> Path:
    """A rosetta folder of an ONNX model (what `rosetta convert X --to onnx` writes)."""
    source = tmp_path / "relu.onnx"
    save_relu(source)
    code, err = run("convert", source, "--input", "x:Nx4:float32", "--to", "onnx", "-o", tmp_path / "good",
                    "--no-verify")
    assert code == 0, err
    return tmp_path / "good" / "onnx"


def save_relu(path: Path, external: bool = False, location: str | None = None) -> None:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    weight = numpy_helper.from_array(np.arange(16, dtype=np.float32).reshape(4, 4) / 10, "w")
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Relu", ["h"], ["y"])],
                              "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])], [weight])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    if external:
        onnx.save(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                  location=location or f"{path.name}.data", size_threshold=0)
    else:
        onnx.save(model, str(path))


@pytest.mark.parametrize("artifact", ["../outside.onnx", "/ABSOLUTE/outside.onnx", "sub/../../outside.onnx"])
def test_manifest_paths_outside_the_folder_are_refused(onnx_folder, tmp_path, artifact):
    outside = tmp_path / "outside.onnx"
    shutil.copyfile(onnx_folder / "model.onnx", outside)
    manifest = json.loads((onnx_folder / "manifest.json").read_text())
    manifest["artifact"] = artifact.replace("/ABSOLUTE", str(tmp_path))
    (onnx_folder / "manifest.json").write_text(json.dumps(manifest))
    for target in ("torch", "onnxruntime"):
        code, err = run("convert", onnx_folder, "--to", target, "-o", tmp_path / f"out-{target}")
        one_line_refusal(code, err, "is not a plain relative path inside its folder")
        assert not (tmp_path / f"out-{target}").exists()


def test_symlink_out_of_the_folder_is_refused(onnx_folder, tmp_path):
    secret = tmp_path / "secret.onnx"
    shutil.move(onnx_folder / "model.onnx", secret)
    (onnx_folder / "model.onnx").symlink_to(secret)
    code, err = run("verify", onnx_folder, onnx_folder)
    one_line_refusal(code, err, "leads outside its folder")


def test_integrity_check_never_walks_outside(tmp_path):
    """A manifest naming `/` or `..` is refused before anything is hashed."""
    from rosetta.errors import RosettaError
    from rosetta.manifest import Manifest

    folder = tmp_path / "forged"
    folder.mkdir()
    for artifact in ("/", "..", "."):
        (folder / "manifest.json").write_text(json.dumps({
            "artifact": artifact, "format": "onnx", "source": {}, "converter": {}, "inputs": [], "outputs": [],
            "sha256": "0"}))
        with pytest.raises(RosettaError):
            Manifest.read(folder).check_integrity(folder)


# --- ONNX external data ---------------------------------------------------------------------------------------

def test_onnx_with_external_data_converts_and_passes(tmp_path):
    model = tmp_path / "model" / "ext.onnx"
    model.parent.mkdir()
    save_relu(model, external=True)
    assert (model.parent / "ext.onnx.data").is_file()
    out = tmp_path / "out"
    code, err = run("convert", model, "--to", "onnx,torch", "-o", out, "--json", tmp_path / "r.json")
    assert code == 0, err
    results = json.loads((tmp_path / "r.json").read_text())["results"]
    assert [(r["target"], r["verdict"]) for r in results] == [("onnx", "PASS"), ("torch", "PASS")]
    assert (out / "onnx" / "ext.onnx.data").is_file()
    code, err = run("verify", out / "onnx", out / "torch")  # the written folders pass their integrity check
    assert code == 0, err


@pytest.mark.parametrize("location", ["../secret.bin", "/ABSOLUTE/secret.bin"])
def test_external_data_outside_the_model_folder_is_refused(tmp_path, location):
    import onnx

    secret = tmp_path / "secret.bin"
    secret.write_bytes(np.arange(16, dtype=np.float32).tobytes())
    model = tmp_path / "model" / "ext.onnx"
    model.parent.mkdir()
    save_relu(model, external=True)
    proto = onnx.load(str(model), load_external_data=False)
    for entry in proto.graph.initializer[0].external_data:
        if entry.key == "location":
            entry.value = location.replace("/ABSOLUTE", str(tmp_path))
    onnx.save(proto, str(model))
    code, err = run("convert", model, "--to", "onnx", "-o", tmp_path / "out")
    one_line_refusal(code, err, "external data file")
    assert not (tmp_path / "out").exists()


# --- resources, outputs and small promises ------------------------------------------------------------------

def test_huge_input_shape_is_a_one_line_error_in_under_a_second(tmp_path):
    model = tmp_path / "relu.onnx"
    save_relu(model)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "rosetta.cli", "convert", str(model), "--input",
                           "x:Nx100000x100000:float32", "--to", "onnx", "-o", str(tmp_path / "out")],
                          capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    assert done.returncode == 2, done.stderr
    line, = done.stderr.strip().splitlines()
    assert "need 298.0 GiB" in line and "--max-memory" in line
    assert elapsed < 3.0, f"{elapsed:.2f} s"  # about 0.3 s here; generous for a loaded CI machine
    assert not (tmp_path / "out").exists()


def test_memory_limit_counts_outputs_and_is_configurable(tmp_path):
    model = tmp_path / "relu.onnx"
    save_relu(model)
    code, err = run("convert", model, "--to", "onnx", "-o", tmp_path / "out", "--batch", "1000",
                    "--max-memory", "0.00001")
    one_line_refusal(code, err, "at batch 1000", "--max-memory")
    code, err = run("convert", model, "--to", "onnx", "-o", tmp_path / "out", "--batch", "1000",
                    "--max-memory", "1")
    assert code == 0, err


def test_generated_inputs_are_drawn_in_their_dtype():
    from rosetta.models.inputs import generate_inputs
    from rosetta.models.registry import TensorSpec

    specs = [TensorSpec("x", (None, 3), "float32", -2, 2), TensorSpec("h", (None, 3), "float16"),
             TensorSpec("t", (None, 3), "int64", 0, 7), TensorSpec("b", (None, 3), "bool")]
    feeds = generate_inputs(specs, 50, 0)
    assert [feeds[s.name].dtype for s in specs] == [np.float32, np.float16, np.int64, np.bool_]
    assert -2 <= feeds["x"].min() < -1.5 and 1.5 < feeds["x"].max() < 2
    assert set(np.unique(feeds["t"])) <= set(range(7))
    np.testing.assert_array_equal(generate_inputs(specs, 50, 0)["x"], feeds["x"])


def test_unwritable_output_is_refused_before_any_work(tmp_path):
    model = tmp_path / "relu.onnx"
    save_relu(model)
    code, err = run("convert", model, "--to", "onnx", "-o", "/proc/rosetta-out")
    one_line_refusal(code, err, "cannot write to /proc/rosetta-out")


def test_output_folders_follow_the_umask(tmp_path):
    model = tmp_path / "relu.onnx"
    save_relu(model)
    previous = os.umask(0o022)
    try:
        code, err = run("convert", model, "--to", "onnx,torch", "-o", tmp_path / "out", "--no-verify")
    finally:
        os.umask(previous)
    assert code == 0, err
    folders = [tmp_path / "out", *(p for p in (tmp_path / "out").rglob("*") if p.is_dir())]
    assert {oct(p.stat().st_mode & 0o777) for p in folders} == {oct(0o755)}


def test_zero_element_output_is_not_a_pass():
    from rosetta.verify.compare import compare_outputs
    from rosetta.verify.tolerance import TolerancePolicy

    empty = {"y": np.zeros((8, 0), np.float32)}
    outputs, verdict, reason = compare_outputs(empty, empty, {"y": np.zeros((8, 0))}, TolerancePolicy())
    assert verdict == "FAIL" and "nothing was compared" in reason


def test_random_bytes_named_keras_say_what_they_are_not(tmp_path):
    for name in ("random.keras", "random.h5"):
        (tmp_path / name).write_bytes(os.urandom(2048))
        code, err = run("convert", tmp_path / name, "--to", "onnx", "-o", tmp_path / "out")
        one_line_refusal(code, err, f"{name} is not a Keras")


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "soon"])
def test_timeout_values_are_refused_in_one_wording(tmp_path, capsys, value):
    with pytest.raises(SystemExit) as stop:
        main(["convert", str(tmp_path / "m.onnx"), "--to", "onnx", "-o", str(tmp_path / "o"), "--timeout", value])
    assert stop.value.code == 2
    assert f"--timeout: expected a finite number > 0, got '{value}'" in capsys.readouterr().err


# --- cases that already held, kept under test -----------------------------------------------------------------

def test_pickle_named_onnx_is_not_unpickled(tmp_path):
    import pickle

    class Payload:
        def __reduce__(self):
            return (os.system, (f"touch {tmp_path / 'marker'}",))

    (tmp_path / "model.onnx").write_bytes(pickle.dumps(Payload()))
    code, err = run("convert", tmp_path / "model.onnx", "--to", "onnx", "-o", tmp_path / "out")
    one_line_refusal(code, err, "model.onnx is not a readable ONNX file")
    assert not (tmp_path / "marker").exists()


def test_object_arrays_in_inputs_npz_are_not_unpickled(tmp_path):
    class Payload:
        def __reduce__(self):
            return (os.system, (f"touch {tmp_path / 'marker'}",))

    model = tmp_path / "relu.onnx"
    save_relu(model)
    np.savez(tmp_path / "in.npz", x=np.array([Payload()], dtype=object))
    code, err = run("verify", model, model, "--inputs", tmp_path / "in.npz")
    assert code == 2 and not (tmp_path / "marker").exists(), err


def test_generated_code_folder_needs_trust(tmp_path):
    from rosetta.manifest import Manifest, sha256_of

    folder = tmp_path / "code"
    (folder / "model").mkdir(parents=True)
    (folder / "model" / "kit_pytorch.py").write_text(f"open({str(tmp_path / 'marker')!r}, 'w')\n")
    Manifest(artifact="model", format="torch-code", source={}, converter={"name": "forged", "code": "kit_pytorch.py"},
             inputs=[{"name": "x", "shape": [None, 4], "dtype": "float32"}],
             outputs=[{"name": "y", "shape": [None, 4], "dtype": "float32"}],
             sha256=sha256_of(folder / "model")).write(folder)
    model = tmp_path / "relu.onnx"
    save_relu(model)
    code, err = run("verify", model, folder, "--json", tmp_path / "r.json")
    assert code == 3, err  # an ERROR row: the folder was refused, not compared
    result, = json.loads((tmp_path / "r.json").read_text())["results"]
    assert result["verdict"] == "ERROR"
    assert "pass --trust-code" in result["reason"]
    assert not (tmp_path / "marker").exists()
