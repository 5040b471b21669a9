"""`rosetta convert MODEL` and `rosetta verify A B` on users' own model files, as a user runs them: every
format converts and PASSes, wrong models FAIL, and every kind of bad input is one line with exit 2."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

from tests.shared import shared_folder
from tests.test_cli import run_here

HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    """The users' model files: Keras (.keras, .h5, Lambda ones), SavedModel, MXNet, ONNX, .pt2, net.py."""
    return shared_folder(tmp_path_factory, "user-models", _make_files)


def _make_files(folder: Path) -> None:
    import torch

    subprocess.run([sys.executable, str(HERE / "make_models.py"), str(folder)], check=True, capture_output=True)
    shutil.copyfile(HERE / "net.py", folder / "net.py")
    sys.path.insert(0, str(folder))
    try:
        import net
    finally:
        sys.path.remove(str(folder))
    example = (torch.rand(2, 3, 16, 16),)
    for name, model in (("model", net.build()), ("other", net.build_other())):
        torch.onnx.export(model.eval(), example, str(folder / f"{name}.onnx"), dynamo=False, input_names=["image"],
                          output_names=["output"], dynamic_axes={"image": {0: "N"}, "output": {0: "N"}})
    batch = torch.export.Dim("batch")
    torch.export.save(torch.export.export(net.build().eval(), example, dynamic_shapes=({0: batch},)),
                      str(folder / "net.pt2"))


def written_targets(output: Path) -> list[str]:
    """The target folders in an output folder (not rosetta's hidden record of what it wrote there)."""
    return sorted(p.name for p in output.iterdir() if not p.name.startswith("."))


def rows(path: Path) -> list[tuple[str, str]]:
    return [(r["target"], r["verdict"]) for r in json.loads(path.read_text())["results"]]


def test_keras_model_converts_to_onnx_torch_mxnet_and_passes(files, tmp_path):
    out = run_here("convert", str(files / "small.keras"), "--to", "onnx,torch,mxnet", "-o", str(tmp_path / "out"),
                   "--json", str(tmp_path / "r.json"))
    assert out.returncode == 0, out.stdout + out.stderr
    assert rows(tmp_path / "r.json") == [("onnx", "PASS"), ("torch", "PASS"), ("mxnet", "PASS")]
    assert written_targets(tmp_path / "out") == ["mxnet", "onnx", "torch"]
    manifest = json.loads((tmp_path / "out" / "torch" / "manifest.json").read_text())
    assert manifest["chain"] == ["keras", "onnx", "torch"] and manifest["source"]["path"].endswith("small.keras")
    assert out.stderr == ""  # quiet: no framework logs
    # the Keras model also runs in float64 (rebuilt with float64 layers): the calibrated rule, not ulps at scale
    assert json.loads((tmp_path / "r.json").read_text())["tolerance"]["float64_reference"] is True
    assert "no float64 reference" not in out.stdout


GROUPED_CONV = """
import os, sys
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import keras
keras.utils.set_random_seed(0)
image = keras.Input((8, 8, 4), name="image")
model = keras.Model(image, keras.layers.Conv2D(4, 3, padding="same", groups=2, name="grouped")(image))
model.save(sys.argv[1])
"""


def test_a_keras_function_marked_for_xla_is_inlined_and_the_model_converts_to_onnx(tmp_path):
    """Keras 3 wraps a grouped convolution (ConvNeXt's depthwise Conv2D) in a tf.function(jit_compile=True),
    which tf2onnx's grappler pass does not inline: without rosetta's inlining the ONNX step is a CANNOT naming
    StatefulPartitionedCall."""
    path = tmp_path / "grouped.keras"
    subprocess.run([sys.executable, "-c", GROUPED_CONV, str(path)], check=True, capture_output=True)
    out = run_here("convert", str(path), "--to", "onnx", "-o", str(tmp_path / "out"), "--json", str(tmp_path / "r.json"))
    assert rows(tmp_path / "r.json") == [("onnx", "PASS")], out.stdout + out.stderr
    graph = onnx.load(str(tmp_path / "out" / "onnx" / "model.onnx")).graph
    assert "StatefulPartitionedCall" not in {node.op_type for node in graph.node}


