"""Two of the texts that named flags inside the library, reached the way a user reaches them: through the API they
name the parameter (`inputs=`, `batch=`), through the command line (its table, its failure line and the JSON it
writes) the flag (`--input`, `--batch`), said by cli/flags.py."""

from __future__ import annotations

import json

import numpy as np
import pytest

import rosetta
from rosetta.cli import main

EMPTY_API = "choose input shapes (inputs=) or a batch= that give a non-empty output"
EMPTY_CLI = "choose input shapes (--input) or a --batch that give a non-empty output"
MEMORY_API = "; free memory, lower batch= or use a larger machine"
MEMORY_CLI = "; free memory, lower --batch or use a larger machine"


@pytest.fixture
def empty_output(tmp_path):
    """An ONNX model whose output has no elements at any batch: x (N, 4) sliced to y (N, 0)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    constants = [numpy_helper.from_array(np.array([value], np.int64), name)
                 for name, value in (("starts", 0), ("ends", 0), ("axes", 1))]
    graph = helper.make_graph([helper.make_node("Slice", ["x", "starts", "ends", "axes"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 0])], constants)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "empty.onnx"
    onnx.save(model, str(path))
    return path


def verify_on_the_command_line(model, tmp_path, capsys) -> tuple[dict, str]:
    """The JSON row and the printed text of `rosetta verify model model --json`, its cells run in this process
    (--jobs 1: a pool of workers would not see a monkeypatch)."""
    main(["verify", str(model), str(model), "--json", str(tmp_path / "r.json"), "--no-progress", "--jobs", "1"])
    row, = json.loads((tmp_path / "r.json").read_text())["results"]
    return row, " ".join(capsys.readouterr().out.split())


def test_an_empty_output_names_inputs_and_batch_in_the_api_and_the_flags_on_the_command_line(empty_output, tmp_path,
                                                                                              capsys):
    row, = rosetta.verify(empty_output, empty_output).rows
    assert row.verdict == "FAIL" and row.reason.endswith(EMPTY_API), row.reason
    assert row.outputs[0].reason.endswith(EMPTY_API) and "--" not in row.reason
    said, printed = verify_on_the_command_line(empty_output, tmp_path, capsys)
    assert said["verdict"] == "FAIL" and said["reason"].endswith(EMPTY_CLI), said["reason"]
    assert said["outputs"][0]["reason"].endswith(EMPTY_CLI), said["outputs"][0]  # each output's reason too
    assert EMPTY_CLI in printed and "inputs=" not in printed, printed


def test_running_out_of_memory_names_batch_in_the_api_and_the_flag_on_the_command_line(empty_output, tmp_path,
                                                                                        capsys, monkeypatch):
    """The target's run raises MemoryError (what a framework's allocator raises): an ERROR row whose reason says
    what to lower, the parameter to an API caller and the flag on the command line."""
    import rosetta.verify.cells as cells

    def out_of_memory(predict, feeds):
        raise MemoryError("Unable to allocate 64.0 GiB for an array")

    monkeypatch.setattr(cells, "run_on_copies", out_of_memory)
    row, = rosetta.verify(empty_output, empty_output).rows
    assert row.verdict == "ERROR" and row.reason.startswith("inference failed: out of memory (") and \
        row.reason.endswith(MEMORY_API), row.reason
    said, printed = verify_on_the_command_line(empty_output, tmp_path, capsys)
    assert said["verdict"] == "ERROR" and said["reason"].endswith(MEMORY_CLI), said["reason"]
    assert MEMORY_CLI in printed and "batch=" not in printed, printed


def test_a_target_that_ran_elsewhere_names_device_and_the_command_line_says_the_flag(monkeypatch):
    """A framework that reports running on the CPU when device='cuda' was asked: a CANNOT row naming the
    parameter, which the command line's table and JSON say as --device cuda."""
    import rosetta.verify.cells as cells
    from rosetta.api import Report
    from rosetta.cli.flags import said_with_flags
    from rosetta.frameworks.base import Runner
    from rosetta.verify.results import VerifyResult
    from rosetta.verify.tolerance import TolerancePolicy

    class OnTheCpu(Runner):
        device_used = "cpu"

        @classmethod
        def version(cls):
            return "a framework 1.0"

        def predict(self, feeds):
            return {"y": feeds["x"]}

    monkeypatch.setattr(cells, "artifact_problems", lambda folder: [])  # no artifact folder to read
    x = {"x": np.ones((2, 3), np.float32)}
    row = cells.check_artifact(VerifyResult("m", "onnx", "torch", "", ""), None, OnTheCpu, x, x,
                               {"x": x["x"].astype(np.float64)}, TolerancePolicy(), device="cuda")
    assert row.verdict == "CANNOT" and row.reason.startswith("device='cuda': ") and row.reason.endswith(
        "ran it on cpu"), row.reason
    said = said_with_flags(Report([row])).to_json()["results"][0]["reason"]
    assert said.startswith("--device cuda: ") and said.endswith("ran it on cpu"), said
