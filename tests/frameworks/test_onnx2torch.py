from __future__ import annotations

import sys

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper

from rosetta.errors import RosettaError
from rosetta.frameworks.onnx2torch import build_module, import_onnx2torch


def test_onnx2torch_imports_without_torchvision_and_leaves_no_stand_in():
    import_onnx2torch()
    assert "torchvision" not in sys.modules or hasattr(sys.modules["torchvision"], "__file__")


def _gru_model(tmp_path, linear_before_reset: int):
    hidden, inputs = 4, 3
    rng = np.random.default_rng(0)
    weights = [helper.make_tensor(name, TensorProto.FLOAT, shape, rng.normal(size=shape).astype(np.float32).ravel())
               for name, shape in (("W", [1, 3 * hidden, inputs]), ("R", [1, 3 * hidden, hidden]), ("B", [1, 6 * hidden]))]
    node = helper.make_node("GRU", ["X", "W", "R", "B"], ["Y", "Y_h"], hidden_size=hidden,
                            linear_before_reset=linear_before_reset, name="gru")
    # Graph outputs through Identity: onnx2torch returns a multi-output node's whole tuple for a graph output.
    nodes = [node, helper.make_node("Identity", ["Y"], ["sequence"]), helper.make_node("Identity", ["Y_h"], ["last"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [5, 2, inputs])],
                              [helper.make_tensor_value_info("sequence", TensorProto.FLOAT, [5, 1, 2, hidden]),
                               helper.make_tensor_value_info("last", TensorProto.FLOAT, [1, 2, hidden])], weights)
    path = tmp_path / "gru.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=8), str(path))
    return path


def test_gru_converter_matches_onnxruntime(tmp_path):
    import onnxruntime as ort

    path = _gru_model(tmp_path, 1)
    x = np.random.default_rng(1).normal(size=(5, 2, 3)).astype(np.float32)
    expected = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"X": x})
    with torch.no_grad():
        actual = build_module(path)(torch.from_numpy(x))
    for got, want in zip(actual, expected):
        np.testing.assert_allclose(got.numpy(), want, atol=1e-6)


def test_gru_converter_refuses_linear_before_reset_0_with_the_reason(tmp_path):
    with pytest.raises(RosettaError, match="GRU node 'gru'.*linear_before_reset=0"):
        build_module(_gru_model(tmp_path, 0))