def test_mmdnn_converts_a_keras2_model_and_its_nhwc_reshape_error_is_flagged(files, tmp_path):
    """MMdnn converts a Keras model that flattens NHWC with a raw Reshape before Dense without any error, but
    its channels-first emitters (PyTorch, MXNet) do not reorder the dense weights: rosetta says FAIL. The same
    model with Flatten passes, and the NHWC targets pass both."""
    for name, expected in (("keras2-flatten", "PASS"), ("keras2-reshape", "FAIL")):
        out = run_here("convert", str(files / f"{name}.h5"), "--via", "mmdnn", "--to", "torch,mxnet,tensorflow",
                       "-o", str(tmp_path / name), "--json", str(tmp_path / f"{name}.json"), "--locate")
        assert out.returncode == (0 if expected == "PASS" else 1), out.stdout + out.stderr
        assert rows(tmp_path / f"{name}.json") == [("torch", expected), ("mxnet", expected), ("tensorflow", "PASS")]
    wrong = json.loads((tmp_path / "keras2-reshape.json").read_text())["results"][0]
    assert wrong["route"] == "mmdnn" and "x the noise floor" in wrong["reason"]
    assert wrong["outputs"][0]["max_abs_error"] > 0.1  # wrong, not noise
    # --locate bisects MMdnn's IR: the NHWC Reshape itself is right (its values in NCHW order, re-ordered by the
    # layout the emitter recorded); the Dense after it is where it goes wrong (weights kept in HWC order)
    for result in json.loads((tmp_path / "keras2-reshape.json").read_text())["results"][:2]:
        where = result["locate"]
        assert where["verdict"] == "located" and where["mechanism"] == "bisection", where
        assert (where["first"]["node"], where["first"]["op"], where["origin"]) == ("logits", "FullyConnected",
                                                                                   "introduced")
        assert [row["passed"] for row in where["rows"] if row["node"] == "reshape"] == [True]
    assert "first diverges at MMdnn IR node logits (FullyConnected) (source layer logits)" in out.stdout
    manifest = json.loads((tmp_path / "keras2-reshape" / "torch" / "manifest.json").read_text())
    assert manifest["chain"] == ["keras", "mmdnn", "torch-code"]


def test_mmdnn_converts_a_gluon_export(files, tmp_path):
    out = run_here("convert", str(files / "gluon-symbol.json"), "--input", "data:Nx3x16x16:float32", "--via", "mmdnn",
                   "--to", "torch,onnx", "-o", str(tmp_path / "out"), "--json", str(tmp_path / "r.json"))
    assert out.returncode == 0, out.stdout + out.stderr
    assert rows(tmp_path / "r.json") == [("torch", "PASS"), ("onnx", "PASS")]


def test_a_keras2_model_keras3_rejects_is_read_with_tf_keras_by_both_routes(files, tmp_path):
    """Keras 3 cannot read a Keras 2 DepthwiseConv2D config: the reference is read with tf-keras (its config
    checked for code first), so both routes convert it; MMdnn's TensorFlow emitter is a CANNOT with its reason."""
    out = run_here("convert", str(files / "keras2-depthwise.h5"), "--to", "onnx,torch", "-o", str(tmp_path / "a"),
                   "--json", str(tmp_path / "a.json"))
    assert out.returncode == 0, out.stdout + out.stderr
    assert rows(tmp_path / "a.json") == [("onnx", "PASS"), ("torch", "PASS")]
    out = run_here("convert", str(files / "keras2-depthwise.h5"), "--via", "mmdnn", "--to", "torch,keras,tensorflow",
                   "-o", str(tmp_path / "b"), "--json", str(tmp_path / "b.json"))
    assert out.returncode == 0, out.stdout + out.stderr
    assert rows(tmp_path / "b.json") == [("torch", "PASS"), ("keras", "PASS"), ("tensorflow", "CANNOT")]
    assert "UnboundLocalError" in json.loads((tmp_path / "b.json").read_text())["results"][2]["reason"]


def test_a_keras2_lambda_layer_read_with_tf_keras_is_refused_and_never_runs(files, tmp_path):
    out = run_here("convert", str(files / "keras2-lambda.h5"), "--to", "onnx", "-o", str(tmp_path / "out"))
    assert out.returncode == 2 and "keras2-lambda.h5 contains Python code (Lambda layer)" in out.stderr
    assert not (files / "keras2-lambda-ran").exists() and not (tmp_path / "out").exists()


