"""A reference is checked before it is believed: no PASS from a floor that a wrong float64 run made.

ONNX models with ops ONNX's reference evaluator computes wrongly (LRN, opset-9 BatchNormalization, here built as
small models and as a real ResNet-50 exported at opset 9) FAIL with a 1 % weight change and PASS as themselves;
a float64 run that parts from the float32 one (a PyTorch leaf module, a Keras layer) is not used and the row
says where; a noise floor above FLOOR_CEILING is INCONCLUSIVE, never PASS."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tests.sources.test_user_models import files  # noqa: F401 - the users' model files, built once per run
from tests.test_cli import run_here

RNG = np.random.default_rng(0)


def _weights(*shape) -> np.ndarray:
    return (RNG.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))).astype(np.float32)


def _image_model(path: Path, middle: list, initializers: dict, opset: int) -> Path:
    """Conv -> `middle` (nodes reading "conv" and writing "mid") -> Relu -> Flatten -> Gemm, batch free."""
    nodes = [helper.make_node("Conv", ["image", "w1", "b1"], ["conv"], pads=[1, 1, 1, 1]), *middle,
             helper.make_node("Relu", ["mid"], ["relu"]), helper.make_node("Flatten", ["relu"], ["flat"]),
             helper.make_node("Gemm", ["flat", "w2", "b2"], ["logits"], transB=1)]
    weights = {"w1": _weights(8, 3, 3, 3), "b1": _weights(8) * 10, "w2": _weights(10, 8 * 6 * 6),
               "b2": _weights(10), **initializers}
    graph = helper.make_graph(nodes, "port", [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["N", 3, 6, 6])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])],
                              [numpy_helper.from_array(v, k) for k, v in weights.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=7)
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, str(path))
    return path


def lrn_model(path: Path) -> Path:
    return _image_model(path, [helper.make_node("LRN", ["conv"], ["mid"], size=5, alpha=1e-2, beta=0.75, bias=1.0)],
                        {}, 13)


def batchnorm9_model(path: Path) -> Path:
    statistics = {"scale": 1 + _weights(8), "shift": _weights(8), "mean": _weights(8),
                  "var": (1 + np.abs(_weights(8))).astype(np.float32)}
    node = helper.make_node("BatchNormalization", ["conv", "scale", "shift", "mean", "var"], ["mid"], epsilon=1e-5,
                            momentum=0.9)  # as Caffe2 and torch's exporter write it at opset 9
    return _image_model(path, [node], statistics, 9)


def changed(model_path: Path, out: Path, name: str, factor: float) -> Path:
    """A copy with the initializer `name` multiplied by `factor` (a port that got one tensor slightly wrong)."""
    from rosetta.frameworks.onnx_graph import edit_initializers

    model = onnx.load(str(model_path))
    edit_initializers(model, {name}, lambda _, value: value * np.float32(factor))
    onnx.save(model, str(out))
    return out


def verify(tmp_path: Path, *argv) -> tuple[int, list[dict], dict]:
    result = tmp_path / "r.json"
    out = run_here("verify", *map(str, argv), "--no-progress", "--json", str(result))
    assert out.returncode in (0, 1), out.stdout + out.stderr
    data = json.loads(result.read_text())
    return out.returncode, data["results"], data["tolerance"]


@pytest.mark.parametrize("build, weight", [(lrn_model, "w1"), (batchnorm9_model, "w1")],
                         ids=["LRN", "BatchNormalization-opset9"])
def test_a_one_percent_weight_change_fails_where_the_evaluator_is_wrong(build, weight, tmp_path):
    model = build(tmp_path / "model.onnx")
    wrong = changed(model, tmp_path / "wrong.onnx", weight, 1.01)
    copy = changed(model, tmp_path / "copy.onnx", weight, 1.0)
    code, rows, tolerance = verify(tmp_path, model, wrong, copy, "--batch", "2")
    assert code == 1 and [row["verdict"] for row in rows] == ["FAIL", "PASS"]
    assert tolerance["float64_reference"] and "calibrated" in tolerance["description"]
    check = rows[0]["reference"]["check"]
    assert check["trusted"] and "checked node by node against ONNX Runtime" in check["description"]
    assert rows[1]["outputs"][0]["error_ratio"] <= 2.0  # the copy sits at the floor, not under an inflated one


def test_a_real_opset_9_resnet50_with_one_weight_1_percent_off_fails(tmp_path):
    """ResNet-50 exported at opset 9 with its BatchNormalization nodes (as Caffe2-era model zoos hold it)."""
    out = run_here("convert", "--model", "resnet50", "--to", "onnx", "--opset", "9", "--training", "preserve",
                   "-o", tmp_path / "resnet50")
    assert out.returncode == 0, out.stdout + out.stderr
    model = tmp_path / "resnet50" / "model.onnx"
    assert "BatchNormalization" in {node.op_type for node in onnx.load(str(model)).graph.node}
    wrong = changed(model, tmp_path / "wrong.onnx", "layer1.0.conv2.weight", 1.01)
    code, rows, _ = verify(tmp_path, model, wrong, model, "--batch", "2")
    assert code == 1 and [row["verdict"] for row in rows] == ["FAIL", "PASS"]
    assert rows[0]["outputs"][0]["error_ratio"] > 100 and rows[0]["reference"]["check"]["trusted"]


DRIFTING_NET = '''
import torch


class DriftsInFloat64(torch.nn.Module):
    """Computes another function in float64: a float64 reference of it must not be believed."""

    def forward(self, x):
        return x * (1.01 if x.dtype == torch.float64 else 1.0)


def build():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 6), torch.nn.Tanh(), DriftsInFloat64(), torch.nn.Linear(6, 4))
'''


NO_FLOAT64_NET = DRIFTING_NET.replace("Computes another function in float64: a float64 reference of it must not "
                                      "be believed.", "Has no float64 kernel, as torch's grouped matmul.").replace(
    "return x * (1.01 if x.dtype == torch.float64 else 1.0)", '''if x.dtype == torch.float64:
            raise RuntimeError("Expected mat_a to be Float32, BFloat16 or Float16 matrix, got Double")
        return x''')


def _against_its_copies(source: str, tmp_path):
    """`rosetta verify` of the net in `source` (its `build`) against its ONNX export and a copy with one weight 1 %
    off: (exit code, rows, tolerance)."""
    (tmp_path / "net.py").write_text(source)
    out = run_here("convert", f"{tmp_path / 'net.py'}:build", "--trust-code", "--input", "x:Nx8:float32", "--to",
                   "onnx", "-o", tmp_path / "out", "--no-verify")
    assert out.returncode == 0, out.stdout + out.stderr
    onnx_copy = tmp_path / "out" / "onnx" / "model.onnx"
    wrong = changed(onnx_copy, tmp_path / "wrong.onnx", onnx.load(str(onnx_copy)).graph.initializer[0].name, 1.01)
    return verify(tmp_path, f"{tmp_path / 'net.py'}:build", onnx_copy, wrong, "--trust-code", "--input",
                  "x:Nx8:float32")


def test_a_pytorch_reference_that_cannot_run_in_float64_is_compared_by_the_float32_only_rule(tmp_path):
    """A layer without a float64 kernel (Hugging Face's AFMoE: torch's grouped matmul) made every row ERROR; the
    float32-only rule applies instead, saying why: a correct ONNX copy PASSes and one with a 1 % weight change
    FAILs under it."""
    code, rows, tolerance = _against_its_copies(NO_FLOAT64_NET, tmp_path)
    assert [row["verdict"] for row in rows] == ["PASS", "FAIL"] and code == 1
    assert not tolerance["float64_reference"] and "got Double" in tolerance["description"], tolerance


def test_a_pytorch_reference_whose_float64_run_parts_is_not_believed(tmp_path):
    """Its leaf `2` parts: the float32-only rule, said in the title and the row; a correct ONNX copy PASSes and
    one with a 1 % weight change FAILs under it."""
    code, rows, tolerance = _against_its_copies(DRIFTING_NET, tmp_path)
    assert [row["verdict"] for row in rows] == ["PASS", "FAIL"] and code == 1
    assert not tolerance["float64_reference"] and "leaf module 2 (DriftsInFloat64)" in tolerance["description"]
    assert "note: float64 reference not used" in rows[0]["reason"]
    assert rows[0]["reference"]["check"]["parted"]["node"] == "2"


def test_a_keras_reference_whose_float64_run_parts_is_not_believed(files, tmp_path):  # noqa: F811
    code, rows, tolerance = verify(tmp_path, files / "float64-drift.keras", files / "float64-drift.keras",
                                   "--trust-code")
    assert code == 0 and rows[0]["verdict"] == "PASS"
    assert not tolerance["float64_reference"] and "layer drifts_in_float64 (Lambda)" in tolerance["description"]


@pytest.mark.parametrize("path, unit", [("small.keras", "layer"), ("gluon-symbol.json", "node")])
def test_keras_and_mxnet_references_are_checked_piece_by_piece(files, tmp_path, path, unit):  # noqa: F811
    extra = ["--input", "data:Nx3x16x16:float32"] if path.endswith(".json") else []
    code, rows, tolerance = verify(tmp_path, files / path, files / path, *extra)
    check = rows[0]["reference"]["check"]
    assert code == 0 and check["trusted"] and check["nodes"] >= 4 and f"checked {unit} by {unit}" in check["description"]


def test_a_floor_above_the_ceiling_is_inconclusive_never_pass():
    from rosetta.verify.compare import compare_outputs
    from rosetta.verify.results import FAIL, INCONCLUSIVE
    from rosetta.verify.tolerance import FLOOR_CEILING, TolerancePolicy

    reference32 = {"y": RNG.standard_normal((4, 5)).astype(np.float32)}
    reference64 = {"y": reference32["y"] * (1 + 5 * FLOOR_CEILING)}  # a float64 run 5e-4 away: in doubt
    outputs, verdict, reason = compare_outputs(reference32, reference32, reference64, TolerancePolicy())
    assert verdict == INCONCLUSIVE and "the reference is in doubt" in reason and outputs[0].reference_doubt
    _, verdict, _ = compare_outputs({"y": reference32["y"] * 1.5}, reference32, reference64, TolerancePolicy())
    assert verdict == FAIL  # wrong even against the inflated floor
    # a float64 run checked piece by piece, every piece believed: that floor is float32's own (a deep network's)
    checked = TolerancePolicy(float64_checked=True)
    outputs, verdict, _ = compare_outputs(reference32, reference32, reference64, checked)
    assert verdict == "PASS" and not outputs[0].reference_doubt
    _, verdict, _ = compare_outputs({"y": reference32["y"] * 1.5}, reference32, reference64, checked)
    assert verdict == FAIL


def test_only_a_check_of_every_piece_lifts_the_ceiling():
    from rosetta.frameworks.reference_check import fully_checked

    whole = {"trusted": True, "nodes": 272, "unchecked": 0, "parted": None}
    assert fully_checked(whole)
    assert not fully_checked({**whole, "unchecked": 3})  # a piece no float32 value could be compared with
    assert not fully_checked({**whole, "trusted": False, "parted": {"node": "lrn"}})
    assert not fully_checked({**whole, "nodes": 0}) and not fully_checked(None) and not fully_checked({})


def test_the_row_says_which_reference_and_why_when_the_float64_run_is_not_used(tmp_path):
    from rosetta.frameworks.reference_check import NodeCheck, ReferenceCheck
    from rosetta.verify.artifacts import reference_outputs

    class Parting:
        label, format, module, has_float64 = "m.onnx", "onnx", None, True

        def predict(self, feeds, precision, threads):
            return {"y": np.ones((2, 3), np.float32)}

        def make_runner(self, precision="float32", threads=0):
            return type("Runner", (), {"predict": lambda _, feeds: self.predict(feeds, precision, threads)})()

        def predict_float64(self, feeds, threads):
            check = ReferenceCheck("an evaluator", "a runtime", nodes=3,
                                   parted=NodeCheck("/lrn/LRN", "LRN", 996.0, "parted"))
            return {"y": np.ones((2, 3))}, check.to_json()

    reference = reference_outputs(Parting(), {"x": np.zeros((2, 3), np.float32)})
    policy = reference.policy(__import__("rosetta.verify.tolerance", fromlist=["TolerancePolicy"]).TolerancePolicy(),
                              False)
    assert reference.float64 is None and not policy.float64_reference and policy.multiple == 40
    assert "node /lrn/LRN (LRN): 996 float32 ulps" in policy.describe()


CANCELLING_NET = '''
import torch


class Cancelling(torch.nn.Module):
    """0.1 + y as (1e5 y + 0.1) - 1e5 y + y, in the forward's own code: float32 rounds 1e5 y + 0.1 to its ulp,
    8e-3, float64 does not, so the float32 run is about 1e-3 of its scale from the float64 one (past the
    ceiling, as a correct deep net's can be)."""

    def __init__(self, drift=1.0):
        super().__init__()
        self.fc, self.drift = torch.nn.Linear(4, 3), drift

    def forward(self, x):
        y = self.fc(x)
        return ((y * 1e5 + 0.1) - y * 1e5 + y) * (self.drift if x.dtype == torch.float64 else 1.0)


def build():
    torch.manual_seed(0)
    return Cancelling()


def drifting():
    """The same, its float64 run another function (5e-2 larger) where no leaf module sees it."""
    torch.manual_seed(0)
    return Cancelling(1.0 + 5e-2)
'''


@pytest.mark.parametrize("factory, verdict", [("build", "PASS"), ("drifting", "INCONCLUSIVE")])
def test_a_floor_above_the_ceiling_is_lifted_only_where_the_onnx_export_agrees_in_float64(factory, verdict, tmp_path):
    """A PyTorch reference's leaf modules do not cover its forward's own code, so a floor above FLOOR_CEILING
    left the row INCONCLUSIVE. Along the ONNX route its export, checked node by node in float64, vouches for the
    float64 run where the two agree (the correct net: PASS, saying so); a float64 run that computes another
    function does not agree, and the row stays INCONCLUSIVE with the reason."""
    (tmp_path / "cancel.py").write_text(CANCELLING_NET)
    out = run_here("convert", f"{tmp_path / 'cancel.py'}:{factory}", "--trust-code", "--input", "x:Nx4:float32",
                   "--to", "onnx", "-o", tmp_path / "out", "--no-progress", "--json", tmp_path / "r.json")
    row = json.loads((tmp_path / "r.json").read_text())["results"][0]
    check = row["reference"]["check"]
    assert row["verdict"] == verdict, (row["reason"], check)
    if verdict == "PASS":
        assert out.returncode == 0 and check["uncovered"] == "" and "corroborated" in check["description"]
        assert row["outputs"][0]["noise_floor_ulps"] > 1e3  # the float64 run's floor, past the ceiling, believed
    else:
        assert "reference is in doubt" in row["reason"] and check["uncovered"]
        assert "x the one its ONNX export gives" in check["corroboration"], check["corroboration"]


@pytest.mark.parametrize("factory, verdict", [("build", "PASS"), ("drifting", "INCONCLUSIVE")])
def test_verify_of_a_pytorch_reference_lifts_the_ceiling_only_where_its_export_agrees(factory, verdict, tmp_path):
    """`rosetta verify` of a PyTorch reference against another model (here its own ONNX export, from `rosetta
    convert`): the reference's floor is vouched for by its export as along the ONNX route, or not."""
    (tmp_path / "cancel.py").write_text(CANCELLING_NET)
    reference = f"{tmp_path / 'cancel.py'}:{factory}"
    run_here("convert", reference, "--trust-code", "--input", "x:Nx4:float32", "--to", "onnx", "-o", tmp_path / "out",
             "--no-verify", "--no-progress")
    out = run_here("verify", reference, tmp_path / "out" / "onnx", "--trust-code", "--input", "x:Nx4:float32",
                   "--no-progress", "--json", tmp_path / "r.json")
    row = json.loads((tmp_path / "r.json").read_text())["results"][0]
    check = row["reference"]["check"]
    assert row["verdict"] == verdict, (out.stdout, row["reason"], check)
    if verdict == "PASS":
        assert "corroborated" in check["description"] and check["uncovered"] == ""
    else:
        assert "x the one its ONNX export gives" in check["corroboration"], check["corroboration"]
