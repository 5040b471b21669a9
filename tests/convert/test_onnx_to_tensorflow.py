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


class _SquareSqueezeExcite(nn.Module):
    """An SE block on an (N, 8, 8, 8) image: channels as many as rows and columns. Kept as ONNX has it, onnx2tf
    took it for channels-last and gave wrong numbers; it is declared channels-first (it reaches a Conv)."""

    def __init__(self):
        super().__init__()
        self.conv, self.fc = nn.Conv2d(8, 8, 3, padding=1), nn.Linear(8, 8)

    def forward(self, x):
        y = self.conv(x)
        return y * torch.sigmoid(self.fc(y.mean((2, 3))))[:, :, None, None]


class _SquareTokens(nn.Module):
    """(N, 4, 4) tokens, as many as features: declared channels-first, the input was reduced on the wrong axis."""

    def __init__(self):
        super().__init__()
        self.mix = nn.Linear(4, 4)

    def forward(self, x):
        return self.mix(x).abs().sum(1) + x.mean(1)


class _ProjectedSquareTokens(nn.Module):
    """(N, 16, 8) tokens projected to (N, 16, 16): without onnx2tf's strict mode the softmax over the tokens and the
    mean over the features came out on each other's axis."""

    def __init__(self):
        super().__init__()
        self.project = nn.Linear(8, 16)

    def forward(self, x):
        wide = self.project(x)
        return torch.softmax(wide, 1) * wide.mean(2, keepdim=True)


CASES = {  # name: (module factory, input shape with the export's batch size)
    "conv_transpose": (_UpSample, (2, 3, 8, 8)),
    "bidirectional_lstm": (_BiLSTM, (2, 7, 6)),
    "mixer": (_TokenMixer, (2, 3, 8, 8)),
    "transformer_encoder": (_Encoder, (2, 5, 4)),
    "square_image": (_SquareSqueezeExcite, (2, 8, 8, 8)),
    "square_tokens": (_SquareTokens, (2, 4, 4)),
    "projected_square_tokens": (_ProjectedSquareTokens, (2, 16, 8)),
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


def test_layout_names_the_changes_onnx2tf_may_have_made_and_refuses_any_other():
    """onnx2tf_layouts.fitting_layouts, fed shapes onnx2tf may write (as ONNX, channels moved last, a 0-d input
    declared (None,)) and one it must not (a size changed): the manifest's layouts are only what these say; a shape
    that fits two layouts gives both, for the probe to choose."""
    from rosetta.convert.onnx.onnx2tf_layouts import fitting_layouts
    from rosetta.errors import RosettaError

    assert fitting_layouts(["batch", 3, 32, 32], [None, 3, 32, 32]) == ["as_onnx"]
    assert fitting_layouts(["batch", 3, 32, 32], [None, 32, 32, 3]) == ["channels_last"]
    assert fitting_layouts(["batch", 150], [None, 150]) == ["as_onnx"]
    assert fitting_layouts([2, 3, 3, 3], [2, 3, 3, 3]) == ["as_onnx", "channels_last"]
    assert fitting_layouts([], [None]) == ["as_onnx"]  # onnx2tf's (None,) input takes the 0-d tensor as it is
    with pytest.raises(RosettaError, match=r"onnx2tf changed a tensor's shape from \['batch', 3, 32, 32\] to "
                                           r"\[None, 32, 32, 4\]"):
        fitting_layouts(["batch", 3, 32, 32], [None, 32, 32, 4])
    with pytest.raises(RosettaError, match="onnx2tf changed a tensor's shape"):
        fitting_layouts(["batch", 3, 32, 32], [None, 32, 3, 32])  # channels moved, but not last


def _pool_model(opset: int = 17):
    """An average pooling whose output, (2, 3, 3, 3), has as many channels as rows and columns."""
    from onnx import TensorProto, helper

    node = helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 6, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 3, 3])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


