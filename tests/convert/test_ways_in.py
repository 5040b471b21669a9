"""A target with more than one way in (issue 45 item 3): where onnx2tf's SavedModel does not verify, the tensorflow
target's next way, the Keras mapper's model saved as a SavedModel, is made and verified, and the first that PASSes
is kept; the row and the manifest say which. A FAIL stands only when every way FAILs; where onnx2tf PASSes nothing
else is converted."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from rosetta.convert.registry import get_conversion
from rosetta.convert.targets import TARGETS, get_target
from rosetta.verify.results import CANNOT, ERROR, FAIL, PASS, OutputComparison, VerifyResult
from rosetta.verify.ways_in import MANIFEST_KEY, settle

WAYS = (("first", ("onnx", "tensorflow")), ("second", ("onnx", "keras", "tensorflow")))


def row(verdict: str, reason: str = "", ratio: float = 0.0) -> VerifyResult:
    outputs = [OutputComparison("y", [2], verdict != FAIL, reason, 1.0, 1.0, 1.0, 1.0, 0.5, 0.5, 0, 0, 1e-7, ratio)]
    return VerifyResult("m", "onnx", "tensorflow", verdict, reason, outputs=outputs if ratio else [])


@pytest.mark.parametrize("target", list(TARGETS), ids=lambda t: f"{t.route}-{t.name}")
def test_every_way_in_is_a_chain_of_registered_conversions_to_the_targets_format(target):
    assert target.ways[0][1] == target.chain  # the first way is the target's own chain: its figures unchanged
    for name, chain in target.ways:
        assert name and chain[0] == target.chain[0] and chain[-1] == target.chain[-1], (name, chain)
        for source, destination in zip(chain, chain[1:]):
            get_conversion(source, destination)


def test_the_tensorflow_targets_try_the_keras_mapper_after_onnx2tf():
    for name in ("tensorflow", "tensorflow-roundtrip"):
        assert [way for way, _ in get_target(name).ways] == ["onnx2tf", "the Keras mapper"]
        assert "keras" in get_target(name).ways[1][1]


def test_a_first_way_that_passes_is_kept_and_no_other_is_made():
    def attempt(index):
        raise AssertionError(f"way {index} made although the first PASSed")

    first = row(PASS)
    assert settle(WAYS, (first, "a"), attempt) == (first, "a", 0)


@pytest.mark.parametrize("verdict", [ERROR, "INCONCLUSIVE"])
def test_a_crash_or_an_inconclusive_first_way_is_not_replaced(verdict):
    first = row(verdict, "onnx2tf crashed")
    assert settle(WAYS, (first, "a"), lambda i: (row(PASS), "b")) == (first, "a", 0)


@pytest.mark.parametrize("verdict", [FAIL, CANNOT])
def test_the_next_way_that_passes_is_kept_and_the_row_says_why_the_first_was_left(verdict):
    first = row(verdict, "onnx2tf failed: no converter for X", ratio=3.4e6)
    result, payload, kept = settle(WAYS, (first, "a"), lambda i: (row(PASS), "b"))
    assert (result.verdict, payload, kept) == (PASS, "b", 1)
    said = "first's artifact FAILed at 3.4e+06x the noise floor" if verdict == FAIL else \
        "first could not make it (onnx2tf failed: no converter for X)"
    assert result.reason.startswith(f"{said}; second's PASSes (kept)"), result.reason


def test_every_way_failing_keeps_the_first_fail_with_each_ways_reason():
    first = row(FAIL, "y differs", ratio=3.4e6)
    result, payload, kept = settle(WAYS, (first, "a"), lambda i: (row(FAIL, "y differs too", ratio=12.0), "b"))
    assert (result.verdict, payload, kept) == (FAIL, "a", 0)
    assert "first's artifact FAILed at 3.4e+06x the noise floor: y differs" in result.reason
    assert "second's artifact FAILed at 12x the noise floor: y differs too" in result.reason


def test_a_cannot_then_a_fail_keeps_the_fail_saying_both():
    result, payload, _ = settle(WAYS, (row(CANNOT, "refused"), "a"), lambda i: (row(FAIL, "wrong", ratio=9.0), "b"))
    assert (result.verdict, payload) == (FAIL, "b")
    assert "first could not make it (refused)" in result.reason and "second's artifact FAILed at 9x" in result.reason


def test_a_fail_then_a_crash_keeps_the_fail_saying_the_crash():
    result, payload, _ = settle(WAYS, (row(FAIL, "wrong", ratio=9.0), "a"), lambda i: (row(ERROR, "SIGSEGV"), "b"))
    assert (result.verdict, payload) == (FAIL, "a")
    assert "first's artifact FAILed at 9x the noise floor: wrong" in result.reason
    assert "second's artifact: ERROR (SIGSEGV)" in result.reason


# --- end to end: `rosetta convert g.onnx --to tensorflow` (library call), conversions in this process ---------------

def square_transpose_softmax(folder: Path) -> Path:
    """y = Softmax(Transpose(x, [0, 2, 1]) @ W) on an (N, 8, 8) input: two axes of the same size, where a wrong
    axis order has the right shape and the wrong values."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    weight = np.random.default_rng(0).standard_normal((8, 8)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Transpose", ["x"], ["xt"], perm=[0, 2, 1]), helper.make_node("MatMul", ["xt", "w"], ["a"]),
         helper.make_node("Softmax", ["a"], ["y"], axis=-1)], "square",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 8, 8])], [numpy_helper.from_array(weight, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = folder / "square.onnx"
    onnx.save(model, str(path))
    return path


def relative_position_scores(folder: Path) -> Path:
    """DeBERTa's disentangled attention in small: scores q @ k^T on an (N, 8, 8) input, a relative-position term
    gathered from them (GatherElements, constant offsets) and added transposed, then Softmax. onnx2tf 1.x
    converts it without complaint and its SavedModel FAILs at ~1.9e6x the noise floor (issue 45: the square
    transpose DeBERTa-v2 fails at any length)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    offsets = np.clip(np.arange(8)[:, None] - np.arange(8)[None, :] + 4, 0, 7).astype(np.int64)[None]
    constants = [numpy_helper.from_array(rng.standard_normal((8, 8)).astype(np.float32), "wq"),
                 numpy_helper.from_array(rng.standard_normal((8, 8)).astype(np.float32), "wk"),
                 numpy_helper.from_array(offsets, "offsets")]
    node = helper.make_node
    nodes = [node("MatMul", ["x", "wq"], ["q"]), node("MatMul", ["x", "wk"], ["k"]),
             node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]), node("MatMul", ["q", "kt"], ["s"]),
             node("Shape", ["s"], ["shape"]), node("Expand", ["offsets", "shape"], ["index"]),
             node("GatherElements", ["s", "index"], ["g"], axis=-1), node("Transpose", ["g"], ["gt"], perm=[0, 2, 1]),
             node("Add", ["s", "gt"], ["a"]), node("Softmax", ["a"], ["y"], axis=-1)]
    graph = helper.make_graph(nodes, "relative", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 8, 8])], constants)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = folder / "relative.onnx"
    onnx.save(model, str(path))
    return path


@pytest.fixture
def in_process(monkeypatch):
    """Conversions and runs in this process (as inside a TensorFlow worker), so that the patches below reach them."""
    monkeypatch.setenv("ROSETTA_WORKER", "tensorflow")


@pytest.fixture
def onnx2tf_reads_the_output_transposed(monkeypatch):
    """onnx2tf's axis-order guess gone wrong on a square tensor (issue 45: DeBERTa, SegFormer, ...): its model is
    onnx2tf's own, but the output is read channels-last, which on (N, 8, 8) has the right shape and wrong values."""
    from rosetta.convert.onnx import to_tensorflow

    real = to_tensorflow.layouts_of

    def guessed_wrong(*args, **kwargs):
        layouts, probed = real(*args, **kwargs)
        return {**layouts, "y": "channels_last"}, probed

    monkeypatch.setattr(to_tensorflow, "layouts_of", guessed_wrong)


def convert_square(tmp_path, targets=("tensorflow",), graph=square_transpose_softmax):
    from rosetta.settings import RunSettings
    from rosetta.verify.files import ConvertRequest, convert_and_verify_file

    return convert_and_verify_file(str(graph(tmp_path)),
                                   ConvertRequest(tuple(targets), tmp_path / "out"), RunSettings(progress=False))


def written_manifest(tmp_path, target="tensorflow") -> dict:
    return json.loads((tmp_path / "out" / target / "manifest.json").read_text())


def test_onnx2tf_passing_converts_nothing_else(tmp_path, in_process, monkeypatch):
    from rosetta.convert import keras_to_tensorflow

    monkeypatch.setattr(keras_to_tensorflow, "convert", lambda *a: pytest.fail("the Keras mapper's way was made"))
    [result] = convert_square(tmp_path).results
    assert result.verdict == PASS, result.reason
    manifest = written_manifest(tmp_path)
    assert manifest["chain"] == ["onnx", "tensorflow"] and MANIFEST_KEY not in manifest["converter"]


def test_onnx2tfs_wrong_relative_position_attention_is_replaced_by_the_keras_mappers_savedmodel(tmp_path):
    [result] = convert_square(tmp_path, graph=relative_position_scores).results  # onnx2tf in its worker, unpatched
    assert result.verdict == PASS, result.reason
    found = re.match(r"onnx2tf's artifact FAILed at ([0-9.e+]+)x the noise floor; the Keras mapper's PASSes \(kept\)",
                     result.reason)
    assert found and float(found[1]) > result.tolerance["multiple"], result.reason  # onnx2tf's own, far out
    manifest = written_manifest(tmp_path)
    assert manifest["chain"] == ["onnx", "keras", "tensorflow"]
    assert manifest["converter"][MANIFEST_KEY]["used"] == "the Keras mapper"


def test_a_wrong_onnx2tf_artifact_is_replaced_by_the_keras_mappers_savedmodel(tmp_path, in_process,
                                                                            onnx2tf_reads_the_output_transposed):
    results = convert_square(tmp_path, ("tensorflow", "tensorflow-roundtrip")).results
    for result in results:
        assert result.verdict == PASS, result.reason
        assert result.reason.startswith("onnx2tf's artifact FAILed at ") and "x the noise floor; the Keras " \
            "mapper's PASSes (kept)" in result.reason, result.reason
    from rosetta.report.tables import failure_lines

    lines = failure_lines(results)  # what the command prints under its table: PASS rows too, where a later way made it
    assert len(lines) == 2 and all("PASS" in line and "the Keras mapper's PASSes (kept)" in line for line in lines)
    for target, chain in (("tensorflow", ["onnx", "keras", "tensorflow"]),
                          ("tensorflow-roundtrip", ["onnx", "keras", "tensorflow", "onnx"])):
        manifest = written_manifest(tmp_path, target)
        assert manifest["chain"] == chain
        assert manifest["converter"][MANIFEST_KEY]["used"] == "the Keras mapper"
        assert manifest["converter"][MANIFEST_KEY]["why"].startswith("onnx2tf's artifact FAILed")


def test_both_ways_wrong_stays_fail_with_both_reasons(tmp_path, in_process, monkeypatch):
    from rosetta.convert import keras_to_tensorflow

    real = keras_to_tensorflow.save_saved_model

    def negated(tf, model, target, inputs, outputs):  # the Keras mapper's way made wrong: its output negated
        class Negated:
            def __init__(self):
                self.inputs = model.inputs

            def __call__(self, tensors, training=False):
                return -model(tensors, training=training)

        real(tf, Negated(), target, inputs, outputs)

    monkeypatch.setattr(keras_to_tensorflow, "save_saved_model", negated)
    [result] = convert_square(tmp_path, graph=relative_position_scores).results  # onnx2tf's own FAIL, unpatched
    assert result.verdict == FAIL, result.reason
    assert result.reason.startswith("every way in failed: onnx2tf's artifact FAILed at "), result.reason
    assert "the Keras mapper's artifact FAILed at " in result.reason, result.reason
    manifest = written_manifest(tmp_path)
    assert manifest["chain"] == ["onnx", "tensorflow"]  # the first FAIL is what is written, and it says so
    assert manifest["converter"][MANIFEST_KEY]["used"] == "onnx2tf"


def test_a_reference_models_cell_takes_the_keras_mapper_where_onnx2tf_refuses(tmp_path, in_process, monkeypatch):
    from rosetta.convert.onnx import to_tensorflow
    from rosetta.convert.store import ArtifactStore
    from rosetta.errors import RosettaError
    from rosetta.manifest import Manifest
    from rosetta.verify.cells import VerifyCell, run_cell

    def refuses(*args):
        raise RosettaError("ONNX op Conv cannot be converted to tensorflow: refused for this test")

    monkeypatch.setattr(to_tensorflow, "convert", refuses)
    result = run_cell(VerifyCell("cnn", "tensorflow", batch=4), ArtifactStore(tmp_path / "store"))
    assert result.verdict == PASS, result.reason
    assert result.reason.startswith("onnx2tf could not make it (conversion failed: ONNX op Conv cannot be converted "
                                    "to tensorflow: refused for this test); the Keras mapper's PASSes (kept)"), \
        result.reason
    manifest = Manifest.read(Path(result.artifact))
    assert manifest.chain == ["torch", "onnx", "keras", "tensorflow"]
    assert manifest.converter[MANIFEST_KEY]["used"] == "the Keras mapper"
