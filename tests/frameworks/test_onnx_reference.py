"""The float64 reference of an ONNX model is checked before it is believed: rosetta's own float64 ops agree with
the spec where ONNX's reference evaluator does not, every node is checked against ONNX Runtime in float32, a
node where nothing agrees parts the references, and the node suite's findings stay as measured."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from rosetta.frameworks.onnx_reference import checked_float64_run, strided_max_pool
from rosetta.frameworks.reference_check import LOCAL_ULPS_BOUND, local_ulps

DOCS = Path(__file__).resolve().parents[2] / "docs"
RNG = np.random.default_rng(0)


def one_node(op: str, x: np.ndarray, opset: int, initializers: dict | None = None, outputs: int = 1, **attributes):
    initializers = initializers or {}
    node = helper.make_node(op, ["x", *initializers], [f"y{n}" for n in range(outputs)], **attributes)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
                              [helper.make_tensor_value_info(f"y{n}", TensorProto.FLOAT, None) for n in range(outputs)],
                              [numpy_helper.from_array(v, k) for k, v in initializers.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def float64_of(model, x: np.ndarray, replace: bool = True):
    outputs, check = checked_float64_run(model, {"x": x}, replace=replace)
    return outputs["y0"], check


# ---- rosetta's float64 ops, each against numpy written from the spec -----------------------------------------
def test_lrn_sums_squares_over_channels_whatever_the_batch():
    x = RNG.standard_normal((2, 8, 5, 5)).astype(np.float32) * 3  # batch 2, 8 channels: the evaluator's blind spot
    size, alpha, beta, bias = 5, 1e-4, 0.75, 1.0
    square = x.astype(np.float64) ** 2
    window = np.stack([square[:, max(0, c - 2): c + 3].sum(1) for c in range(8)], axis=1)
    spec = x / (bias + alpha / size * window) ** beta
    value, check = float64_of(one_node("LRN", x, 13, size=size, alpha=alpha, beta=beta, bias=bias), x)
    assert np.abs(value - spec).max() < 1e-9 and check.trusted
    wrong, evaluator = float64_of(one_node("LRN", x, 13, size=size, alpha=alpha, beta=beta, bias=bias), x, replace=False)
    assert np.abs(wrong - spec).max() > 1e-3 and not evaluator.trusted  # the fault this replaces, still seen


@pytest.mark.parametrize("opset, attributes", [(9, {"momentum": 0.9}), (9, {}), (14, {"momentum": 0.1}), (15, {})])
def test_batch_normalization_in_inference_uses_the_running_statistics(opset, attributes):
    x = RNG.standard_normal((3, 4, 5, 5)).astype(np.float32) * 2
    scale, bias, mean = (RNG.standard_normal(4).astype(np.float32) for _ in range(3))
    var = (np.abs(RNG.standard_normal(4)) + 0.5).astype(np.float32)
    shape = (1, 4, 1, 1)
    x, scale, bias, mean, var = (a.astype(np.float64) for a in (x, scale, bias, mean, var))  # the spec in float64
    spec = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + 1e-5) * scale.reshape(shape) + bias.reshape(shape)
    weights = {"s": scale, "b": bias, "m": mean, "v": var}
    model = one_node("BatchNormalization", x.astype(np.float32), opset,
                     {k: v.astype(np.float32) for k, v in weights.items()}, epsilon=1e-5, **attributes)
    value, check = float64_of(model, x.astype(np.float32))
    assert np.abs(value - spec).max() < 1e-9 and check.trusted


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax", "Hardmax"])
@pytest.mark.parametrize("opset", [11, 13])
def test_softmax_family_flattens_from_its_axis_before_opset_13(op, opset):
    x = RNG.standard_normal((2, 3, 4)).astype(np.float64)
    flat = x.reshape(2, 12) if opset < 13 else x  # default axis: 1 before opset 13 (2-D from there), -1 after
    shifted = flat - flat.max(-1, keepdims=True)
    expected = {"Softmax": np.exp(shifted) / np.exp(shifted).sum(-1, keepdims=True),
                "LogSoftmax": shifted - np.log(np.exp(shifted).sum(-1, keepdims=True)),
                "Hardmax": (flat == flat.max(-1, keepdims=True)).astype(np.float64)}[op].reshape(x.shape)
    value, check = float64_of(one_node(op, x.astype(np.float32), opset), x.astype(np.float32))
    assert np.abs(value - expected).max() < 1e-6 and check.trusted


@pytest.mark.parametrize("p", [1, 2])
def test_lp_normalization_takes_absolute_values(p):
    x = RNG.standard_normal((3, 5)).astype(np.float32)
    expected = x / (np.abs(x.astype(np.float64)) ** p).sum(-1, keepdims=True) ** (1 / p)
    value, check = float64_of(one_node("LpNormalization", x, 13, axis=-1, p=p), x)
    assert np.abs(value - expected).max() < 1e-12 and check.trusted


@pytest.mark.parametrize("kernel, strides, pads, dilations", [
    ([3, 3], [2, 2], [1, 1, 1, 1], None), ([2, 2], None, None, None), ([3, 2], [1, 2], [0, 1, 2, 0], [2, 1]),
    ([3], [2], [1, 1], None), ([2, 2, 2], [1, 2, 1], [0, 0, 0, 1, 1, 1], None)])
def test_the_strided_max_pool_is_onnx_runtimes(kernel, strides, pads, dilations):
    import onnxruntime as ort

    x = RNG.standard_normal((2, 3, *[7] * len(kernel))).astype(np.float32)
    attributes = {k: v for k, v in {"kernel_shape": kernel, "strides": strides, "pads": pads,
                                    "dilations": dilations}.items() if v is not None}
    model = one_node("MaxPool", x, 13, **attributes)
    expected = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_array_equal(strided_max_pool(x, kernel, strides, pads, dilations), expected)


# ---- the check -------------------------------------------------------------------------------------------------
def test_local_ulps_measures_at_the_float64_values_scale():
    wide = np.array([1.0, -4.0, 0.5])
    assert local_ulps(wide, wide.astype(np.float32)) == 0.0
    assert math.isclose(local_ulps(wide, wide + 4 * np.finfo(np.float32).eps), 1.0)
    assert local_ulps(np.array([np.inf, 1.0]), np.array([1.0, 1.0], np.float32)) == math.inf
    assert local_ulps(np.array([np.nan, 1.0]), np.array([np.nan, 1.0], np.float32)) == 0.0


def test_a_node_with_omitted_optional_inputs_is_checked():
    """A Resize to sizes leaves its roi and scales out (""): the check compares it as any other node; it once
    counted such a node unchecked, and torchvision's DeepLabV3 export could not vouch for its PyTorch reference."""
    x = RNG.standard_normal((2, 3, 4, 4)).astype(np.float32)
    node = helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode="linear")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(np.array([2, 3, 8, 8], np.int64), "sizes")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    _, check = checked_float64_run(model, {"x": x})
    assert check.unchecked == 0 and check.nodes == 1 and check.worst.op == "Resize"


