"""A conversion whose outputs do not depend on the input (seeded weights whose activations die or saturate) is
INCONCLUSIVE by its outputs: a conversion that ignored its input would match too. Along the ONNX route the
conversion shares its export's tensors, so it is decided on them (issue 45 item 5): FAIL where a tensor the
converter computed wrongly is located, PASS where every tensor read passes and some depend on the input, and
INCONCLUSIVE still, saying why, where the intermediates cannot tell."""

from __future__ import annotations

import json
import math

import numpy as np
import onnx

from rosetta.verify.locate import DECIDED_ON_INTERMEDIATES, LocateReport, NodeRow, intermediates_verdict


def _row(index: int, passed: bool | None, varies: bool | None, reason: str = "") -> NodeRow:
    return NodeRow(index, f"n{index}", "Relu", f"t{index}", "", passed=passed, varies=varies, reason=reason,
                   error_ratio=0.5 if passed else math.nan)


def test_every_tensor_passing_where_some_depend_on_the_input_is_a_pass_naming_the_deepest():
    report = LocateReport("torch", "not reproduced", rows=[_row(0, True, True), _row(1, True, True),
                                                          _row(2, True, False), _row(3, None, None, "not read")])
    verdict, reason = intermediates_verdict(report)
    assert verdict == "PASS" and reason.startswith(DECIDED_ON_INTERMEDIATES)
    assert "3 of the 4 tensors" in reason and "2 of them depend on the input (the deepest: n1 (Relu))" in reason


def test_a_located_node_is_a_fail_saying_where():
    first = NodeRow(2, "/conv/Conv", "Conv", "c", "conv", passed=False, error_ratio=900.0)
    verdict, reason = intermediates_verdict(LocateReport("keras", "located", first=first, origin="introduced"))
    assert verdict == "FAIL" and "first diverges at node /conv/Conv (Conv)" in reason


def test_intermediates_that_do_not_depend_on_the_input_either_decide_nothing():
    verdict, reason = intermediates_verdict(LocateReport("torch", "not reproduced",
                                                         rows=[_row(0, True, False), _row(1, True, False)]))
    assert verdict == "INCONCLUSIVE" and "none of its tensors measured depends on the input either" in reason
    verdict, reason = intermediates_verdict(LocateReport("torch", "not reproduced",
                                                         rows=[_row(0, None, None, "it did not convert")]))
    assert verdict == "INCONCLUSIVE" and "it did not convert" in reason
    verdict, reason = intermediates_verdict(LocateReport("torch", "not located", reason="the whole graph did not run"))
    assert verdict == "INCONCLUSIVE" and reason.endswith("the whole graph did not run")


def _dead_output_graph(path):
    """x -> Conv -> Relu -> CumSum(reverse) -> y = Relu(-1 - s): y is 0 for every input (s >= 0), so the outputs
    decide nothing, while the CumSum, which onnx2tf computes wrongly in reverse (docs/conformance.md), depends on it."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("CumSum", ["r", "axis"], ["s"], reverse=1), helper.make_node("Sub", ["minus_one", "s"], ["d"]),
             helper.make_node("Relu", ["d"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4, 8, 8])],
                              [numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w"),
                               numpy_helper.from_array(np.array(2, np.int64), "axis"),
                               numpy_helper.from_array(np.array(-1.0, np.float32), "minus_one")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), str(path))


def test_a_dead_output_is_decided_on_the_intermediates_fail_where_the_converter_is_wrong(tmp_path, monkeypatch):
    """onnx2tf's reversed CumSum (its way in alone) FAILs, located at the CumSum; onnx2torch's PASSes, saying how
    many tensors that depend on the input agree; both outputs alone were INCONCLUSIVE ("all zeros")."""
    import rosetta.verify.ways_in as ways_in
    from tests.test_cli import run_here

    _dead_output_graph(tmp_path / "dead.onnx")
    monkeypatch.setattr(ways_in, "TRIED_AGAIN", ())  # onnx2tf's way only
    out = run_here("convert", tmp_path / "dead.onnx", "--to", "tensorflow,torch", "-o", tmp_path / "out",
                   "--no-progress", "--json", tmp_path / "r.json")
    rows = {row["target"]: row for row in json.loads((tmp_path / "r.json").read_text())["results"]}
    tensorflow, torch = rows["tensorflow"], rows["torch"]
    assert out.returncode == 1 and tensorflow["verdict"] == "FAIL", out.stdout + out.stderr
    assert tensorflow["reason"].startswith(DECIDED_ON_INTERMEDIATES) and "all zeros" in tensorflow["reason"]
    assert tensorflow["locate"]["first"]["op"] == "CumSum", tensorflow["locate"]
    assert torch["verdict"] == "PASS", torch["reason"]
    assert torch["reason"].startswith(DECIDED_ON_INTERMEDIATES) and "depend on the input" in torch["reason"]
    assert "decided on its intermediates" in out.stdout
