from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper

from rosetta.errors import RosettaError
from rosetta.frameworks.onnx2torch import build_module, import_onnx2torch


def test_onnx2torch_imports_without_torchvision_and_leaves_no_stand_in():
    import_onnx2torch()
    assert "torchvision" not in sys.modules or hasattr(sys.modules["torchvision"], "__file__")


def _gru_model(tmp_path, linear_before_reset: int):
    hidden, inputs = 4, 3
    rng = np.random.default_rng(0)
    weights = [helper.make_tensor(name, TensorProto.FLOAT, shape, rng.normal(size=shape).astype(np.float32).ravel())
               for name, shape in (("W", [1, 3 * hidden, inputs]), ("R", [1, 3 * hidden, hidden]), ("B", [1, 6 * hidden]))]
    node = helper.make_node("GRU", ["X", "W", "R", "B"], ["Y", "Y_h"], hidden_size=hidden,
                            linear_before_reset=linear_before_reset, name="gru")
    # Graph outputs through Identity: onnx2torch returns a multi-output node's whole tuple for a graph output.
    nodes = [node, helper.make_node("Identity", ["Y"], ["sequence"]), helper.make_node("Identity", ["Y_h"], ["last"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [5, 2, inputs])],
                              [helper.make_tensor_value_info("sequence", TensorProto.FLOAT, [5, 1, 2, hidden]),
                               helper.make_tensor_value_info("last", TensorProto.FLOAT, [1, 2, hidden])], weights)
    path = tmp_path / "gru.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=8), str(path))
    return path


def test_gru_converter_matches_onnxruntime(tmp_path):
    import onnxruntime as ort

    path = _gru_model(tmp_path, 1)
    x = np.random.default_rng(1).normal(size=(5, 2, 3)).astype(np.float32)
    expected = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"X": x})
    with torch.no_grad():
        actual = build_module(path)(torch.from_numpy(x))
    for got, want in zip(actual, expected):
        np.testing.assert_allclose(got.numpy(), want, atol=1e-6)


def test_gru_converter_refuses_linear_before_reset_0_with_the_reason(tmp_path):
    with pytest.raises(RosettaError, match="GRU node 'gru'.*linear_before_reset=0"):
        build_module(_gru_model(tmp_path, 0))


class _TwoLayerBidirectionalLSTM(torch.nn.Module):
    def __init__(self, batch_first: bool) -> None:
        super().__init__()
        self.lstm = torch.nn.LSTM(3, 4, num_layers=2, bidirectional=True, batch_first=batch_first)

    def forward(self, x):
        y, (h, c) = self.lstm(x)
        return y, h, c


@pytest.mark.parametrize("batch_first", [False, True], ids=["time_major", "batch_first"])
def test_lstm_exported_by_rosetta_matches_the_torch_module(tmp_path, batch_first):
    from rosetta.convert.onnx.from_torch import TorchSource
    from rosetta.convert.store import run_conversion
    from rosetta.frameworks import load_runner
    from rosetta.models.registry import TensorSpec

    torch.manual_seed(0)
    module = _TwoLayerBidirectionalLSTM(batch_first).eval()
    # rosetta's export makes axis 0 dynamic: the batch, or the time steps of a time-major input
    x = np.random.default_rng(2).normal(size=(2, 5, 3) if batch_first else (5, 2, 3)).astype(np.float32)
    inputs = (TensorSpec("x", (None, *x.shape[1:]), "float32"),)
    outputs = tuple(TensorSpec(name, (None,), "float32") for name in ("y", "h", "c"))
    folder = tmp_path / "torch"
    run_conversion(TorchSource(module, inputs, outputs, {"model": "lstm"}), ("torch", "onnx", "torch"), folder)
    assert [n.op_type for n in onnx.load(str(folder / "model" / "model.onnx")).graph.node].count("LSTM") == 2

    actual = load_runner("torch", folder).predict({"x": x})
    with torch.no_grad():
        expected = module(torch.from_numpy(x))
    for name, want in zip(("y", "h", "c"), expected):
        np.testing.assert_allclose(actual[name], want.numpy(), atol=1e-5)