def test_a_node_where_no_float64_implementation_agrees_parts_the_references():
    """The evaluator's own LRN on a batch smaller than the channels: ONNX Runtime has no double LRN to stand in,
    so the references part there, and the check names the node and op."""
    x = RNG.standard_normal((2, 8, 4, 4)).astype(np.float32)
    _, check = float64_of(one_node("LRN", x, 13, size=5), x, replace=False)
    assert check.parted is not None and check.parted.op == "LRN" and check.parted.ulps > 10 * LOCAL_ULPS_BOUND
    assert "part at node" in check.describe() and "(LRN)" in check.describe()


def test_onnx_runtimes_double_kernel_stands_in_for_a_wrong_evaluator_op(monkeypatch):
    """A node the evaluator computes wrongly but ONNX Runtime has a double kernel of: the kernel computes it."""
    from onnx.reference.ops.op_relu import Relu

    class WrongRelu(Relu):
        op_domain = ""

        def _run(self, x):
            return (np.maximum(x, 0) * 1.01,)

    WrongRelu.__name__ = "Relu"
    import rosetta.frameworks.onnx_reference as onnx_reference

    spec_ops = onnx_reference.spec_ops
    monkeypatch.setattr(onnx_reference, "spec_ops", lambda: spec_ops() + [WrongRelu])
    x = RNG.standard_normal((2, 6)).astype(np.float32)
    value, check = float64_of(one_node("Relu", x, 13), x)
    assert check.trusted and [s.by for s in check.stand_ins] == ["onnxruntime-double"]
    np.testing.assert_allclose(value, np.maximum(x, 0), rtol=1e-12)


def test_the_check_runs_in_a_worker_and_gives_its_figures(tmp_path):
    from rosetta.frameworks.onnx_reference import float64_outputs

    x = RNG.standard_normal((2, 8, 4, 4)).astype(np.float32)
    onnx.save(one_node("LRN", x, 13, size=5), str(tmp_path / "lrn.onnx"))
    outputs, check = float64_outputs(tmp_path / "lrn.onnx", {"x": x})
    assert outputs["y0"].dtype == np.float64 and check["trusted"] and check["nodes"] == 1
    assert "checked node by node" in check["description"]


# ---- the node suite: what the evaluator gets wrong, as measured ------------------------------------------------
SUITE_OPS = ["LRN", "BatchNormalization", "Softmax", "LogSoftmax", "Hardmax", "LpNormalization", "Gemm", "Relu"]


def test_the_node_suites_findings_are_the_measured_ones():
    """A fixed subset of scripts/check_onnx_evaluator.py (its full run is docs/onnx-evaluator.json): every
    case's finding as measured, so an onnx upgrade that fixes or breaks an evaluator op is seen; every departure
    is fixed by rosetta's ops; the bound sits 2x above every agreeing case and 2x under every departure."""
    from rosetta.verify.evaluator_check import AGREES, evaluator_cases, run_evaluator_case

    summary = json.loads((DOCS / "onnx-evaluator.json").read_text())
    measured = {row["case"]: row for row in summary["others"]}
    rows = [run_evaluator_case(*case) for case in evaluator_cases(SUITE_OPS)]
    assert len(rows) > 60
    changed = [(row["case"], measured.get(row["case"], {}).get("finding", AGREES), row["finding"]) for row in rows
               if measured.get(row["case"], {}).get("finding", AGREES) != row["finding"]]
    assert not changed, f"(case, measured, now): {changed}"
    assert summary["agreeing"]["largest_ulps"] * 2 <= LOCAL_ULPS_BOUND
    departures = [row for row in measured.values() if row["finding"].startswith("evaluator")]
    assert departures
    for row in departures:
        assert row["rosetta_ulps"] * 2 <= LOCAL_ULPS_BOUND, row  # rosetta's op fixes it
        assert row["evaluator_ulps"] is None or not row["evaluator_ulps"] < 2 * LOCAL_ULPS_BOUND, row