@pytest.mark.parametrize("opset", [6, 17])
def test_an_output_whose_shape_fits_both_layouts_is_read_in_the_one_the_model_computes(opset, tmp_path):
    """AvgPool's (2, 3, 3, 3) output fits channels-first and channels-last: read by its shape alone, onnx2tf's
    channels-last output came back transposed (torch's AvgPool2d test FAILed by 1.5). The probe records the
    layout in which the model gives ONNX Runtime's numbers; opset 6 is brought to 13 first (ONNX Runtime has no
    AveragePool-1 to probe with)."""
    from rosetta.manifest import Manifest, sha256_of

    source = tmp_path / "onnx"
    source.mkdir()
    model = _pool_model(opset)
    onnx.save(model, str(source / "model.onnx"))
    Manifest(artifact="model.onnx", format="onnx", source={"test": "pool"}, converter={"name": "test"},
             inputs=[{"name": "x", "shape": [2, 3, 6, 6], "dtype": "float32"}],
             outputs=[{"name": "y", "shape": [2, 3, 3, 3], "dtype": "float32"}],
             sha256=sha256_of(source / "model.onnx"), opset=opset).write(source)
    run_conversion(source, ("onnx", "tensorflow"), tmp_path / "tensorflow")
    manifest = Manifest.read(tmp_path / "tensorflow")
    assert manifest.converter["layouts_probed"] == ["y"] and manifest.converter["layouts"]["y"] == "channels_last"
    x = np.random.default_rng(1).standard_normal((2, 3, 6, 6)).astype(np.float32)
    expected = _run(rw.old_opsets_upgraded(model), {"x": x})
    np.testing.assert_allclose(load_runner("tensorflow", tmp_path / "tensorflow").predict({"x": x})["y"], expected,
                               rtol=1e-5, atol=1e-6)


def test_the_probe_chooses_no_layout_that_does_not_give_onnx_runtimes_numbers(tmp_path):
    """A model that computes something else in every layout (here: the pool's output plus one) gets no layout
    from the probe: the shape's first fitting one stands, and verification says FAIL."""
    from rosetta.convert.onnx.onnx2tf_layouts import probe
    from rosetta.manifest import Manifest

    onnx.save(_pool_model(), str(tmp_path / "model.onnx"))
    previous = Manifest(artifact="model.onnx", format="onnx", source={}, converter={},
                        inputs=[{"name": "x", "shape": [2, 3, 6, 6], "dtype": "float32"}],
                        outputs=[{"name": "y", "shape": [2, 3, 3, 3], "dtype": "float32"}], sha256="")
    pooled = lambda x: x.reshape(2, 3, 3, 2, 3, 2).mean(axis=(3, 5))  # noqa: E731 - channels first, as ONNX
    fitting = {"x": ["as_onnx"], "y": ["as_onnx", "channels_last"]}
    right = lambda x, training: np.moveaxis(pooled(x), 1, -1)  # noqa: E731 - what onnx2tf's model computes
    wrong = lambda x, training: np.moveaxis(pooled(x), 1, -1) + 1  # noqa: E731
    assert probe(right, previous, tmp_path / "model.onnx", fitting) == {"y": "channels_last"}
    assert probe(wrong, previous, tmp_path / "model.onnx", fitting) == {}


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


def test_onnx2tf_never_runs_an_onnxsim_it_finds_on_path(tmp_path, monkeypatch):
    """onnx2tf runs whatever `onnxsim` is on PATH: the conversion must not depend on whether a virtual
    environment is activated (and onnxsim 0.8 imports torch on each of its three runs)."""
    import os

    from rosetta.convert.onnx import to_tensorflow
    from rosetta.manifest import Manifest

    tools, ran = tmp_path / "bin", tmp_path / "onnxsim-ran"
    tools.mkdir()
    (tools / "onnxsim").write_text(f"#!/bin/sh\ntouch {ran}\nexit 1\n")
    (tools / "onnxsim").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")
    _export(_UpSample(), (2, 3, 8, 8), tmp_path / "onnx")
    manifest = to_tensorflow.convert(tmp_path / "onnx", tmp_path / "staging", {})
    assert not ran.exists()
    assert manifest.converter["options"]["not_use_onnxsim"] is True


def _one_node(node, inputs, opset=18):
    """A one-node model: inputs as (name, elem_type, shape), output y."""
    from onnx import TensorProto, helper

    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(*value) for value in inputs],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


