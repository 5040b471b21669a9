"""The tiny ONNX models the fault tests run (built once per test run, shared by the test processes)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.shared import shared_folder


def _save(path: Path, nodes, inputs, outputs, initializers=()) -> None:
    import onnx
    from onnx import helper

    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))


def _build(folder: Path) -> None:
    from onnx import TensorProto, helper, numpy_helper

    def tensor(name, shape):
        return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)

    batched, fixed = tensor("x", ["N", 4]), tensor("x", [3, 4])
    zero = numpy_helper.from_array(np.array(0, np.float32), "zero")
    rows = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(3, 4), "rows")  # rows that differ
    ignore_input = [helper.make_node("Mul", ["x", "zero"], ["t"]), helper.make_node("Add", ["t", "rows"], ["y"])]
    per_column = numpy_helper.from_array(np.arange(4, dtype=np.float32), "rows")  # the same row for every input
    _save(folder / "relu.onnx", [helper.make_node("Relu", ["x"], ["y"])], [batched], [tensor("y", ["N", 4])])
    _save(folder / "log.onnx", [helper.make_node("Log", ["x"], ["y"])], [batched], [tensor("y", ["N", 4])])
    _save(folder / "sum.onnx", [helper.make_node("ReduceSum", ["x"], ["y"], keepdims=0)], [batched], [tensor("y", [])])
    _save(folder / "constant-sum.onnx", ignore_input[:1] + [helper.make_node("Add", ["t", "rows"], ["u"]),
                                                            helper.make_node("ReduceSum", ["u"], ["y"], keepdims=0)],
          [batched], [tensor("y", [])], [zero, per_column])
    _save(folder / "constant.onnx", ignore_input, [batched], [tensor("y", ["N", 4])], [zero, per_column])
    _save(folder / "fixed-relu.onnx", [helper.make_node("Relu", ["x"], ["y"])], [fixed], [tensor("y", [3, 4])])
    _save(folder / "fixed-constant.onnx", ignore_input, [fixed], [tensor("y", [3, 4])], [zero, rows])
    cycle = helper.make_graph([helper.make_node("Relu", ["b"], ["a"]), helper.make_node("Relu", ["a"], ["b"]),
                               helper.make_node("Add", ["x", "a"], ["y"])], "g", [batched], [tensor("y", ["N", 4])])
    model = helper.make_model(cycle, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    (folder / "cycle.onnx").write_bytes(model.SerializeToString())
    (folder / "empty.onnx").write_bytes(b"")
    text = helper.make_tensor_value_info("s", TensorProto.STRING, ["N", 4])
    relu = helper.make_node("Relu", ["x"], ["y"])
    _save(folder / "string-in.onnx", [helper.make_node("Identity", ["s"], ["t"]), relu], [text, batched],
          [tensor("y", ["N", 4]), helper.make_tensor_value_info("t", TensorProto.STRING, ["N", 4])])
    _save(folder / "string-out.onnx", [helper.make_node("Cast", ["x"], ["s"], to=TensorProto.STRING), relu],
          [batched], [tensor("y", ["N", 4]), text])


@pytest.fixture(scope="session")
def models(tmp_path_factory) -> Path:
    """relu (batch axis), log (NaN below 0), sum (a 0-d output), constant-sum (a 0-d output that ignores its
    input), constant (rows that ignore the input), fixed-relu and fixed-constant (no batch axis; the constant's
    rows differ, so only a second batch shows it ignores its input), cycle (fails the checker), empty, string-in and
    string-out (a string input, a string output, beside a numeric one)."""
    return shared_folder(tmp_path_factory, "fault-models", _build)
