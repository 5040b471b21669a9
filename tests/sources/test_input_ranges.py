"""Integer inputs that index an embedding are drawn from all the table's rows (read from the model), not from
[0, 2): a model verified on 2 of its 1000 rows would leave 998 rows of a wrong conversion unseen."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from rosetta.models.inputs import generate_inputs
from rosetta.models.registry import TensorSpec
from rosetta.sources.model import open_model, with_embedding_range


def _embedding_onnx(path: Path, rows: int) -> Path:
    table = numpy_helper.from_array(np.random.default_rng(0).random((rows, 4), dtype=np.float32), "table")
    nodes = [helper.make_node("Cast", ["ids"], ["ids64"], to=TensorProto.INT64),
             helper.make_node("Gather", ["table", "ids64"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("ids", TensorProto.INT32, ["N", 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 6, 4])], [table])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_onnx_embedding_input_is_drawn_from_all_rows(tmp_path):
    model = open_model(str(_embedding_onnx(tmp_path / "m.onnx", 1000)), [], False, tmp_path)
    (ids,) = model.inputs
    assert ids.high == 1000
    drawn = generate_inputs(model.inputs, 64, 0)["ids"]
    assert drawn.max() < 1000 and len(np.unique(drawn)) > 200


def test_a_given_range_wins_over_the_model(tmp_path):
    given = TensorSpec("ids", (None, 6), "int32", 0, 10)
    model = open_model(str(_embedding_onnx(tmp_path / "m.onnx", 1000)), [given], False, tmp_path)
    assert model.inputs[0].high == 10


def test_torch_module_with_an_embedding():
    import torch

    module = torch.nn.Sequential(torch.nn.Embedding(500, 8), torch.nn.Flatten())
    assert with_embedding_range(TensorSpec("ids", (None, 6), "int64"), module).high == 500
    assert with_embedding_range(TensorSpec("x", (None, 6), "float32"), module).high is None


def test_keras_embedding_input_is_drawn_from_all_rows(tmp_path):
    import subprocess
    import sys

    code = ("import keras; i = keras.Input((6,), dtype='int32', name='ids'); "
            "m = keras.Model(i, keras.layers.Dense(2)(keras.layers.Flatten()(keras.layers.Embedding(300, 4)(i)))); "
            f"m.save(r'{tmp_path / 'm.keras'}')")
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, timeout=300,
                   env={"KERAS_BACKEND": "tensorflow", "TF_CPP_MIN_LOG_LEVEL": "3", "PATH": "/usr/bin:/bin"})
    model = open_model(str(tmp_path / "m.keras"), [], False, tmp_path)
    assert [(spec.name, spec.high) for spec in model.inputs] == [("ids", 300)]