def test_mmdnn_padded_average_pooling_error_is_flagged(files, tmp_path):
    """MXNet averages padded pooling windows over the padding too; MMdnn's IR does not record it and its PyTorch
    and ONNX emitters exclude the padding: converted without an error, wrong. Its MXNet emitter is right."""
    out = run_here("convert", str(files / "gluon-avgpool-symbol.json"), "--input", "data:Nx3x16x16:float32", "--via",
                   "mmdnn", "--to", "torch,onnx,mxnet", "-o", str(tmp_path / "out"), "--json", str(tmp_path / "r.json"),
                   "--locate", "--locate-dir", str(tmp_path / "where"))
    assert out.returncode == 1, out.stdout + out.stderr
    assert rows(tmp_path / "r.json") == [("torch", "FAIL"), ("onnx", "FAIL"), ("mxnet", "PASS")]
    wrong = json.loads((tmp_path / "r.json").read_text())["results"][0]
    assert "x the noise floor" in wrong["reason"] and wrong["outputs"][0]["max_abs_error"] > 0.01
    # --locate: the pooling node, introduced there (the convolution before it passes), in both emitters
    for result in json.loads((tmp_path / "r.json").read_text())["results"][:2]:
        where = result["locate"]
        assert (where["first"]["node"], where["first"]["source_layer"], where["origin"]) == ("pool0", "pool0_fwd",
                                                                                             "introduced"), where
    assert (tmp_path / "where" / "locate-gluon-avgpool-symbol.json-mmdnn.png").is_file()


def test_mmdnn_refuses_keras3_and_onnx_sources_with_the_reason(files, tmp_path):
    out = run_here("convert", str(files / "small.keras"), "--via", "mmdnn", "--to", "torch", "-o", str(tmp_path / "a"),
                   "--json", str(tmp_path / "a.json"))
    assert out.returncode == 0, out.stdout + out.stderr  # CANNOT: not a wrong conversion
    assert rows(tmp_path / "a.json") == [("torch", "CANNOT")]
    reason = json.loads((tmp_path / "a.json").read_text())["results"][0]["reason"]
    assert "MMdnn's Keras parser reads Keras 2 HDF5 models (tf-keras)" in reason and "use --via onnx" in reason
    out = run_here("convert", str(files / "model.onnx"), "--via", "mmdnn", "--to", "torch", "-o", str(tmp_path / "b"),
                   "--json", str(tmp_path / "b.json"), "--strict")
    assert out.returncode == 1  # --strict: anything but PASS
    reason = json.loads((tmp_path / "b.json").read_text())["results"][0]["reason"]
    assert "route mmdnn cannot start from a onnx model" in reason


def test_pytorch_factory_converts_to_tensorflow_keras_onnxruntime_and_passes(files, tmp_path):
    out = run_here("convert", f"{files / 'net.py'}:build", "--input", "image:Nx3x16x16:float32", "--trust-code",
                   "--to", "tensorflow,keras,onnxruntime", "-o", str(tmp_path / "out"),
                   "--json", str(tmp_path / "r.json"))
    assert out.returncode == 0, out.stdout + out.stderr
    assert rows(tmp_path / "r.json") == [("tensorflow", "PASS"), ("keras", "PASS"), ("onnxruntime", "PASS")]
    assert json.loads((tmp_path / "r.json").read_text())["tolerance"]["float64_reference"] is True


def test_onnx_file_converts_to_every_target_and_passes(files, tmp_path):
    """...and no converter changes what another was given: every artifact written still matches its manifest's
    sha256 after all the targets ran (onnx2tf rewrites the ONNX file it reads), and so does the user's file."""
    from rosetta.manifest import Manifest, sha256_of

    before = sha256_of(files / "model.onnx")
    out = run_here("convert", str(files / "model.onnx"), "--to", "all", "-o", str(tmp_path / "out"),
                   "--json", str(tmp_path / "r.json"))
    assert out.returncode == 0, out.stdout + out.stderr
    assert rows(tmp_path / "r.json") == [(t, "PASS") for t in ("onnx", "tensorflow", "keras", "torch", "mxnet",
                                                                "tensorflow-roundtrip")]
    written = written_targets(tmp_path / "out")
    assert len(written) == 6
    for folder in (tmp_path / "out" / name for name in written):
        Manifest.read(folder).check_integrity(folder)
    assert sha256_of(files / "model.onnx") == before


