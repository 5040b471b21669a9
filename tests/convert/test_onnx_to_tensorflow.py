"""The onnx -> tensorflow path (onnx2tf after rosetta's rewrites) on the torch.onnx patterns onnx2tf failed on
with a dynamic batch size: each tiny module is exported by rosetta, converted, and the SavedModel computes what
ONNX Runtime computes on the export, at two batch sizes other than the export's."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from torch import nn

from rosetta.convert.onnx import rewrites as rw
from rosetta.convert.onnx.to_tensorflow import rewrite_for_onnx2tf
from rosetta.convert.store import run_conversion
from rosetta.frameworks import load_runner


class _UpSample(nn.Module):
    """U-Net's upsampling: a non-overlapping 2x2, stride-2 ConvTranspose (conv2d_transpose got 'batch')."""

    def __init__(self):
        super().__init__()
        self.conv, self.up = nn.Conv2d(3, 4, 3, padding=1), nn.ConvTranspose2d(4, 2, 2, stride=2)

    def forward(self, x):
        return self.up(torch.relu(self.conv(x)))


class _BiLSTM(nn.Module):
    """A 2-layer bidirectional LSTM: the second layer reads Reshape(x, [0, 0, -1]), whose size onnx2tf lost."""

    def __init__(self):
        super().__init__()
        self.lstm, self.head = nn.LSTM(6, 5, num_layers=2, bidirectional=True, batch_first=True), nn.Linear(10, 3)

    def forward(self, x):
        return self.head(self.lstm(x)[0][:, -1])


class _TokenMixer(nn.Module):
    """MLP-Mixer: patches flattened by a run-time Reshape, LayerNorm, and Linear layers on rank-3 tensors,
    whose bias torch.onnx writes as the first operand of Add."""

    def __init__(self):
        super().__init__()
        self.patches, self.norm = nn.Conv2d(3, 8, 4, stride=4), nn.LayerNorm(8)
        self.mix, self.head = nn.Linear(4, 4), nn.Linear(8, 2)

    def forward(self, x):
        tokens = self.norm(self.patches(x).flatten(2).transpose(1, 2))
        return self.head((tokens + self.mix(tokens.transpose(1, 2)).transpose(1, 2)).mean(1))


class _Encoder(nn.Module):
    """nn.TransformerEncoder: attention's reshapes and head-size scaling are computed from run-time shapes."""

    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True)
        self.project, self.head = nn.Linear(4, 8), nn.Linear(8, 3)
        self.encoder = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)

    def forward(self, x):
        return self.head(self.encoder(self.project(x)).mean(1))


CASES = {  # name: (module factory, input shape with the export's batch size)
    "conv_transpose": (_UpSample, (2, 3, 8, 8)),
    "bidirectional_lstm": (_BiLSTM, (2, 7, 6)),
    "mixer": (_TokenMixer, (2, 3, 8, 8)),
    "transformer_encoder": (_Encoder, (2, 5, 4)),
}


def _export(module: nn.Module, shape: tuple, folder):
    """The module through rosetta's own torch -> ONNX export, batch size dynamic."""
    from rosetta.convert.onnx.from_torch import TorchSource, convert
    from rosetta.models.registry import TensorSpec

    source = TorchSource(module.eval(), (TensorSpec("x", (None,) + shape[1:], "float32"),),
                         (TensorSpec("y", (None,), "float32"),), {})
    folder.mkdir()
    convert(source, folder, {"opset": 17}).write(folder)
    return onnx.load(str(folder / "model.onnx"))


@pytest.mark.parametrize("case", list(CASES))
def test_onnx2tf_model_computes_what_onnxruntime_computes(case, tmp_path):
    factory, shape = CASES[case]
    torch.manual_seed(0)
    model = _export(factory(), shape, tmp_path / "onnx")
    rewritten = rewrite_for_onnx2tf(onnx.load(str(tmp_path / "onnx" / "model.onnx")))
    onnx.checker.check_model(rewritten)
    run_conversion(tmp_path / "onnx", ("onnx", "tensorflow"), tmp_path / "tensorflow")
    runner = load_runner("tensorflow", tmp_path / "tensorflow")
    reference = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for batch in (3, 8):
        feeds = {"x": np.random.default_rng(batch).standard_normal((batch,) + shape[1:]).astype(np.float32)}
        expected = reference.run(None, feeds)[0]
        # the rewrites are semantics-preserving: the rewritten graph computes the same in ONNX Runtime
        np.testing.assert_allclose(_run(rewritten, feeds), expected, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(runner.predict(feeds)["y"], expected, rtol=1e-4, atol=1e-5)


def _run(model, feeds):
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]


