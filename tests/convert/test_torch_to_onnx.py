from __future__ import annotations

import json

import numpy as np
import onnx
import pytest

from rosetta.convert.store import run_conversion, torch_source
from rosetta.convert.targets import get_target
from rosetta.errors import RosettaError
from rosetta.frameworks import load_runner
from rosetta.manifest import Manifest, sha256_of
from rosetta.models import get_model, list_models
from rosetta.models.inputs import generate_inputs

ONNX = get_target("onnxruntime").chain


@pytest.mark.parametrize("name", list_models())
def test_export_passes_the_checker_and_writes_a_manifest(store, name):
    spec = get_model(name)
    folder = store.get(spec, 0, ONNX)
    manifest = Manifest.read(folder)
    model = onnx.load(str(folder / manifest.artifact))
    onnx.checker.check_model(model, full_check=True)
    assert manifest.format == "onnx" and manifest.opset == 17
    assert manifest.source == {"model": name, "seed": 0}
    assert manifest.converter["name"] == "torch.onnx.export[torchscript]"
    assert manifest.converter["version"].startswith("2.")
    assert manifest.sha256 == sha256_of(folder / manifest.artifact)
    assert [i["name"] for i in manifest.inputs] == [t.name for t in spec.inputs]
    assert [o["name"] for o in manifest.outputs] == [t.name for t in spec.outputs]
    assert manifest.inputs[0]["dtype"] == spec.inputs[0].dtype
    assert manifest.inputs[0]["shape"][0] == "batch"  # dynamic batch axis
    assert manifest.inputs[0]["shape"][1:] == list(spec.inputs[0].shape[1:])
    manifest.check_integrity(folder)


@pytest.mark.parametrize("name", list_models())
def test_dynamic_batch_runs_other_batch_sizes(store, name):
    spec = get_model(name)
    runner = load_runner("onnxruntime", store.get(spec, 0, ONNX))
    for batch in (1, 3):
        out = runner.predict(generate_inputs(spec.inputs, batch, 0))
        assert out[spec.outputs[0].name].shape == spec.outputs[0].concrete_shape(batch)


def test_eval_export_folds_batchnorm_and_preserve_keeps_it(store):
    spec = get_model("resnet50")
    folded = onnx.load(str(store.get(spec, 0, ONNX) / "model.onnx"))
    kept = onnx.load(str(store.get(spec, 0, ONNX, {"training": "preserve"}) / "model.onnx"))
    assert "BatchNormalization" not in {n.op_type for n in folded.graph.node}
    assert sum(n.op_type == "BatchNormalization" for n in kept.graph.node) == 53


def test_dynamo_exporter_is_an_option(tmp_path):
    spec = get_model("cnn")
    manifest = run_conversion(torch_source(spec, 0), ONNX, tmp_path / "out", {"exporter": "dynamo", "opset": 18})
    assert manifest.converter["name"] == "torch.onnx.export[dynamo]"
    out = load_runner("onnxruntime", tmp_path / "out").predict(generate_inputs(spec.inputs, 2, 0))
    assert out["logits"].shape == (2, 10)


def test_failed_conversion_leaves_nothing_behind(tmp_path):
    class Broken(get_model("cnn").build(0).__class__):
        def forward(self, x):
            raise RuntimeError("deliberately broken forward")

    with pytest.raises(RosettaError, match="torch.onnx.export .* failed: .*deliberately broken"):
        run_conversion(torch_source(get_model("cnn"), 0, module=Broken()), ONNX, tmp_path / "out")
    assert list(tmp_path.iterdir()) == []


def test_existing_non_empty_output_is_refused_unless_forced(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("user data")
    with pytest.raises(RosettaError, match="exists and is not empty.*--force"):
        run_conversion(torch_source(get_model("cnn"), 0), ONNX, out)
    assert (out / "keep.txt").read_text() == "user data"
    run_conversion(torch_source(get_model("cnn"), 0), ONNX, out, force=True)
    assert not (out / "keep.txt").exists() and (out / "model.onnx").is_file()
    assert json.loads((out / "manifest.json").read_text())["chain"] == ["torch", "onnx"]


def test_tampered_artifact_fails_integrity_check(tmp_path):
    manifest = run_conversion(torch_source(get_model("cnn"), 0), ONNX, tmp_path / "out")
    with open(tmp_path / "out" / "model.onnx", "ab") as handle:
        handle.write(b"\0")
    with pytest.raises(RosettaError, match="does not match its manifest's sha256"):
        manifest.check_integrity(tmp_path / "out")


def test_same_seed_exports_identical_weights(tmp_path):
    spec = get_model("gru")
    paths = [tmp_path / "a", tmp_path / "b"]
    for path in paths:
        run_conversion(torch_source(spec, 5), ONNX, path)
    a, b = (onnx.load(str(p / "model.onnx")) for p in paths)
    for x, y in zip(a.graph.initializer, b.graph.initializer):
        assert np.array_equal(onnx.numpy_helper.to_array(x), onnx.numpy_helper.to_array(y))
