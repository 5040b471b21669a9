"""The MMdnn route. That every reference model PASSes in every target (gru: FAILs with the reason) is tested
with every route by tests/verify/test_targets_match_reference.py; here: the route's own promises."""

from __future__ import annotations

import json

import pytest

from rosetta.convert.targets import list_targets
from rosetta.errors import RosettaError
from rosetta.manifest import Manifest
from rosetta.verify.cells import VerifyCell, run_cell
from tests.test_cli import run

MMDNN_TARGETS = list_targets("mmdnn")


def test_the_mmdnn_route_has_the_onnx_routes_target_names():
    assert set(MMDNN_TARGETS) == {"onnxruntime", "tensorflow", "keras", "torch", "mxnet"}
    assert set(MMDNN_TARGETS) <= set(list_targets("onnx"))


def test_gru_is_a_cannot_row_naming_mmdnns_limitation(store, references):
    result = run_cell(VerifyCell("gru", "torch", route="mmdnn"), store, references)
    assert result.verdict == "CANNOT"
    assert result.reason == ("conversion failed: MMdnn cannot convert GRU: MMdnn has no working recurrent layers "
                             "(its IR declares GRU/LSTM/RNN without attributes; its parsers drop them and its "
                             "emitters do not implement them)")


def test_generated_code_lives_in_the_artifact_and_runs_only_when_trusted(store):
    from rosetta.frameworks import load_runner
    from rosetta.models import get_model

    folder = store.get(get_model("cnn"), 0, ("torch", "mmdnn", "torch-code"))
    manifest = Manifest.read(folder)
    assert (manifest.artifact_path(folder) / manifest.converter["code"]).is_file()
    assert not list(folder.rglob("*.npy")) and not list(folder.rglob("*.pt"))  # no pickled weights anywhere
    with pytest.raises(RosettaError, match="generated Python code .* pass --trust-code"):
        load_runner("torch-code", folder)
    assert load_runner("torch-code", folder, trust_code=True) is not None


def test_verify_puts_both_routes_side_by_side(tmp_path):
    out = run("verify", "--model", "cnn", "--via", "onnx,mmdnn", "--targets", "torch,onnxruntime", "--batch", "2",
              "--json", str(tmp_path / "r.json"))
    assert out.returncode == 0, out.stdout + out.stderr
    rows = json.loads((tmp_path / "r.json").read_text())["results"]
    assert [(r["route"], r["target"], r["verdict"]) for r in rows] == [
        ("onnx", "torch", "PASS"), ("onnx", "onnxruntime", "PASS"), ("mmdnn", "torch", "PASS"),
        ("mmdnn", "onnxruntime", "PASS")]


def test_unknown_route_is_a_one_line_error():
    out = run("verify", "--model", "cnn", "--via", "onnx,caffe")
    assert out.returncode == 2
    assert out.stderr.strip() == "rosetta: error: unknown route 'caffe'; choose from: mmdnn, onnx"