@pytest.mark.parametrize("node, inputs, reason", [
    (("ReduceMean", ["x", "axes"]), [("x", 1, [2, 3, 4]), ("axes", 7, ["k"])],
     "ONNX op ReduceMean with axes computed at run time, of unknown count, cannot be converted to tensorflow"),
    (("Relu", ["x"]), [("x", 1, [1] * 7)], r"a tensor of rank 7 \(x\) cannot be converted to tensorflow"),
    (("BatchNormalization", ["x", "s", "b", "m", "v"], {"training_mode": 1}),
     [("x", 1, [2, 3, 4]), *((name, 1, [3]) for name in "sbmv")], "BatchNormalization with training_mode=1"),
    (("ScatterND", ["x", "i", "u"], {"reduction": "add"}), [("x", 1, [4, 2]), ("i", 7, [1, 1]), ("u", 1, [1, 2])],
     "ScatterND with reduction=add"),
    (("Mod", ["x", "z"], {"fmod": 1}), [("x", 1, [3]), ("z", 1, [3])], "Mod with fmod=1 on floats"),
    (("SpaceToDepth", ["x"], {"blocksize": 2, "mode": "CRD"}), [("x", 1, [1, 2, 4, 4])], "SpaceToDepth with mode=CRD"),
], ids=["run_time_axes", "rank_7", "batchnorm_training", "scatternd_reduction", "float_fmod", "space_to_depth_crd"])
def test_what_onnx2tf_computes_otherwise_or_never_finishes_is_refused_by_name(node, inputs, reason):
    """onnx2tf_refusals: each pattern onnx2tf computed wrongly without complaint on ONNX's backend suite (or whose
    axis search did not finish) is a one-line refusal naming it; the same op without the pattern is not."""
    from onnx import helper

    from rosetta.convert.onnx.onnx2tf_refusals import refuse_known_wrong
    from rosetta.errors import RosettaError

    op, names, *attributes = node
    model = _one_node(helper.make_node(op, names, ["y"], **(attributes[0] if attributes else {})), inputs, opset=24)
    with pytest.raises(RosettaError, match=reason):
        refuse_known_wrong(model)
    refuse_known_wrong(_one_node(helper.make_node("ReduceMean", ["x", "axes"], ["y"]),
                                 [("x", 1, [2, 3, 4]), ("axes", 7, [1])]))  # axes of known count
    refuse_known_wrong(_one_node(helper.make_node("Relu", ["x"], ["y"]), [("x", 1, [1] * 6)]))


def _graph_source(folder, nodes, inputs, initializers=(), opset=18):
    """An ONNX artifact folder (model.onnx + manifest) of a small graph: inputs as (name, dtype, shape), one output
    y; its manifest's signature from the graph."""
    from onnx import helper, numpy_helper

    from rosetta.manifest import Manifest, sha256_of

    types = {"float32": onnx.TensorProto.FLOAT, "int64": onnx.TensorProto.INT64}
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, types[d], s) for n, d, s in inputs],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(np.asarray(v), n) for n, v in initializers])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
    folder.mkdir()
    onnx.save(model, str(folder / "model.onnx"))
    output = _run(model, {n: np.ones([2 if isinstance(d, str) else d for d in s], d) for n, d, s in inputs})
    Manifest(artifact="model.onnx", format="onnx", source={"test": "graph"}, converter={"name": "test"},
             inputs=[{"name": n, "shape": list(s), "dtype": d} for n, d, s in inputs],
             outputs=[{"name": "y", "shape": ["N", *output.shape[1:]], "dtype": "float32"}],
             sha256=sha256_of(folder / "model.onnx"), opset=opset).write(folder)
    return model


