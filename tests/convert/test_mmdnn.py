"""The MMdnn route. That every reference model PASSes in every target (gru: FAILs with the reason) is tested
with every route by tests/verify/test_targets_match_reference.py; here: the route's own promises."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rosetta.convert.targets import list_targets
from rosetta.errors import RosettaError
from rosetta.verify.cells import VerifyCell, run_cell
from tests.test_cli import run_here

MMDNN_TARGETS = list_targets("mmdnn")


def test_the_mmdnn_route_has_the_onnx_routes_target_names():
    assert set(MMDNN_TARGETS) == {"onnxruntime", "tensorflow", "keras", "torch", "mxnet"}
    assert set(MMDNN_TARGETS) <= set(list_targets("onnx"))


def test_gru_is_a_cannot_row_naming_the_pytorch_parsers_gap(store, references):
    from rosetta.convert.mmdnn.parse_torch import _classes

    result = run_cell(VerifyCell("gru", "torch", route="mmdnn"), store, references)
    assert result.verdict == "CANNOT"
    assert result.reason == ("conversion failed: MMdnn cannot convert GRU: MMdnn's PyTorch parser has no converter "
                             "for onnx::GRU (no entry in PytorchParser151.layer_map)")
    assert "onnx::GRU" not in _classes().layer_map  # the reason is the parser's own table


def test_a_keras2_gru_goes_through_mmdnn_and_each_emitter_says_what_it_lacks(tmp_path):
    """MMdnn's Keras parser reads GRU (rename_GRU), so a Keras 2 source is not refused up front: each target's
    row is MMdnn's own failure, naming the emitter."""
    import subprocess
    import sys

    script = ("import sys, tf_keras; tf_keras.utils.set_random_seed(0); i = tf_keras.Input((20, 8), name='sequence');"
              "tf_keras.Model(i, tf_keras.layers.Dense(2, name='logits')(tf_keras.layers.GRU(16)(i))).save(sys.argv[1])")
    subprocess.run([sys.executable, "-c", script, str(tmp_path / "gru.h5")], check=True, capture_output=True)
    out = run_here("convert", str(tmp_path / "gru.h5"), "--via", "mmdnn", "--to", "all", "-o", str(tmp_path / "out"),
                   "--json", str(tmp_path / "r.json"))
    reasons = {r["target"]: (r["verdict"], r["reason"]) for r in json.loads((tmp_path / "r.json").read_text())["results"]}
    assert {verdict for verdict, _ in reasons.values()} == {"CANNOT"}, out.stdout + out.stderr
    expected = {"onnx": "MMdnn's OnnxEmitter cannot emit GRU, Tanh: it has no emit_GRU, emit_Tanh",
                "tensorflow": "MMdnn's TensorflowEmitter cannot emit this model: emit_GRU raised AttributeError: "
                              "'TensorflowEmitter' object has no attribute 'emit_RNNs'",
                "keras": 'You called `set_weights(weights)` on layer "gru" with a weight list of length 0',
                "torch": "MMdnn's PytorchEmitter cannot emit this model: emit_GRU -> emit_RNNs raised NotImplementedError",
                "mxnet": "MMdnn's MXNetEmitter cannot emit GRU: it has no emit_GRU"}
    for target, text in expected.items():
        assert text in reasons[target][1], reasons[target][1]


class _Emitter:
    """Stands in for an MMdnn emitter: prints what MMdnn's print for an op it has no emit_ method for, or
    fails in an emit_ method as MMdnn's PyTorch and TensorFlow emitters do on GRU."""

    def __init__(self, printed: str = "", raises: BaseException | None = None) -> None:
        self.printed, self.raises = printed, raises

    def save_code(self, path: str, phase: str) -> None:
        print(self.printed)
        if self.raises is not None:
            self.emit_GRU()

    def emit_GRU(self) -> None:
        raise self.raises


def test_an_op_the_emitter_skips_or_cannot_emit_is_refused_naming_it(tmp_path):
    from rosetta.convert.mmdnn.emit import generate_code

    generate_code(_Emitter("Parse file [x] with binary format successfully."), tmp_path / "code.py")  # no gap
    with pytest.raises(RosettaError, match=r"^MMdnn's _Emitter cannot emit GRU: it has no emit_GRU$"):
        generate_code(_Emitter("OnnxEmitter has not supported operator [GRU]."), tmp_path / "code.py")
    with pytest.raises(RosettaError, match=r"emit_GRU raised NotImplementedError$"):
        generate_code(_Emitter(raises=NotImplementedError()), tmp_path / "code.py")
    with pytest.raises(RosettaError, match=r"emit_GRU raised AttributeError: no emit_RNNs$"):
        generate_code(_Emitter(raises=AttributeError("no emit_RNNs")), tmp_path / "code.py")
    broken = _Emitter()
    broken.save_code = lambda path, phase: None.missing  # an AttributeError outside any emit_: a crash, not a gap
    with pytest.raises(AttributeError):
        generate_code(broken, tmp_path / "code.py")


def test_a_layer_the_parser_skips_is_refused_naming_it(tmp_path):
    from rosetta.convert.mmdnn.ir import save_ir

    class KerasParser:
        """Stands in for MMdnn's Keras parser on a layer it has no rename_ method for (it only prints)."""
        __module__ = "mmdnn.conversion.keras.keras2_parser"
        weight_loaded, weights = True, {}

        def gen_IR(self) -> None:
            print("KerasParser has not supported operator [SimpleRNN].")

        def save_to_proto(self, path: str) -> None:
            Path(path).write_bytes(b"")

        save_to_json = save_to_proto

    with pytest.raises(RosettaError, match=r"^MMdnn's KerasParser cannot convert SimpleRNN: it has no rename_SimpleRNN$"):
        save_ir(KerasParser(), tmp_path, {}, [], [], "-", "channels_last")