@pytest.mark.parametrize("model,extra,targets", [
    ("saved_model", [], "onnx,torch"),
    ("small.h5", [], "onnx"),
    ("gluon-symbol.json", ["--input", "data:Nx3x16x16:float32"], "onnx,keras"),
    ("net.pt2", [], "onnx,mxnet"),
])
def test_every_source_format_converts_and_passes(files, tmp_path, model, extra, targets):
    out = run_here("convert", str(files / model), *extra, "--to", targets, "-o", str(tmp_path / "out"),
                   "--json", str(tmp_path / "r.json"))
    assert out.returncode == 0, out.stdout + out.stderr
    assert rows(tmp_path / "r.json") == [(t, "PASS") for t in targets.split(",")]


def test_no_verify_only_converts(files, tmp_path):
    out = run_here("convert", str(files / "model.onnx"), "--to", "torch", "-o", str(tmp_path / "out"), "--no-verify",
                   "--json", str(tmp_path / "r.json"))
    assert out.returncode == 0 and rows(tmp_path / "r.json") == [("torch", "converted")]


def test_verify_compares_files_and_outputs_saved_elsewhere(files, tmp_path):
    inputs, outputs = tmp_path / "in.npz", tmp_path / "ref.npz"
    out = run_here("verify", str(files / "model.onnx"), f"{files / 'net.py'}:build", "--trust-code",
                   "--input", "image:Nx3x16x16:float32", "--save-inputs", str(inputs), "--save-outputs", str(outputs))
    # a factory compared with the reference runs as its torch.export on the same inputs
    assert out.returncode == 0 and "PASS" in out.stdout, out.stdout + out.stderr
    out = run_here("verify", str(files / "net.pt2"), str(files / "model.onnx"), "--json", str(tmp_path / "r.json"))
    assert out.returncode == 0, out.stdout + out.stderr
    with np.load(inputs) as saved:
        assert saved["image"].shape == (8, 3, 16, 16)
    out = run_here("verify", str(files / "net.pt2"), "--inputs", str(inputs), "--load-outputs", str(outputs))
    assert out.returncode == 0, out.stdout + out.stderr
    out = run_here("verify", str(files / "net.pt2"), "--inputs", str(inputs), "--load-outputs", str(outputs),
                   "--atol", "output:1e-12")
    assert out.returncode == 1 and "exceed --atol 1e-12" in out.stdout and "atol output=1e-12" in out.stdout, out.stdout


def test_verify_says_fail_for_a_different_model(files, tmp_path):
    out = run_here("verify", str(files / "model.onnx"), str(files / "other.onnx"), "--json", str(tmp_path / "r.json"))
    assert out.returncode == 1 and rows(tmp_path / "r.json") == [(str(files / "other.onnx"), "FAIL")]
    assert "x the noise floor" in out.stdout


def test_an_onnx_reference_runs_in_float64_and_sees_a_small_weight_perturbation(files, tmp_path):
    """An ONNX model's float64 reference (its graph in float64, ONNX's reference evaluator) gives it the
    calibrated rule: a copy with every weight of its first convolution 2e-5 off FAILs, while the model itself
    PASSes. One ulp at scale x 1000, the rule an ONNX model had before, passed this perturbation."""
    from onnx import numpy_helper

    model = onnx.load(str(files / "model.onnx"))
    weight = next(init for init in model.graph.initializer if numpy_helper.to_array(init).ndim == 4)
    values = numpy_helper.to_array(weight)
    signs = np.where(np.random.default_rng(0).random(values.shape) < 0.5, -1.0, 1.0)
    weight.CopyFrom(numpy_helper.from_array((values * (1 + 2e-5 * signs)).astype(np.float32), weight.name))
    onnx.save(model, str(tmp_path / "perturbed.onnx"))
    out = run_here("verify", str(files / "model.onnx"), str(tmp_path / "perturbed.onnx"), str(files / "model.onnx"),
                   "--json", str(tmp_path / "r.json"))
    assert out.returncode == 1, out.stdout + out.stderr
    assert [verdict for _, verdict in rows(tmp_path / "r.json")] == ["FAIL", "PASS"]
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["tolerance"]["float64_reference"] is True and "calibrated" in data["tolerance"]["description"]
    ulps = data["results"][0]["outputs"][0]["vs_float32"]["scaled_error"] / np.finfo(np.float32).eps
    assert ulps < 1000  # what the float32-only rule would have let through


def _single_op_model(path: Path, op: str, **attributes) -> Path:
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node(op, ["x"], ["y"], **attributes)], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(onnx.shape_inference.infer_shapes(model), str(path))
    return path