def _lstm_model(tmp_path, layout: int, peepholes: bool = False):
    """A bidirectional ONNX LSTM given initial_h only (its initial_c omitted: zeros), graph outputs Y, Y_h, Y_c."""
    hidden, inputs, steps, batch = 4, 3, 5, 2
    rng = np.random.default_rng(0)
    shapes = {"W": [2, 4 * hidden, inputs], "R": [2, 4 * hidden, hidden], "B": [2, 8 * hidden], "P": [2, 3 * hidden]}
    names = ["W", "R", "B", "P"] if peepholes else ["W", "R", "B"]
    weights = [helper.make_tensor(name, TensorProto.FLOAT, shapes[name],
                                  rng.normal(size=shapes[name]).astype(np.float32).ravel()) for name in names]
    node = helper.make_node("LSTM", ["X", "W", "R", "B", "", "H0", "", "P" if peepholes else ""], ["Y", "Y_h", "Y_c"],
                            hidden_size=hidden, direction="bidirectional", layout=layout, name="lstm")
    nodes = [node] + [helper.make_node("Identity", [name], [f"{name}_out"]) for name in ("Y", "Y_h", "Y_c")]
    x, h0 = ([batch, steps, inputs], [batch, 2, hidden]) if layout else ([steps, batch, inputs], [2, batch, hidden])
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, x),
                                           helper.make_tensor_value_info("H0", TensorProto.FLOAT, h0)],
                              [helper.make_tensor_value_info(f"{name}_out", TensorProto.FLOAT, None)
                               for name in ("Y", "Y_h", "Y_c")], weights)
    path = tmp_path / f"lstm-{layout}.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], ir_version=8), str(path))
    return path


def test_lstm_converter_reads_layout_1_and_a_missing_initial_c(tmp_path):
    import onnxruntime as ort

    rng = np.random.default_rng(1)
    x, h0 = rng.normal(size=(2, 5, 3)).astype(np.float32), rng.normal(size=(2, 2, 4)).astype(np.float32)
    # ONNX Runtime has no layout=1 LSTM: the reference is the same LSTM with layout=0 on transposed tensors
    session = ort.InferenceSession(str(_lstm_model(tmp_path, 0)), providers=["CPUExecutionProvider"])
    y, y_h, y_c = session.run(None, {"X": x.transpose(1, 0, 2), "H0": h0.transpose(1, 0, 2)})
    with torch.no_grad():
        actual = build_module(_lstm_model(tmp_path, 1))(torch.from_numpy(x), torch.from_numpy(h0))
    for got, want in zip(actual, (y.transpose(2, 0, 1, 3), y_h.transpose(1, 0, 2), y_c.transpose(1, 0, 2))):
        np.testing.assert_allclose(got.numpy(), want, atol=1e-5)


def test_lstm_converter_refuses_peepholes_with_the_reason(tmp_path):
    with pytest.raises(RosettaError, match="LSTM node 'lstm'.*peepholes"):
        build_module(_lstm_model(tmp_path, 0, peepholes=True))


class _TokenMixing(torch.nn.Module):
    """An MLP-mixer block: LayerNorm over an axis that the exported Reshape (computed from Shape) leaves symbolic."""

    def __init__(self):
        super().__init__()
        self.norm, self.mix = torch.nn.LayerNorm(6), torch.nn.Linear(4, 4)

    def forward(self, x):  # (N, 6, 2, 2) -> patches (N, 6, 4): the exporter computes the shape, from Shape
        return self.mix(self.norm(x.flatten(2).transpose(1, 2)).transpose(1, 2))


def test_layer_norm_after_a_transpose_takes_its_shape_from_the_scale(tmp_path):
    from rosetta.convert.onnx.from_torch import TorchSource
    from rosetta.convert.store import run_conversion
    from rosetta.frameworks import load_runner
    from rosetta.models.registry import TensorSpec

    torch.manual_seed(0)
    module = _TokenMixing().eval()
    with torch.no_grad():
        module.norm.weight.uniform_(0.5, 1.5)
    x = np.random.default_rng(0).normal(size=(3, 6, 2, 2)).astype(np.float32)
    folder = tmp_path / "torch"
    run_conversion(TorchSource(module, (TensorSpec("x", (None, 6, 2, 2), "float32"),),
                               (TensorSpec("y", (None, 6, 4), "float32"),), {"model": "mixer"}),
                   ("torch", "onnx", "torch"), folder, {"opset": 17})
    assert "LayerNormalization" in [n.op_type for n in onnx.load(str(folder / "model" / "model.onnx")).graph.node]
    with torch.no_grad():
        np.testing.assert_allclose(load_runner("torch", folder).predict({"x": x})["y"],
                                   module(torch.from_numpy(x)).numpy(), atol=1e-5)


