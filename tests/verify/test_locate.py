"""`--locate`: the first ONNX node at which a wrong conversion diverges, and whether its conversion introduced
the error. Each wrong converter (verify.faults.CONVERTER_FAULTS) is the target's real chain after an edit of
the ONNX graph that a buggy converter would make (one node's weight misread, a recurrent node's gates swapped, a
Relu dropped where it follows a MaxPool); each wrong model (verify.faults.FAULTS) carries the node it was
seeded at: the report must name that node, and a correct conversion must not be blamed.

`make test` runs a fixed subset of the two fault matrices (tests/shared.py fixed_subset): every registered fault
on every target by the ONNX route, ResNet-50's only in ONNX Runtime; by MMdnn, the CNN's fault bisected by the
PyTorch, MXNet and ONNX emitters (the bisection is the same code for every emitter; the TensorFlow and Keras
emitters' bisections, 30-40 s each, run in the TensorFlow worker, which test_a_correct_mmdnn_conversion_is_not_blamed
covers with one emission; ResNet-50's fault is the same kind of edit, a weight, at minutes a target). The rest runs
in `make test-all`."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import onnx
import pytest

from rosetta.convert.targets import get_target, load_verify_runner
from rosetta.models import get_model
from rosetta.verify.cells import reference_for
from rosetta.verify.faults import CONVERTER_FAULTS, fault_cases, faulty_chain
from rosetta.verify.locate import INHERITED, INTRODUCED, TargetFiles, locate, source_layer, tensor_references
from tests.shared import fixed_subset
from rosetta.verify.tolerance import TolerancePolicy


def _converter(target_name: str, edit=None):
    target = get_target(target_name)
    return faulty_chain(target, edit), lambda folder: load_verify_runner(target.runner, folder)


def _locate(store, model_name, target_name, edit, tmp_path, batch=4, **options):
    spec = get_model(model_name)
    source = store.get(spec, 0, ("torch", "onnx"), get_target(target_name).export_options())
    convert, load = _converter(target_name, edit)
    modules = {name for name, _ in spec.build(0).named_modules() if name}
    files = TargetFiles(options.pop("export", None), options.pop("artifact", None))
    return locate(source, convert, load, reference_for(model_name, 0, batch).feeds, TolerancePolicy(), tmp_path,
                  target_name, modules, files=files, **options)


@pytest.mark.parametrize("model_name", ["cnn", "gru"])
def test_the_graph_in_float64_gives_the_float64_reference(model_name, store):
    """Every tensor's float64 value comes from the ONNX graph cast to float64: at the outputs it must be the
    PyTorch module's own float64 result, or the per-node noise floors are measured against the wrong truth."""
    spec = get_model(model_name)
    source = store.get(spec, 0, ("torch", "onnx"), get_target("onnxruntime").export_options())
    reference = reference_for(model_name, 0, 4)
    ref32, ref64, check = tensor_references(onnx.load(str(source / "model.onnx")), reference.feeds)
    assert check["trusted"] and check["nodes"] > 0, check["description"]
    for name, expected in reference.float64.items():
        np.testing.assert_allclose(ref64[name], expected, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(ref32[name], reference.float32[name], rtol=1e-4, atol=1e-6)


CONVERTER_CASES = [  # (converter fault, target, the node's torch module, nodes before it the target cannot give)
    ("cnn-conv3-weight-misread", "onnxruntime", "conv3", []),
    ("cnn-conv3-weight-misread", "torch", "conv3", []),
    ("cnn-relu-after-pool-dropped", "keras", "", []),
    ("gru-gates-misordered", "torch", "gru", []),
    # the Keras mapper's GRU is a layer of its own (before issue 35 it was one with the Squeeze after it, and
    # its output could not be read): located at the GRU itself, introduced there
    ("gru-gates-misordered", "keras", "gru", []),
]


@pytest.mark.parametrize("name, target_name, layer, unread", CONVERTER_CASES,
                         ids=[f"{name}->{target}" for name, target, _, _ in CONVERTER_CASES])
def test_locate_names_the_node_a_wrong_converter_broke(name, target_name, layer, unread, store, tmp_path):
    fault = CONVERTER_FAULTS.get(name)
    node, origin = (unread and "/gru/Squeeze") or fault.node, "" if unread else fault.origin
    report = _locate(store, fault.model, target_name, fault.edit, tmp_path)
    assert report.verdict == "located", report.reason
    assert (report.first.node, report.first.source_layer, report.origin, report.unread) == \
        (node, layer, origin, unread), report.summary()
    assert report.first.error_ratio > TolerancePolicy().multiple
    # the per-node rows (where the model with every tensor as an output converts: not the GRU in Keras, whose
    # zero initial state, computed from the batch size, the mapper refuses as an output; bisection finds it
    # there): every node before it passes; it fails
    if not unread and target_name != "keras":
        before = [row for row in report.rows if row.index < report.first.index]
        assert before and all(row.passed for row in before), [(r.node, r.reason) for r in before if not r.passed]
        assert any(row.node == node and row.passed is False for row in report.rows)
    else:
        assert report.mechanism == "intermediates + bisection" and report.conversions <= 8
    summary = report.summary()
    assert node in summary and all(name in summary for name in unread)
    assert {INTRODUCED: "; introduced there", INHERITED: "; not introduced there",
            "": "unknown: the node alone did not convert"}[origin] in summary


def test_a_correct_conversion_is_not_blamed(store, tmp_path):
    report = _locate(store, "cnn", "torch", None, tmp_path)
    assert report.verdict == "not reproduced" and report.first is None
    assert report.rows and all(row.passed for row in report.rows)


def test_bisection_alone_finds_the_node_in_log_n_conversions(store, tmp_path):
    report = _locate(store, "cnn", "onnxruntime", CONVERTER_FAULTS.get("cnn-conv3-weight-misread").edit, tmp_path,
                     mechanisms=("bisection",))
    nodes = len(get_model("cnn").build(0)._modules) + 10  # an upper bound on the graph's nodes
    assert report.first.node == "/conv3/Conv" and report.origin == INTRODUCED and not report.rows
    assert report.conversions <= math.ceil(math.log2(nodes)) + 2


def test_source_layer_is_the_module_path_in_the_exporters_scope():
    modules = {"layer2", "layer2.2", "layer2.2.conv1", "layer2.2.relu", "conv1"}
    assert source_layer("/layer2/layer2.2/conv1/Conv", modules) == "layer2.2.conv1"
    assert source_layer("/layer2/layer2.2/relu_1/Relu", modules) == "layer2.2.relu"  # its second call
    assert source_layer("/conv1/Conv") == "conv1"
    assert source_layer("/Relu_3", modules) == "" and source_layer("node_Conv_0") == ""


def test_verify_locate_reports_where_a_failing_target_diverges(tmp_path, monkeypatch, capsys):
    """End to end: `rosetta verify --locate` on a target whose converter is broken: the FAIL row carries the
    report, the console names the node, and a row that passes has none."""
    from rosetta.cli import main
    from rosetta.convert.onnx import to_torch

    real, edit = to_torch.convert, CONVERTER_FAULTS.get("cnn-conv3-weight-misread").edit

    def broken(source, staging, options):
        model = onnx.load(str(Path(source) / "model.onnx"))
        edit(model)
        onnx.save(model, str(Path(source) / "model.onnx"))
        return real(source, staging, options)

    monkeypatch.setattr(to_torch, "convert", broken)
    out = tmp_path / "results.json"
    code = main(["verify", "--model", "cnn", "--targets", "torch,onnxruntime", "--locate", "--batch", "4",
                 "--jobs", "1", "--no-progress", "--work-dir", str(tmp_path / "work"), "--json", str(out),
                 "--locate-dir", str(tmp_path / "where")])
    assert code == 1
    rows = {row["target"]: row for row in json.loads(out.read_text())["results"]}
    assert rows["torch"]["verdict"] == "FAIL" and rows["torch"]["locate"]["first"]["node"] == "/conv3/Conv"
    assert rows["onnxruntime"]["verdict"] == "PASS" and not rows["onnxruntime"]["locate"]
    assert "first diverges at node /conv3/Conv" in capsys.readouterr().out
    # the picture, and Model Explorer's node data: keyed by output tensor, the failing node red
    assert (tmp_path / "where" / "locate-cnn.png").stat().st_size > 10_000
    node_data = json.loads((tmp_path / "where" / "locate-cnn-torch.explorer.json").read_text())
    assert node_data["results"]["/conv3/Conv_output_0"]["bgColor"] == "#f4a09a"
    assert "bgColor" not in node_data["results"]["/conv2/Conv_output_0"]


FAULTS = fixed_subset(fault_cases("onnx"), lambda f, t: f.model != "resnet50" or t == "onnxruntime",
                      lambda f, t: f"{f.name}->{t}", every={"fault": lambda f, t: f.name, "target": lambda f, t: t})
@pytest.mark.parametrize("fault,target", FAULTS)
def test_locate_names_the_node_each_registered_fault_was_seeded_at(fault, target, store, tmp_path):
    """A wrong model's export diverges at the seeded node (or, where the wrong model added a node the reference
    has no tensor of, at the next one, naming it); an artifact edited after conversion is read as it runs."""
    target_spec = get_target(target)
    artifact = fault.build(store, 0, target_spec, {})
    export = fault.export(store, 0, target_spec, {})
    report = _locate(store, fault.model, target, None, tmp_path, batch=2 if fault.model == "resnet50" else 4,
                     export=export, artifact=artifact)
    assert report.verdict == "located", report.summary()
    assert fault.node in [report.first.node, *report.unread], report.summary()
    assert report.stage == ("export" if fault.in_export else "artifact") and report.origin == INTRODUCED


def test_two_onnx_files_locate_the_first_node_that_differs(store, tmp_path):
    """`rosetta verify A.onnx B.onnx --locate`: B's tensors against A's of the same name, in ONNX Runtime; in a
    model whose inner tensors were all renamed only the output can be compared: the report says so, naming every
    node before it as one the reference has no value of, instead of blaming the last."""
    from rosetta.cli import main

    source = store.get(get_model("cnn"), 0, ("torch", "onnx"), get_target("onnxruntime").export_options())
    reference = onnx.load(str(source / "model.onnx"))
    onnx.save(reference, str(tmp_path / "a.onnx"))
    edited = onnx.load(str(source / "model.onnx"))
    CONVERTER_FAULTS.get("cnn-conv3-weight-misread").edit(edited)
    onnx.save(edited, str(tmp_path / "b.onnx"))
    renamed = onnx.load(str(tmp_path / "b.onnx"))
    names = {n: f"t{i}" for i, n in enumerate(o for node in renamed.graph.node for o in node.output if o != "logits")}
    for node in renamed.graph.node:
        node.input[:] = [names.get(name, name) for name in node.input]
        node.output[:] = [names.get(name, name) for name in node.output]
    onnx.save(renamed, str(tmp_path / "c.onnx"))
    out = tmp_path / "r.json"
    assert main(["verify", str(tmp_path / "a.onnx"), str(tmp_path / "b.onnx"), str(tmp_path / "c.onnx"), "--locate",
                 "--jobs", "1", "--no-progress", "--json", str(out)]) == 1
    b, c = json.loads(out.read_text())["results"]
    assert b["verdict"] == c["verdict"] == "FAIL"
    assert b["locate"]["first"]["node"] == "/conv3/Conv" and b["locate"]["stage"] == "export"
    assert c["locate"]["first"]["node"] == "/fc2/Gemm" and len(c["locate"]["unread"]) == 13
    assert c["locate"]["unread_reason"] == "the reference has no tensor of its output's name"


MMDNN_FAULTS = fixed_subset([(fault, target) for fault, target in fault_cases("mmdnn") if fault.in_export],
                            lambda f, t: f.model != "resnet50" and t not in ("tensorflow", "keras"),
                            lambda f, t: f"{f.name}->mmdnn:{t}")
@pytest.mark.parametrize("fault,target", MMDNN_FAULTS)
def test_locate_bisects_mmdnns_ir_to_the_node_each_fault_was_seeded_at(fault, target, store, tmp_path):
    """The MMdnn route hides intermediates in generated code: its IR is cut, each prefix emitted by the target's
    own emitter, in at most ceil(log2 N) + 2 emissions plus one per input of the node found."""
    from rosetta.convert.mmdnn.ir import ir_nodes
    from rosetta.manifest import Manifest
    from rosetta.verify.cells import VerifyCell
    from rosetta.verify.locate_mmdnn import locate_reference_cell

    target_spec = get_target(target, "mmdnn")
    assert fault.build(store, 0, target_spec, {}).is_dir()
    ir = fault.export(store, 0, target_spec, {})
    cell = VerifyCell(fault.model, target, "mmdnn", seed=0, batch=2 if fault.model == "resnet50" else 4)
    report = locate_reference_cell(cell, target_spec, store, tmp_path, ir=ir)
    assert report.verdict == "located" and report.mechanism == "bisection", report.summary()
    modules = {name for name, _ in get_model(fault.model).build(0).named_modules() if name}
    assert report.first.source_layer == source_layer(fault.node, modules), report.summary()
    assert report.origin == INTRODUCED and "MMdnn IR node" in report.summary()
    nodes = len(ir_nodes(Manifest.read(ir).artifact_path(ir)))
    assert report.conversions <= math.ceil(math.log2(nodes)) + 2 + 1


@pytest.mark.parametrize("target", ["torch", "keras"])
def test_a_correct_mmdnn_conversion_is_not_blamed(target, store, tmp_path):
    """Through the job `rosetta verify --locate` runs per FAIL cell (here a correct one): one emission of the
    whole IR, which passes."""
    from rosetta.verify.cells import VerifyCell, cell_to_json
    from rosetta.verify.locate import report_from_json
    from rosetta.verify.locate_cells import locate_job

    cell = VerifyCell("cnn", target, "mmdnn", seed=0, batch=4)
    report = report_from_json(locate_job({"cell": cell_to_json(cell), "store": str(store.root),
                                          "work": str(tmp_path)}))
    assert report.verdict == "not reproduced" and report.conversions == 1, report.summary()
    assert report.graph == "mmdnn"


def test_convert_locate_names_the_node_for_a_users_model(tmp_path, monkeypatch):
    """A user's ONNX model along the ONNX route: onnx2tf computes a reversed CumSum wrongly (docs/conformance.md).
    As the user gets it, the tensorflow target's second way in (the Keras mapper's SavedModel) replaces that
    artifact (tests/convert/test_ways_in.py, on a user's file); with onnx2tf's way alone, its FAIL stands and
    --locate names that node, cut from the user's own graph and converted along the target's chain."""
    from onnx import TensorProto, helper, numpy_helper

    import rosetta.verify.ways_in as ways_in
    from tests.test_cli import run_here

    rng = np.random.default_rng(0)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("CumSum", ["r", "axis"], ["s"], reverse=1), helper.make_node("Relu", ["s"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4, 8, 8])],
                              [numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w"),
                               numpy_helper.from_array(np.array(2, np.int64), "axis")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8),
              str(tmp_path / "cumsum.onnx"))
    monkeypatch.setattr(ways_in, "TRIED_AGAIN", ())  # onnx2tf's way only
    out = run_here("convert", tmp_path / "cumsum.onnx", "--to", "tensorflow", "-o", tmp_path / "out", "--locate",
                   "--no-progress", "--json", tmp_path / "r.json")
    row = json.loads((tmp_path / "r.json").read_text())["results"][0]
    assert out.returncode == 1 and row["verdict"] == "FAIL", out.stdout + out.stderr
    assert row["locate"]["verdict"] == "located" and row["locate"]["first"]["op"] == "CumSum", row["locate"]