def test_an_op_a_target_cannot_convert_is_a_cannot_row_naming_op_and_target(tmp_path):
    model = _single_op_model(tmp_path / "det.onnx", "Det")
    out = run_here("convert", str(model), "--to", "onnx,torch,keras,mxnet", "-o", str(tmp_path / "out"),
                   "--json", str(tmp_path / "r.json"))
    assert out.returncode == 0, out.stdout + out.stderr
    assert rows(tmp_path / "r.json") == [("onnx", "PASS"), ("torch", "CANNOT"), ("keras", "CANNOT"), ("mxnet", "CANNOT")]
    reasons = {r["target"]: r["reason"] for r in json.loads((tmp_path / "r.json").read_text())["results"]}
    assert reasons["onnx"] == ""
    assert reasons["torch"].endswith("ONNX op Det (opset 11) cannot be converted to torch: onnx2torch has no converter for it")
    assert reasons["keras"].endswith("ONNX op Det (opset 17) cannot be converted to keras: rosetta's Keras mapper has no "
                                     "converter for it")
    assert reasons["mxnet"].endswith("ONNX op Det cannot be converted to mxnet: MXNet's ONNX importer has no converter for it")
    assert written_targets(tmp_path / "out") == ["onnx"]


def test_an_artifact_its_runtime_rejects_is_a_cannot_row_and_is_not_written(tmp_path, monkeypatch):
    """A converted artifact is run once as it is made (convert.runs.run_converted): one its runtime refuses is a
    CANNOT with the runtime's reason, found when converting (also with --no-verify), and is not written; the
    machine failing while it runs (out of memory) stays an ERROR. The torch runtime is made to refuse here (a
    runtime's refusal of a real converter's output is a bug rosetta fixes or refuses by name when found)."""
    import rosetta.convert.targets as targets

    original = targets.load_verify_runner

    def refusing(fault):
        class Refusing:
            def predict(self, feeds):
                raise fault
        return lambda framework, *args, **kwargs: Refusing() if framework == "torch" else original(framework, *args, **kwargs)

    model = _single_op_model(tmp_path / "abs.onnx", "Abs")
    for verify in ([], ["--no-verify"]):
        monkeypatch.setattr(targets, "load_verify_runner", refusing(RuntimeError("expects 4-D input\nat op.cc:12")))
        out = run_here("convert", str(model), "--input", "x:Nx4x4:float32", "--to", "onnx,torch",
                       "-o", str(tmp_path / f"out{len(verify)}"), "--json", str(tmp_path / "r.json"), *verify)
        assert out.returncode == 0, out.stdout + out.stderr
        results = json.loads((tmp_path / "r.json").read_text())["results"]
        assert [(r["target"], r["verdict"]) for r in results] == [("onnx", "PASS" if not verify else "converted"),
                                                                 ("torch", "CANNOT")]
        assert "torch refused the converted model: RuntimeError: expects 4-D input" in results[1]["reason"]
        assert written_targets(tmp_path / f"out{len(verify)}") == ["onnx"]
    monkeypatch.setattr(targets, "load_verify_runner", refusing(MemoryError()))
    out = run_here("convert", str(model), "--input", "x:Nx4x4:float32", "--to", "torch", "--no-verify",
                   "-o", str(tmp_path / "out-memory"), "--json", str(tmp_path / "r.json"))
    row = json.loads((tmp_path / "r.json").read_text())["results"][0]
    assert row["verdict"] == "ERROR" and "out of memory" in row["reason"], row


def test_nan_and_inf_outputs_fail_with_counts(tmp_path):
    log = _single_op_model(tmp_path / "log.onnx", "Log")
    absolute = _single_op_model(tmp_path / "abs.onnx", "Abs")
    out = run_here("convert", str(log), "--input", "x:Nx4x4:float32:-1:1", "--to", "torch",
                   "-o", str(tmp_path / "out"))
    assert out.returncode == 1 and "y: the reference itself gives" in out.stdout and "NaN and 0 Inf values" in out.stdout
    out = run_here("verify", str(absolute), str(log), "--input", "x:Nx4x4:float32:-1:1",
                   "--json", str(tmp_path / "r.json"))
    assert out.returncode == 1
    output = json.loads((tmp_path / "r.json").read_text())["results"][0]["outputs"][0]
    assert output["nan_count"] > 0 and output["reason"] == f"y: {output['nan_count']} NaN and 0 Inf values"


