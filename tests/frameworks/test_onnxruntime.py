from __future__ import annotations

import numpy as np
import pytest

from rosetta.convert.targets import get_target
from rosetta.errors import RosettaError
from rosetta.frameworks import load_runner, runner_class
from rosetta.models import get_model
from rosetta.models.inputs import generate_inputs


@pytest.fixture(scope="module")
def cnn_runner(store):
    return load_runner("onnxruntime", store.get(get_model("cnn"), 0, get_target("onnxruntime").chain))


def test_runner_reports_framework_and_version():
    cls = runner_class("onnxruntime")
    assert cls.framework == "onnxruntime" and cls.version().count(".") >= 1


def test_wrong_input_shape_is_one_clear_line(cnn_runner):
    with pytest.raises(RosettaError, match=r"input 'images' has shape \(2, 3, 31, 32\); the model expects \(batch, 3, 32, 32\)"):
        cnn_runner.predict({"images": np.zeros((2, 3, 31, 32), np.float32)})


def test_wrong_input_dtype_is_one_clear_line(cnn_runner):
    with pytest.raises(RosettaError, match="input 'images' has dtype float64; the model expects float32"):
        cnn_runner.predict({"images": np.zeros((2, 3, 32, 32))})


def test_wrong_input_name_is_one_clear_line(cnn_runner):
    with pytest.raises(RosettaError, match=r"missing \['images'\], unexpected \['x'\]"):
        cnn_runner.predict({"x": np.zeros((2, 3, 32, 32), np.float32)})


def test_unknown_framework_is_a_clear_error():
    with pytest.raises(RosettaError, match="unknown framework 'caffe'"):
        runner_class("caffe")


def test_optimised_and_unoptimised_sessions_agree_on_a_correct_artifact(store):
    folder = store.get(get_model("cnn"), 0, get_target("onnxruntime").chain)
    feeds = generate_inputs(get_model("cnn").inputs, 4, 0)
    a = load_runner("onnxruntime", folder, optimization="all").predict(feeds)["logits"]
    b = load_runner("onnxruntime", folder, optimization="disabled").predict(feeds)["logits"]
    np.testing.assert_allclose(a, b, atol=1e-5)


def endless_loop(path):
    """An ONNX model whose Loop runs 1e12 iterations: hours in any runtime."""
    import onnx
    from onnx import TensorProto, helper

    body = helper.make_graph(
        [helper.make_node("Identity", ["condition_in"], ["condition_out"]), helper.make_node("Add", ["sum_in", "one"], ["sum_out"])],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("condition_in", TensorProto.BOOL, []),
                 helper.make_tensor_value_info("sum_in", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("condition_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("sum_out", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor("one", TensorProto.FLOAT, [], [1.0])])
    graph = helper.make_graph([helper.make_node("Loop", ["trips", "condition", "x"], ["y"], body=body)], "loop",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])],
                              [helper.make_tensor("trips", TensorProto.INT64, [], [10 ** 12]),
                               helper.make_tensor("condition", TensorProto.BOOL, [], [True])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), str(path))
    return path


def test_an_endless_model_is_stopped_by_the_timeout_in_process(tmp_path, monkeypatch):
    """ONNX Runtime runs in rosetta's own process for ONNX references and targets: --timeout still reaches it."""
    import time

    from rosetta.errors import WorkerDied
    from tests.test_cli import run_here

    monkeypatch.setenv("ROSETTA_WORKER_TIMEOUT", "2")
    start = time.monotonic()
    model = endless_loop(tmp_path / "loop.onnx")
    out = run_here("verify", model, model, "--timeout", "2", "--no-progress")
    assert out.returncode == 2 and "timed out after 2 s" in out.stderr and out.stderr.count("\n") == 1, out.stderr
    assert time.monotonic() - start < 30
    assert WorkerDied  # the timeout is a WorkerDied: a row's ERROR where a target hangs