@pytest.mark.parametrize("shape", [(2, 3, 7), (2, 3, 4, 5)], ids=["1d", "2d"])
def test_global_max_pool_converter_matches_onnxruntime(tmp_path, shape):
    import onnxruntime as ort

    graph = helper.make_graph([helper.make_node("GlobalMaxPool", ["X"], ["Y"])], "g",
                              [helper.make_tensor_value_info("X", TensorProto.FLOAT, list(shape))],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)])
    path = tmp_path / "global_max_pool.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    x = np.random.default_rng(0).normal(size=shape).astype(np.float32)
    (expected,) = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"X": x})
    with torch.no_grad():
        actual = build_module(path)(torch.from_numpy(x))
    assert actual.shape == expected.shape
    np.testing.assert_array_equal(actual.numpy(), expected)


def test_each_graph_output_of_a_multi_output_node_is_its_own_value(tmp_path):
    """onnx2torch returns one value per graph-output node: TopK's whole (values, indices) tuple where one of
    them is a graph output, one value where both are. Each graph output must be its own tensor, in order."""
    import onnxruntime as ort

    nodes = [helper.make_node("TopK", ["X", "K"], ["values", "indices"], axis=1),
             helper.make_node("Relu", ["X"], ["relu"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 6])],
                              [helper.make_tensor_value_info("indices", TensorProto.INT64, [2, 3]),
                               helper.make_tensor_value_info("relu", TensorProto.FLOAT, [2, 6]),
                               helper.make_tensor_value_info("values", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor("K", TensorProto.INT64, [1], [3])])
    path = tmp_path / "topk.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), str(path))
    x = np.random.default_rng(0).standard_normal((2, 6)).astype(np.float32)
    expected = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"X": x})
    got = build_module(path)(torch.from_numpy(x))
    assert len(got) == 3
    for value, wanted in zip(got, expected):
        np.testing.assert_array_equal(value.numpy(), wanted)


@pytest.mark.parametrize("ratio_from", ["initializer", "constant node"])
def test_a_constant_ratio_dropout_is_an_nn_dropout_of_that_rate(tmp_path, ratio_from):
    """onnx2torch's own opset-12 Dropout takes its ratio at run time (no rate to read or turn off); with a
    constant ratio and no training_mode rosetta makes it torch.nn.Dropout(p): identity in eval, dropping that
    share in train mode. With training_mode given, onnx2torch's own converter stays."""
    ratio = helper.make_tensor("ratio", TensorProto.FLOAT, [], [0.3])
    nodes = [helper.make_node("Dropout", ["x", "ratio"], ["y"], name="drop")]
    if ratio_from == "constant node":
        nodes.insert(0, helper.make_node("Constant", [], ["ratio"], value=ratio))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 1000])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 1000])],
                              [ratio] if ratio_from == "initializer" else [])
    path = tmp_path / "dropout.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), str(path))
    module = build_module(path)
    dropouts = [m for m in module.modules() if isinstance(m, torch.nn.Dropout)]
    assert [round(m.p, 6) for m in dropouts] == [0.3]
    x = torch.ones(4, 1000)
    assert torch.equal(module.eval()(x), x)
    dropped = float((module.train()(x) == 0).float().mean())
    assert 0.25 < dropped < 0.35

    graph.node[-1].input.append("mode")
    graph.initializer.append(helper.make_tensor("mode", TensorProto.BOOL, [], [True]))
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), str(path))
    assert not any(isinstance(m, torch.nn.Dropout) for m in build_module(path).modules())


def _zero_state_model(tmp_path, opset: int, shape_from: str = "input") -> Path:
    """x (N, T, 3) -> the zeros (1, N, 4) that torch's exporter writes for a GRU's initial state: Shape ->
    Gather(0) -> Unsqueeze -> Concat([1], N, [4]) -> ConstantOfShape; or with `shape_from` "graph input", a
    shape fed at run time."""
    constants = [helper.make_tensor(name, TensorProto.INT64, dims, values)
                 for name, dims, values in (("index", [], [0]), ("one", [1], [1]), ("four", [1], [4]), ("axes", [1], [0]))]
    unsqueeze = (helper.make_node("Unsqueeze", ["n", "axes"], ["n1"]) if opset >= 13
                 else helper.make_node("Unsqueeze", ["n"], ["n1"], axes=[0]))
    nodes = [helper.make_node("Shape", ["x"], ["shape"]), helper.make_node("Gather", ["shape", "index"], ["n"], axis=0),
             unsqueeze, helper.make_node("Concat", ["one", "n1", "four"], ["size"], axis=0),
             helper.make_node("ConstantOfShape", ["size" if shape_from == "input" else "s"], ["zeros"],
                              value=helper.make_tensor("value", TensorProto.FLOAT, [1], [0.0]))]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 5, 3])]
    if shape_from != "input":
        inputs.append(helper.make_tensor_value_info("s", TensorProto.INT64, [3]))
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("zeros", TensorProto.FLOAT, None)],
                              constants if opset >= 13 else constants[:3])
    path = tmp_path / "zeros.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8), str(path))
    return path