def test_a_worker_that_crashes_or_hangs_is_an_error_row_and_the_others_run(files, tmp_path):
    out = run_here("verify", str(files / "small.keras"), str(files / "crash.keras"), str(files / "hang.keras"),
                   str(files / "small.h5"), "--trust-code", "--timeout", "20", "--json", str(tmp_path / "r.json"))
    assert out.returncode == 3  # ERROR rows, no FAIL
    results = json.loads((tmp_path / "r.json").read_text())["results"]
    assert [r["verdict"] for r in results] == ["ERROR", "ERROR", "PASS"]
    assert results[0]["reason"] == "reading failed: reading crash.keras (keras) crashed: worker died with SIGSEGV"
    assert results[1]["reason"] == "reading failed: reading hang.keras (keras) timed out after 20 s (worker killed)"


@pytest.fixture(scope="module")
def damaged(files, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("damaged")
    data = (files / "model.onnx").read_bytes()
    (folder / "truncated.onnx").write_bytes(data[: len(data) // 2])
    (folder / "corrupt.onnx").write_bytes(bytes(range(256)) * 64)
    (folder / "model.pt").write_bytes(b"\x80\x04not really a pickle")
    np.savez(folder / "small-inputs.npz", image=np.zeros((2, 3, 8, 8), np.float32))
    (folder / "full").mkdir()
    (folder / "full" / "mine.txt").write_text("x")
    (folder / "a-file").write_text("x")
    return folder


BAD_INPUTS = [
    (["convert", "{d}/missing.onnx", "--to", "onnx"], "no such file or folder: {d}/missing.onnx"),
    (["convert", "{d}/truncated.onnx", "--to", "onnx"], "truncated.onnx is not a readable ONNX file (DecodeError"),
    (["convert", "{d}/corrupt.onnx", "--to", "onnx"], "corrupt.onnx is not a readable ONNX file"),
    (["convert", "{f}/model.onnx", "--input", "image:Nx3x32x32:float32", "--to", "onnx"],
     "--input image: shape Nx3x32x32 does not match the model, which expects Nx3x16x16"),
    (["convert", "{f}/model.onnx", "--input", "image:Nx3x16x16:int64", "--to", "onnx"],
     "--input image: dtype int64 does not match the model, which expects float32"),
    (["verify", "{f}/model.onnx", "{f}/other.onnx", "--inputs", "{d}/small-inputs.npz"],
     "input 'image' has shape (2, 3, 8, 8); the model expects (?, 3, 16, 16)"),
    (["convert", "{f}/net.py:build", "--input", "image:Nx3x16x16:float32", "--to", "onnx"],
     "net.py:build is Python code: building the model runs it; pass --trust-code if you trust it"),
    (["convert", "{f}/net.py:build", "--trust-code", "--to", "onnx"], "a PyTorch factory has no declared inputs"),
    (["convert", "{f}/crash.keras", "--to", "onnx"],
     "crash.keras contains Python code (e.g. a Lambda layer) that loading it would run; pass --trust-code"),
    (["convert", "{d}/model.pt", "--to", "onnx"], "model.pt is a pickle, which runs code when loaded"),
    (["convert", "{f}/model.onnx", "--to", "caffe"], "unknown target 'caffe'; choose from: onnx, onnxruntime"),
    (["verify", "{f}/net.pt2", "--load-outputs", "{d}/x.npz"], "--load-outputs needs the inputs those outputs came from"),
    (["convert", "{f}/model.onnx", "--input", "image:Nx3:float", "--to", "onnx"], "unknown dtype 'float'"),
]


@pytest.mark.parametrize("argv,message", BAD_INPUTS, ids=[m[:40] for _, m in BAD_INPUTS])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(files, damaged, tmp_path, argv, message):
    argv = [a.format(d=damaged, f=files) for a in argv]
    if argv[0] == "convert":
        argv += ["-o", str(tmp_path / "out")]
    out = run_here(*argv)
    assert out.returncode == 2, out.stdout + out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and message.format(d=damaged, f=files) in lines[0], out.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("output,message", [
    ("full", "output folder {d}/full exists and is not empty; choose another or pass --force to replace it"),
    ("a-file/out", "is a file, not a folder; choose another output folder"),
])
def test_unusable_output_folder_is_refused_before_any_work(files, damaged, output, message):
    out = run_here("convert", str(files / "model.onnx"), "--to", "onnx", "-o", str(damaged / output))
    assert out.returncode == 2 and message.format(d=damaged) in out.stderr
    assert sorted(p.name for p in (damaged / "full").iterdir()) == ["mine.txt"]