def _graphs():
    from onnx import helper

    return {  # what onnx2tf read otherwise than ONNX before rosetta's rewrites
        # a bound computed at run time, given as a 0-d input (onnx2tf declares it (None,); tf2onnx wrote a vector)
        "clip_run_time_bound": ([helper.make_node("Clip", ["x", "low", "high"], ["y"])],
                                [("x", "float32", ["N", 3, 4]), ("low", "float32", [])], [("high", np.float32(0.7))]),
        # how ONNX's function bodies write constants (value_float) and casts (CastLike), then a GroupNorm-style
        # InstanceNormalization whose scale is a Constant node
        "constant_forms": ([helper.make_node("Constant", [], ["alpha"], value_float=1.5),
                            helper.make_node("CastLike", ["alpha", "x"], ["scale"]),
                            helper.make_node("Mul", ["x", "scale"], ["scaled"]),
                            helper.make_node("Constant", [], ["gamma"], value_floats=[0.5, 2.0, 1.0]),
                            helper.make_node("Constant", [], ["beta"], value_floats=[0.1, -0.2, 0.3]),
                            helper.make_node("InstanceNormalization", ["scaled", "gamma", "beta"], ["y"])],
                           [("x", "float32", ["N", 3, 5])], []),
        # a 3x3 average counting its pads on 2x2 maps (timm's Inception-v3 at a small input): onnx2tf averaged
        # over the real elements alone, up to 9x too large (rewrites.counted_pads_as_pad)
        "average_pool_counting_pads": ([helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3],
                                                         pads=[1, 1, 1, 1], count_include_pad=1)],
                                       [("x", "float32", ["N", 4, 2, 2])], []),
    }


@pytest.mark.parametrize("target", ["tensorflow", "tensorflow-roundtrip"])
@pytest.mark.parametrize("graph", ["clip_run_time_bound", "constant_forms", "average_pool_counting_pads"])
def test_graphs_onnx2tf_read_otherwise_compute_what_onnxruntime_computes(graph, target, tmp_path):
    from rosetta.convert.targets import get_target

    nodes, inputs, initializers = _graphs()[graph]
    model = _graph_source(tmp_path / "onnx", nodes, inputs, initializers)
    chain = get_target(target).chain
    run_conversion(tmp_path / "onnx", chain[chain.index("onnx"):], tmp_path / target)
    runner = load_runner("onnxruntime" if target == "tensorflow-roundtrip" else "tensorflow", tmp_path / target)
    rng = np.random.default_rng(3)
    feeds = {n: rng.standard_normal([4 if isinstance(d, str) else d for d in s]).astype(d) for n, d, s in inputs}
    np.testing.assert_allclose(runner.predict(feeds)["y"], _run(model, feeds), rtol=1e-5, atol=1e-5)


def test_strict_mode_is_left_out_where_its_search_is_quadratic_in_axis_orders():
    """An Expand of rank 4 (an attention mask) makes onnx2tf build 576 Keras models in strict mode: such a graph is
    converted without it; rank 3 keeps it."""
    from onnx import helper

    from rosetta.convert.onnx.to_tensorflow import strict_mode_affordable

    expand = helper.make_node("Expand", ["x", "shape"], ["y"])
    for rank, affordable in ((3, True), (4, False)):
        model = _one_node(expand, [("x", 1, [1] * rank), ("shape", 7, [rank])])
        model.graph.initializer.append(onnx.numpy_helper.from_array(np.full(rank, 2, np.int64), "shape"))
        assert strict_mode_affordable(model) is affordable


@pytest.mark.parametrize("axis", [1, 2])
def test_inputs_are_read_the_other_way_where_onnx2tfs_model_does_not_give_onnx_runtimes_numbers(axis, tmp_path):
    """A reduction over a (3, 2, 2) input that no channel op reads: kept as it is (the rule's guess), onnx2tf
    reduces the wrong axis; declared channels-first, it computes ONNX's result, and that conversion is kept."""
    from onnx import helper

    from rosetta.manifest import Manifest

    nodes = [helper.make_node("Abs", ["x"], ["magnitude"]),
             helper.make_node("ReduceSum", ["magnitude", "axes"], ["y"], keepdims=1)]
    model = _graph_source(tmp_path / "onnx", nodes, [("x", "float32", [3, 2, 2])], [("axes", np.array([axis]))])
    run_conversion(tmp_path / "onnx", ("onnx", "tensorflow"), tmp_path / "tensorflow")
    options = Manifest.read(tmp_path / "tensorflow").converter["options"]
    assert options.get("inputs_read_otherwise") and options["keep_ncw_or_nchw_or_ncdhw_input_names"] == ["x"]
    feeds = {"x": np.random.default_rng(4).standard_normal((3, 2, 2)).astype(np.float32)}
    np.testing.assert_allclose(load_runner("tensorflow", tmp_path / "tensorflow").predict(feeds)["y"],
                               _run(model, feeds), rtol=1e-5, atol=1e-5)