def test_conv_transpose_with_overlap_is_left_as_it_is():
    """Only kernel == stride has no overlapping outputs; a 3x3, stride-2 ConvTranspose stays a ConvTranspose."""
    from onnx import TensorProto, helper, numpy_helper

    weight = numpy_helper.from_array(np.ones((4, 2, 3, 3), np.float32), "w")
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 5, 5])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [weight])
    model = rw.conv_transpose_as_depth_to_space(helper.make_model(graph))
    assert [n.op_type for n in model.graph.node] == ["ConvTranspose"]


def test_shape_inference_that_stops_short_writes_nothing_in_the_current_folder(tmp_path, monkeypatch):
    """ONNX Runtime's symbolic inference saves its partial graph into the current folder when it stops short
    (here on an op of an unknown domain): the rewrites run it in a scratch folder of their own."""
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    graph = helper.make_graph([helper.make_node("Mystery", ["x"], ["y"], domain="com.example")], "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])
    monkeypatch.chdir(tmp_path)
    assert rw._symbolic_shapes(model) is None
    assert rw.symbolic_reshape_shapes(model) is model
    assert list(tmp_path.iterdir()) == []


def test_layout_names_the_change_onnx2tf_made_and_refuses_any_other():
    """to_tensorflow._layout, fed shapes onnx2tf may write (as ONNX, channels moved last) and one it must
    not (a size changed): the manifest's layouts are only what the first two say."""
    from rosetta.convert.onnx.to_tensorflow import _layout
    from rosetta.errors import RosettaError

    assert _layout(["batch", 3, 32, 32], [None, 3, 32, 32]) == "as_onnx"
    assert _layout(["batch", 3, 32, 32], [None, 32, 32, 3]) == "channels_last"
    assert _layout(["batch", 150], [None, 150]) == "as_onnx"
    with pytest.raises(RosettaError, match=r"onnx2tf changed a tensor's shape from \['batch', 3, 32, 32\] to "
                                           r"\[None, 32, 32, 4\]"):
        _layout(["batch", 3, 32, 32], [None, 32, 32, 4])
    with pytest.raises(RosettaError, match="onnx2tf changed a tensor's shape"):
        _layout(["batch", 3, 32, 32], [None, 32, 3, 32])  # channels moved, but not last


@pytest.mark.parametrize("raised,reason", [
    (ValueError('Exception encountered when calling layer "tf.squeeze_1" (type TFOpLambda).\n\n'
                "Can not squeeze dim[1], expected a dimension of 1, got 32\n\nCall arguments received by layer "
                '"tf.squeeze_1" (type TFOpLambda):\n  • input=tf.Tensor(shape=(None, 32, 32))'),
     "onnx2tf failed: ValueError: Can not squeeze dim[1], expected a dimension of 1, got 32"),
    (SystemExit(1), "onnx2tf failed: ERROR: the op it logged"),
])
def test_an_onnx2tf_failure_keeps_its_cause(raised, reason, tmp_path, monkeypatch):
    """onnx2tf's exception wraps the cause in Keras's 'when calling layer' and appends the call's arguments; on
    sys.exit it has logged why: the reason is that cause, not the wrapper's first line."""
    import onnx2tf

    from rosetta.convert.onnx import to_tensorflow
    from rosetta.errors import RosettaError

    _export(_UpSample(), (2, 3, 8, 8), tmp_path / "onnx")

    def fail(**_):
        print("INFO: converting\nERROR: the op it logged")
        raise raised
    monkeypatch.setattr(onnx2tf, "convert", fail)
    with pytest.raises(RosettaError) as error:
        to_tensorflow.convert(tmp_path / "onnx", tmp_path / "staging", {})
    assert str(error.value) == reason