@pytest.mark.parametrize("opset", [11, 14])
def test_a_constant_of_shape_from_the_inputs_shape_compiles(tmp_path, opset):
    """onnx2torch's ConstantOfShape builds torch.Size from a run-time tensor, which Dynamo cannot trace (the GRU
    copy's FAIL under --compile) and which a GPU reads back every step: rosetta's takes the sizes from the
    input's .shape, so the module compiles, follows the batch size, and no Shape node is left to run."""
    module = build_module(_zero_state_model(tmp_path, opset))
    assert not [node for node in module.graph.nodes if node.op == "call_module"
                and type(module.get_submodule(node.target)).__name__ == "OnnxShape"]
    compiled = torch.compile(module, backend="eager", dynamic=True)  # Dynamo's tracing is what failed
    for batch in (2, 7):
        zeros = compiled(torch.ones(batch, 5, 3))
        assert zeros.shape == (1, batch, 4) and zeros.dtype == torch.float32 and not zeros.any()


def test_a_constant_of_shape_from_a_run_time_tensor_keeps_onnx2torchs_converter(tmp_path):
    module = build_module(_zero_state_model(tmp_path, 14, shape_from="graph input"))
    assert module(torch.ones(2, 5, 3), torch.tensor([2, 3, 1])).shape == (2, 3, 1)


def test_constant_indices_and_axes_are_python_ints_not_tensors_read_back_every_call(tmp_path):
    """The GRU copy's last step: Gather of the constant index -1 and Squeeze of constant axes. onnx2torch keeps
    both as tensors, which torch reads back from the device at every call (a host sync a CUDA graph cannot hold);
    rosetta's converters hold them as ints, with the same result."""
    constant = lambda name, values, dims: helper.make_node(  # noqa: E731
        "Constant", [], [name], value=helper.make_tensor(name, TensorProto.INT64, dims, values))
    nodes = [constant("last", [-1], []), constant("axes", [1], [1]),
             helper.make_node("Gather", ["x", "last"], ["step"], axis=0),
             helper.make_node("Squeeze", ["step", "axes"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5, 2, 1, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    path = tmp_path / "last_step.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), str(path))
    module = build_module(path)
    kinds = {type(module.get_submodule(node.target)).__name__ for node in module.graph.nodes if node.op == "call_module"}
    assert kinds == {"OnnxSelect", "OnnxSqueezeStaticAxes"}  # the Constant nodes are no longer read
    x = torch.randn(5, 2, 1, 3)
    assert torch.equal(module(x), x[-1, :, 0, :])


@pytest.mark.parametrize("opset", [13, 19, 21, 25])
def test_cast_of_every_later_opset_converts_and_a_float8_target_is_refused(tmp_path, opset):
    """Cast gained saturate (19) and round_mode (24), which apply to float8 targets only: onnx2torch's Cast-13
    converter serves every later opset (an opset-19 model's Cast had no converter), and a float8 target is still
    refused (onnx2torch maps it to no torch dtype)."""
    def cast_model(to: int):
        graph = helper.make_graph([helper.make_node("Cast", ["x"], ["y"], to=to)], "g",
                                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                                  [helper.make_tensor_value_info("y", to, [2, 3])])
        path = tmp_path / f"cast-{to}.onnx"
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10), str(path))
        return path

    x = torch.tensor([[0.5, -1.5, 2.25], [3.0, -0.0, 7.75]])
    assert torch.equal(build_module(cast_model(TensorProto.DOUBLE))(x), x.double())
    if opset >= 19:
        with pytest.raises(RosettaError, match="FLOAT8E4M3FN|17"):
            build_module(cast_model(TensorProto.FLOAT8E4M3FN))
