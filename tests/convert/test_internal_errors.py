"""An exception raised inside rosetta's own code while converting is a bug: an ERROR row naming its type and
rosetta's frame, never a converter's CANNOT (issue 45 item 2). A converter's refusal stays CANNOT with its
reason. Decided by where the exception was raised (convert.runs.internal_error), not by its message."""

from __future__ import annotations

import json

import numpy as np
import pytest

import rosetta.convert.onnx.dynamic_batch as dynamic_batch
from rosetta.convert.runs import internal_error
from rosetta.errors import CannotConvert, RosettaError


def _seeded_bug(module, name: str, error: str = "IndexError('index 0 is out of bounds for axis 0 with size 0')"):
    """A function whose code lives in `module`'s own file (as a bug in it would), raising `error` when called."""
    source = f"def {name}(*args, **kwargs):\n    raise {error}\n"
    namespace: dict = {"RosettaError": RosettaError}
    exec(compile(source, module.__file__, "exec"), namespace)  # noqa: S102 - the seeded bug's frame is rosetta's file
    return namespace[name]


def _raised(function, *args):
    try:
        function(*args)
    except Exception as error:  # noqa: BLE001 - the exception itself is what the test reads
        return error
    raise AssertionError("nothing raised")


def test_an_exception_raised_in_rosettas_code_names_its_type_and_frame():
    bug = _raised(_seeded_bug(dynamic_batch, "constant_reshape_targets"))
    assert internal_error(bug) == ("IndexError at rosetta/convert/onnx/dynamic_batch.py:2: "
                                   "index 0 is out of bounds for axis 0 with size 0")
    assert internal_error(_raised(lambda: [][0])) == ""  # raised here, in a test: not rosetta's frame
    assert internal_error(_raised(np.zeros(0).__getitem__, 0)) == ""  # numpy called from here
    assert internal_error(_raised(_seeded_bug(dynamic_batch, "f", "RosettaError('refused')"))) == ""  # its message
    assert internal_error(_raised(_seeded_bug(dynamic_batch, "f", "NotImplementedError('no LRN')"))) == ""
    assert internal_error(_raised(_seeded_bug(dynamic_batch, "f", "MemoryError()"))) == ""  # the machine's fault


def test_an_error_from_a_worker_is_read_from_its_traceback(tmp_path, monkeypatch):
    """A job raising in rosetta's code in a worker crosses the pipe as a RosettaError whose detail is the worker's
    traceback: read there. convert_job given no argument raises KeyError in rosetta/convert/store.py."""
    from rosetta.execution import run_job
    from rosetta.execution.worker import _run_one

    reply = _run_one({"entry": "rosetta.convert.store:convert_job", "argument": {}, "out": str(tmp_path / "o.npz")})
    assert reply["ok"] is False and reply["kind"] == ""
    (tmp_path / "reply.json").write_text(json.dumps({**reply, "retire": ""}) + "\n")
    worker = tmp_path / "worker"  # a worker that answers as that one did, to the pool across the pipe
    worker.write_text(f"#!/bin/sh\nread line\ncat {tmp_path / 'reply.json'}\n")
    worker.chmod(0o755)
    monkeypatch.setattr("sys.executable", str(worker))
    with pytest.raises(RosettaError) as raised:
        run_job("rosetta.convert.store:convert_job", {}, "internal-errors-worker", "conversion onnx -> keras")
    found = internal_error(raised.value)
    assert found.startswith("KeyError at rosetta/convert/store.py:") and found.endswith(": 'source'"), found
    refused = CannotConvert("conversion onnx -> keras failed: no converter for LRN")
    refused.detail = 'Traceback (most recent call last):\n  File "x.py", line 1\nrosetta.errors.CannotConvert: no LRN\n'
    assert internal_error(refused) == ""


def _one_op_onnx(op: str, **attributes):
    from onnx import TensorProto, helper

    node = helper.make_node(op, ["x"], ["y"], **attributes)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8  # one every runtime here reads
    return model


def _rows(conversion) -> dict:
    return {row.target: (row.verdict, row.reason) for row in conversion.report}


def test_a_seeded_rosetta_bug_in_a_conversion_is_an_error_with_its_frame(monkeypatch):
    import torch

    import rosetta

    monkeypatch.setattr(dynamic_batch, "constant_reshape_targets",
                        _seeded_bug(dynamic_batch, "constant_reshape_targets"))
    torch.manual_seed(0)
    conversion = rosetta.convert(torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()), "onnx",
                                 inputs=["x:Nx4:float32"], batch=2)
    verdict, reason = _rows(conversion)["onnx"]
    assert verdict == "ERROR", reason
    assert reason == ("conversion failed: rosetta bug: IndexError at rosetta/convert/onnx/dynamic_batch.py:2: "
                      "index 0 is out of bounds for axis 0 with size 0")


def test_a_converters_refusal_stays_cannot_with_its_reason():
    """onnx2torch has no converter for Shrink (ONNX Runtime runs it): its NotImplementedError, raised in
    onnx2torch, is the converter saying no."""
    import rosetta

    conversion = rosetta.convert(_one_op_onnx("Shrink", lambd=0.5), "onnx,torch", batch=2)
    rows = _rows(conversion)
    assert rows["onnx"][0] == "PASS", rows
    assert rows["torch"][0] == "CANNOT" and "Shrink" in rows["torch"][1] and "rosetta bug" not in rows["torch"][1]


def test_a_reference_models_cell_names_a_bug_in_rosetta_as_error(store, references, monkeypatch):
    from rosetta.verify.cells import VerifyCell, run_cell

    monkeypatch.setattr(dynamic_batch, "static_output_shapes", _seeded_bug(dynamic_batch, "static_output_shapes",
                                                                           "ZeroDivisionError('float division')"))
    result = run_cell(VerifyCell("cnn", "onnxruntime", seed=7), store, references)
    assert result.verdict == "ERROR", result.reason
    assert result.reason == ("conversion failed: rosetta bug: ZeroDivisionError at "
                             "rosetta/convert/onnx/dynamic_batch.py:2: float division")


def test_a_runtime_reshape_target_that_does_not_depend_on_the_batch_is_made_constant():
    """Swin-V2's relative position bias: a Reshape whose target sits behind an Identity (torch.onnx merges equal
    initializers) and whose output has one shape at every batch size; indexing the batch's axis among none
    raised IndexError and every target of the model was lost."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    import onnxruntime as ort

    table = np.arange(24, dtype=np.float32).reshape(2, 12)
    nodes = [helper.make_node("Identity", ["target"], ["target_again"]),
             helper.make_node("Reshape", ["table", "target_again"], ["bias"]),
             helper.make_node("Add", ["x", "bias"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4, 6])],
                              [numpy_helper.from_array(table, "table"),
                               numpy_helper.from_array(np.array([4, 6], np.int64), "target")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    x = np.random.default_rng(0).standard_normal((3, 4, 6)).astype(np.float32)
    before = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})[0]
    rewritten = dynamic_batch.constant_reshape_targets(model)
    onnx.checker.check_model(rewritten)
    reshape = next(node for node in rewritten.graph.node if node.op_type == "Reshape")
    target = next(init for init in rewritten.graph.initializer if init.name == reshape.input[1])
    assert numpy_helper.to_array(target).tolist() == [4, 6]  # no -1: no axis is the batch's
    assert not any(node.op_type == "Identity" for node in rewritten.graph.node)
    after = ort.InferenceSession(rewritten.SerializeToString()).run(None, {"x": x})[0]
    np.testing.assert_array_equal(before, after)
