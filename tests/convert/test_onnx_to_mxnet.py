"""rosetta's additions to MXNet's ONNX importer (rosetta.convert.onnx.to_mxnet): each small graph converts to
MXNet through rosetta's onnx -> mxnet path and computes there what ONNX Runtime computes."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper

from rosetta.errors import RosettaError
from tests.convert.test_onnx_rewrites import _target_outputs as _mxnet  # converted by rosetta, run in MXNet


def _model(nodes, inputs, outputs, initializers=(), opset=17):
    """inputs and outputs as (name, elem_type, shape), initializers as (name, array)."""
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(*value) for value in inputs],
                              [helper.make_tensor_value_info(*value) for value in outputs],
                              [numpy_helper.from_array(value, name) for name, value in initializers])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def _onnxruntime(model, feeds):
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)


def _check(model, feeds, tmp_path, atol=1e-6):
    for got, want in zip(_mxnet(model, feeds, tmp_path), _onnxruntime(model, feeds)):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want.astype(got.dtype), rtol=1e-5, atol=atol)


def _exported(module, x, tmp_path, dynamic_batch=True):
    """`module` exported as rosetta exports (TorchScript exporter, opset 17), its batch axis dynamic."""
    path = tmp_path / "exported.onnx"
    torch.onnx.export(module.eval(), (torch.from_numpy(x),), str(path), dynamo=False, opset_version=17,
                      input_names=["x"], output_names=["y"], do_constant_folding=True,
                      dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}} if dynamic_batch else None)
    return onnx.load(str(path))


def test_mod_follows_the_divisor_or_with_fmod_the_dividend(tmp_path):
    nodes = [helper.make_node("Mod", ["a", "b"], ["python"]), helper.make_node("Mod", ["x", "y"], ["c"], fmod=1)]
    model = _model(nodes, [("a", TensorProto.INT64, [6]), ("b", TensorProto.INT64, [6]),
                           ("x", TensorProto.FLOAT, [2, 6]), ("y", TensorProto.FLOAT, [6])],
                   [("python", TensorProto.INT64, [6]), ("c", TensorProto.FLOAT, [2, 6])])
    feeds = {"a": np.array([-7, 7, -7, 7, 0, 9]), "b": np.array([3, -3, -3, 3, 5, 4]),
             "x": np.array([[-7.5, 7.5, -7.5, 7.5, 0.0, 2.0], [5.25, -1.0, 3.0, -3.0, 1e3, -0.5]], np.float32),
             "y": np.array([2.0, -2.0, -2.0, 2.0, 3.0, 0.75], np.float32)}
    _check(model, feeds, tmp_path)


def test_fmod_by_zero_is_nan(tmp_path):
    model = _model([helper.make_node("Mod", ["x", "y"], ["c"], fmod=1)],
                   [("x", TensorProto.FLOAT, [3]), ("y", TensorProto.FLOAT, [3])], [("c", TensorProto.FLOAT, [3])])
    feeds = {"x": np.array([1.0, -2.0, 3.5], np.float32), "y": np.array([0.0, 0.0, 2.0], np.float32)}
    got = _mxnet(model, feeds, tmp_path)[0]
    np.testing.assert_array_equal(got, _onnxruntime(model, feeds)[0])  # NaN, NaN, 1.5


def test_expand_by_a_constant_shape_broadcasts_both_ways(tmp_path):
    # x (3, 1) expanded by (2, 1, 4): numpy broadcasting gives (2, 3, 4)
    model = _model([helper.make_node("Expand", ["x", "shape"], ["y"])], [("x", TensorProto.FLOAT, [3, 1])],
                   [("y", TensorProto.FLOAT, None)], [("shape", np.array([2, 1, 4], np.int64))])
    _check(model, {"x": np.random.default_rng(0).normal(size=(3, 1)).astype(np.float32)}, tmp_path)


def test_expand_and_constant_of_shape_by_a_shape_from_the_input(tmp_path):
    # tf2onnx's zero LSTM state: Expand(0, Concat(Shape(x)[0:1], [4])); torch's: ConstantOfShape(Concat(...))
    nodes = [helper.make_node("Shape", ["x"], ["shape"]),
             helper.make_node("Cast", ["shape"], ["shape32"], to=TensorProto.INT32),
             helper.make_node("Slice", ["shape32", "zero", "one", "zero"], ["batch"]),
             helper.make_node("Concat", ["batch", "four"], ["state_shape32"], axis=0),
             helper.make_node("Cast", ["state_shape32"], ["state_shape"], to=TensorProto.INT64),
             helper.make_node("Expand", ["half", "state_shape"], ["expanded"]),
             helper.make_node("Gather", ["shape", "two"], ["steps"], axis=0),
             helper.make_node("Unsqueeze", ["steps", "zero"], ["steps_1d"]),
             helper.make_node("Concat", ["steps_1d", "shape"], ["filled_shape"], axis=0),
             helper.make_node("ConstantOfShape", ["filled_shape"], ["filled"],
                              value=numpy_helper.from_array(np.array([2.5], np.float32))),
             helper.make_node("Add", ["filled", "x"], ["y"])]
    model = _model(nodes, [("x", TensorProto.FLOAT, ["n", 2, 3])],
                   [("expanded", TensorProto.FLOAT, None), ("y", TensorProto.FLOAT, None)],
                   [("zero", np.array([0], np.int64)), ("one", np.array([1], np.int64)), ("two", np.array(2)),
                    ("four", np.array([4], np.int32)), ("half", np.array(0.5, np.float32))])
    _check(model, {"x": np.random.default_rng(1).normal(size=(5, 2, 3)).astype(np.float32)}, tmp_path)


class _ClassToken(torch.nn.Module):
    """ViT's and BEiT's class token: one learned vector per sample, before the patches."""

    def __init__(self):
        super().__init__()
        self.token = torch.nn.Parameter(torch.randn(1, 1, 8, generator=torch.Generator().manual_seed(0)))

    def forward(self, x):
        return torch.cat([self.token.expand(x.shape[0], -1, -1), x], dim=1)


def test_a_class_token_expanded_to_the_run_time_batch(tmp_path):
    """Issue 45: torch.onnx writes expand(batch, -1, -1)'s shape as Where(shape == -1, 1, Reshape(shape, [-1])),
    its condition made constant by rosetta's export (dynamic_batch); the Expand's shape tracer stopped at the
    Reshape and the Where, and MXNet refused the Expand. Run at another batch than the export's."""
    from rosetta.convert.onnx.dynamic_batch import batch_independent_constants

    model = batch_independent_constants(_exported(_ClassToken(), np.zeros((2, 5, 8), np.float32), tmp_path))
    assert "Where" in {node.op_type for node in model.graph.node}
    _check(model, {"x": np.random.default_rng(2).normal(size=(3, 5, 8)).astype(np.float32)}, tmp_path)


class _ClassTokenAfterResidual(_ClassToken):
    """CaiT's class attention: the token expanded to the batch of a residual sum, x + x * 0.5."""

    def forward(self, x):
        x = x + x * 0.5
        return torch.cat([self.token.expand(x.shape[0], -1, -1), x], dim=1)


def test_a_class_token_expanded_to_the_batch_of_a_residual_sum(tmp_path):
    """Issue 45 (timm's CaiT): the batch read by Shape after an Add that same_shape_adds made a RosettaSameShapeAdd,
    an op shape inference does not know: the tracer saw no shape there, and MXNet refused the Expand. The
    rewritten Add keeps its output's shape as value_info."""
    from rosetta.convert.onnx.dynamic_batch import batch_independent_constants

    model = batch_independent_constants(_exported(_ClassTokenAfterResidual(), np.zeros((2, 5, 8), np.float32), tmp_path))
    _check(model, {"x": np.random.default_rng(2).normal(size=(3, 5, 8)).astype(np.float32)}, tmp_path)


def test_int32_casts_of_float_token_ids_keep_mxnet_float(tmp_path):
    # tf2onnx's Embedding index wrap: ids + (ids < 0) * size, through Cast to int32 of a bool
    nodes = [helper.make_node("Cast", ["ids"], ["ids_float"], to=TensorProto.FLOAT),
             helper.make_node("Less", ["ids_float", "zero"], ["negative"]),
             helper.make_node("Not", ["negative"], ["positive"]),
             helper.make_node("Cast", ["negative"], ["negative32"], to=TensorProto.INT32),
             helper.make_node("Cast", ["positive"], ["positive32"], to=TensorProto.INT32),
             helper.make_node("Add", ["ids", "size"], ["wrapped"]),
             helper.make_node("Mul", ["negative32", "wrapped"], ["from_end"]),
             helper.make_node("Mul", ["positive32", "ids"], ["from_start"]),
             helper.make_node("Add", ["from_end", "from_start"], ["index"]),
             helper.make_node("Gather", ["table", "index"], ["y"], axis=0),
             helper.make_node("Cast", ["ratio"], ["truncated"], to=TensorProto.INT32)]
    table = np.random.default_rng(2).normal(size=(10, 3)).astype(np.float32)
    model = _model(nodes, [("ids", TensorProto.INT32, ["n", 4]), ("ratio", TensorProto.FLOAT, [4])],
                   [("y", TensorProto.FLOAT, None), ("truncated", TensorProto.INT32, [4])],
                   [("zero", np.array(0, np.float32)), ("size", np.array(10, np.int32)), ("table", table)])
    feeds = {"ids": np.array([[1, -1, 9, -10], [0, 3, -3, 5]], np.int32),
             "ratio": np.array([-2.7, -0.5, 0.5, 2.7], np.float32)}
    _check(model, feeds, tmp_path)


class _BidirectionalLSTM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(3, 4, num_layers=2, bidirectional=True, batch_first=True)

    def forward(self, x):
        y, (h, c) = self.lstm(x)
        return y + 0 * h.sum() + c.sum()


def test_bidirectional_lstm_with_zero_states_from_the_batch_size(tmp_path):
    torch.manual_seed(0)
    x = np.random.default_rng(3).normal(size=(2, 5, 3)).astype(np.float32)
    model = _exported(_BidirectionalLSTM(), x, tmp_path)
    assert {"LSTM", "ConstantOfShape"} <= {n.op_type for n in model.graph.node}
    _check(model, {"x": np.concatenate([x, x[:1]])}, tmp_path, atol=1e-5)


class _BidirectionalGRU(torch.nn.Module):
    """A 2-layer bidirectional GRU tagger's recurrent part: every step's output of both directions, and the
    last hidden states."""

    def __init__(self):
        super().__init__()
        self.gru = torch.nn.GRU(3, 4, num_layers=2, bidirectional=True, batch_first=True)

    def forward(self, x):
        y, h = self.gru(x)
        return y + h.sum(0)[:, None, :].repeat(1, 1, 2)


def test_bidirectional_gru_matches_onnxruntime(tmp_path):
    """MXNet's fused RNN in both directions, each direction's weights packed after the other's (the converter
    refused any direction but forward)."""
    torch.manual_seed(0)
    x = np.random.default_rng(3).normal(size=(2, 5, 3)).astype(np.float32)
    model = _exported(_BidirectionalGRU(), x, tmp_path)
    assert any(n.op_type == "GRU" and any(a.s == b"bidirectional" for a in n.attribute) for n in model.graph.node)
    _check(model, {"x": np.concatenate([x, x[:1]])}, tmp_path, atol=1e-5)


def _lstm(direction: str, peepholes: bool = False):
    """An ONNX LSTM with its sequence_lens omitted, initial_h given, initial_c omitted; outputs Y, Y_h, Y_c."""
    hidden, inputs, directions = 4, 3, 2 if direction == "bidirectional" else 1
    rng = np.random.default_rng(4)
    shapes = {"W": [directions, 4 * hidden, inputs], "R": [directions, 4 * hidden, hidden],
              "B": [directions, 8 * hidden], "P": [directions, 3 * hidden]}
    weights = [(name, rng.normal(size=shape).astype(np.float32)) for name, shape in shapes.items()
               if peepholes or name != "P"]
    node = helper.make_node("LSTM", ["X", "W", "R", "B", "", "H0", "", "P" if peepholes else ""], ["Y", "Y_h", "Y_c"],
                            hidden_size=hidden, direction=direction)
    nodes = [node] + [helper.make_node("Identity", [name], [f"{name}_out"]) for name in ("Y", "Y_h", "Y_c")]
    return _model(nodes, [("X", TensorProto.FLOAT, [5, "n", inputs]), ("H0", TensorProto.FLOAT, [directions, "n", hidden])],
                  [(f"{name}_out", TensorProto.FLOAT, None) for name in ("Y", "Y_h", "Y_c")], weights)


@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
def test_lstm_with_omitted_inputs_matches_onnxruntime(tmp_path, direction):
    rng = np.random.default_rng(5)
    directions = 2 if direction == "bidirectional" else 1
    feeds = {"X": rng.normal(size=(5, 2, 3)).astype(np.float32),
             "H0": rng.normal(size=(directions, 2, 4)).astype(np.float32)}
    _check(_lstm(direction), feeds, tmp_path, atol=1e-5)


def test_lstm_with_peepholes_is_refused_with_the_reason(tmp_path):
    with pytest.raises(RosettaError, match="LSTM with peepholes"):
        _mxnet(_lstm("forward", peepholes=True), {}, tmp_path)


@pytest.mark.parametrize("op", ["GlobalMaxPool", "GlobalAveragePool"])
@pytest.mark.parametrize("shape", [(2, 3, 7), (2, 3, 4, 5), (2, 3, 4, 5, 2)], ids=["1d", "2d", "3d"])
def test_global_pooling_of_any_rank(tmp_path, shape, op):
    model = _model([helper.make_node(op, ["x"], ["y"])], [("x", TensorProto.FLOAT, list(shape))],
                   [("y", TensorProto.FLOAT, None)])
    _check(model, {"x": np.random.default_rng(6).normal(size=shape).astype(np.float32)}, tmp_path)


def test_gather_by_a_scalar_index_drops_the_axis(tmp_path):
    nodes = [helper.make_node("Gather", ["x", "last"], ["y"], axis=0), helper.make_node("Gather", ["x", "one"], ["z"], axis=1)]
    model = _model(nodes, [("x", TensorProto.FLOAT, [4, 3, 2])],
                   [("y", TensorProto.FLOAT, None), ("z", TensorProto.FLOAT, None)],
                   [("last", np.array(-1, np.int64)), ("one", np.array(1, np.int64))])
    _check(model, {"x": np.random.default_rng(7).normal(size=(4, 3, 2)).astype(np.float32)}, tmp_path)


def test_softplus_and_mish_keep_the_small_values_of_very_negative_inputs(tmp_path):
    """MXNet's Activation(softrelu), the importer's Softplus, computes log(1 + exp(x)), which rounds to 0 below
    x = -17 and loses digits long before (Mish_expanded FAILed by 9e-6 where the output is 1e-5); rosetta's
    converters compute relu(x) + log1p(exp(-|x|)). Mish (opset 18) has no importer entry at all."""
    x = np.concatenate([np.linspace(-30, 30, 61), [-20.5, -9.75, 0.0, 1e-4]]).astype(np.float32)
    model = _model([helper.make_node("Softplus", ["x"], ["soft"]), helper.make_node("Mish", ["x"], ["mish"])],
                   [("x", TensorProto.FLOAT, list(x.shape))],
                   [("soft", TensorProto.FLOAT, list(x.shape)), ("mish", TensorProto.FLOAT, list(x.shape))], opset=18)
    for got, want in zip(_mxnet(model, {"x": x}, tmp_path), _onnxruntime(model, {"x": x})):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=0)  # relative, down to the smallest outputs


def test_lp_normalization_of_a_zero_vector_stays_zero(tmp_path):
    """ONNX's reference divides by a norm of 0 taken as 1 (as ONNX Runtime): MXNet's x / norm gave NaN."""
    nodes = [helper.make_node("LpNormalization", ["x"], ["l2"], axis=0),
             helper.make_node("LpNormalization", ["x"], ["l1"], axis=1, p=1)]
    x = np.array([[0.0, 1.0, -2.0], [0.0, 0.0, 0.0], [0.0, 3.0, 0.5]], np.float32)
    model = _model(nodes, [("x", TensorProto.FLOAT, [3, 3])], [("l2", TensorProto.FLOAT, [3, 3]), ("l1", TensorProto.FLOAT, [3, 3])])
    _check(model, {"x": x}, tmp_path)


class _CausalConv1d(torch.nn.Module):
    """A WaveNet layer: left padding by the dilation (torch.onnx writes Pad with its value omitted), then a dilated
    Conv1d: MXNet's pad takes 4-D and 5-D tensors only, and the importer looks the omitted value up by name."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv1d(3, 4, 2, dilation=2)

    def forward(self, x):
        return self.conv(torch.nn.functional.pad(x, (2, 0)))


def test_a_causal_pad_of_a_signal_converts(tmp_path):
    torch.manual_seed(0)
    x = np.random.default_rng(8).normal(size=(2, 3, 9)).astype(np.float32)
    model = _exported(_CausalConv1d(), x, tmp_path)
    assert any(n.op_type == "Pad" for n in model.graph.node)
    _check(model, {"x": x}, tmp_path, atol=1e-5)


# ---- the registry: every op the bridge registers has a case -----------------------------------------------------

def _x(*shape, seed: int = 0, positive: bool = False) -> np.ndarray:
    values = np.random.default_rng(seed).normal(size=shape).astype(np.float32)
    return np.abs(values) + 0.1 if positive else values


def _one(op: str, feeds: dict, initializers: dict | None = None, outputs: int = 1, opset: int = 17, **attributes):
    """A model of one `op` node, its inputs the graph inputs (`feeds`) then the initializers; (model, feeds)."""
    initializers = initializers or {}
    names = [f"y{i}" for i in range(outputs)]
    node = helper.make_node(op, list(feeds) + list(initializers), names, **attributes)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype),
                                                                          list(v.shape)) for n, v in feeds.items()],
                              [helper.make_empty_tensor_value_info(n) for n in names],
                              [numpy_helper.from_array(np.asarray(v), n) for n, v in initializers.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
    return onnx.shape_inference.infer_shapes(model), feeds  # the outputs' types, which the manifest records


def _recurrent(op: str, gates: int):
    hidden, size = 4, 3
    weights = {"W": _x(1, gates * hidden, size, seed=1), "R": _x(1, gates * hidden, hidden, seed=2),
               "B": _x(1, 2 * gates * hidden, seed=3)}
    extra = {"linear_before_reset": 1} if op == "GRU" else {}
    return _one(op, {"X": _x(5, 2, size)}, weights, outputs=2, hidden_size=hidden, **extra)


_AXES = {"axes": np.asarray([1], np.int64)}
# op registered -> its case (model, feeds); the Rosetta* ops are what the bridge's own rewrites write
REGISTRY_CASES = {
    "ArgMax": lambda: _one("ArgMax", {"x": _x(2, 5)}, axis=1, keepdims=0),
    "ArgMin": lambda: _one("ArgMin", {"x": _x(2, 5, 3)}, axis=1),
    "AveragePool": lambda: _one("AveragePool", {"x": _x(1, 2, 5, 5)}, kernel_shape=[3, 3], strides=[2, 2],
                                pads=[1, 1, 1, 1]),
    "BatchNormalization": lambda: _one("BatchNormalization", {"x": _x(2, 3, 4, 4)},
                                       {"s": _x(3, seed=1), "b": _x(3, seed=2), "m": _x(3, seed=3),
                                        "v": _x(3, seed=4, positive=True)}),
    "Cast": lambda: _one("Cast", {"x": np.round(_x(2, 3) * 5)}, to=TensorProto.INT32),
    "Clip": lambda: _one("Clip", {"x": _x(2, 5)}, {"lo": np.float32(-0.5), "hi": np.float32(0.7)}),
    # issue 45: CumSum (position ids of Hugging Face decoders), reversed and exclusive
    "CumSum": lambda: _one("CumSum", {"x": _x(2, 5)}, {"axis": np.asarray(1, np.int64)}, exclusive=1, reverse=1),
    # a tensor clamped by a scalar (Apertus' xIELU): the importer's `minimum`/`maximum` needed equal shapes
    "Min": lambda: _one("Min", {"x": _x(2, 3, 5)}, {"bound": np.asarray([0.2], np.float32)}),
    "Max": lambda: _one("Max", {"x": _x(2, 3, 5), "y": _x(3, 1, seed=1)}, {"z": np.asarray(-0.3, np.float32)}),
    # a Conv without the optional kernel_shape (MXNet's importer raised KeyError 'kernel'): taken from the weight
    "Conv": lambda: _one("Conv", {"x": _x(1, 2, 5, 5)}, {"w": _x(3, 2, 3, 3, seed=1)}, pads=[1, 0, 1, 0], strides=[2, 1]),
    "ConvTranspose": lambda: _one("ConvTranspose", {"x": _x(1, 2, 4, 4)}, {"w": _x(2, 3, 3, 3, seed=1)},
                                  strides=[2, 2], pads=[1, 1, 1, 1]),
    "Erf": lambda: _one("Erf", {"x": _x(2, 5)}),
    "GRU": lambda: _recurrent("GRU", 3),
    "LSTM": lambda: _recurrent("LSTM", 4),
    "Gather": lambda: _one("Gather", {"x": _x(4, 3)}, {"i": np.asarray([2, 0], np.int64)}),
    "GlobalAveragePool": lambda: _one("GlobalAveragePool", {"x": _x(2, 3, 4, 5)}),
    "GlobalMaxPool": lambda: _one("GlobalMaxPool", {"x": _x(2, 3, 4, 5)}),
    "HardSwish": lambda: _one("HardSwish", {"x": _x(2, 5) * 4}),
    "LRN": lambda: _one("LRN", {"x": _x(1, 5, 3, 3)}, size=3),
    "LpNormalization": lambda: _one("LpNormalization", {"x": _x(2, 3)}, axis=-1, p=2),
    "MatMul": lambda: _one("MatMul", {"x": _x(2, 3)}, {"w": _x(3, 4, seed=1)}),
    # issue 45: without its optional C (timm's HaloNet), which MXNet's own entry read and raised IndexError on
    "Gemm": lambda: _one("Gemm", {"x": _x(2, 3)}, {"w": _x(4, 3, seed=1)}, transB=1, alpha=0.5),
    "MaxPool": lambda: _one("MaxPool", {"x": _x(1, 2, 5, 5)}, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
    "Mish": lambda: _one("Mish", {"x": _x(2, 5)}, opset=18),
    "Mod": lambda: _one("Mod", {"x": _x(2, 5) * 5}, {"d": np.float32(1.5)}, fmod=1),
    "PRelu": lambda: _one("PRelu", {"x": _x(2, 3, 4, 4)}, {"slope": _x(3, 1, 1, seed=1)}),
    "Pad": lambda: _one("Pad", {"x": _x(1, 2, 3, 3)}, {"pads": np.asarray([0, 0, 1, 0, 0, 0, 2, 1], np.int64),
                                                       "v": np.float32(1.5)}),
    **{op: (lambda op=op: _one(op, {"x": _x(2, 3, 4, positive=True)}, _AXES, keepdims=0, opset=18))
       for op in ("ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin",
                  "ReduceProd", "ReduceSum", "ReduceSumSquare")},
    "Relu": lambda: _one("Relu", {"x": _x(2, 5)}),
    "RosettaExpand": lambda: _one("Expand", {"x": _x(3, 1)}, {"shape": np.asarray([2, 3, 4], np.int64)}),
    "RosettaIntegerDiv": lambda: _one("Div", {"x": np.asarray([[7, -7, 9]], np.int64)}, {"d": np.asarray([2], np.int64)}),
    "RosettaSameShapeAdd": lambda: _one("Add", {"x": _x(2, 3), "y": _x(2, 3, seed=1)}),
    "Slice": lambda: _one("Slice", {"x": _x(3, 4)}, {"s": np.asarray([1], np.int64), "e": np.asarray([3], np.int64),
                                                     "a": np.asarray([1], np.int64)}),
    "Softplus": lambda: _one("Softplus", {"x": _x(2, 5) * 3}),
    "Split": lambda: _one("Split", {"x": _x(2, 6)}, {"split": np.asarray([2, 4], np.int64)}, outputs=2, axis=1),
    "ThresholdedRelu": lambda: _one("ThresholdedRelu", {"x": _x(2, 5) * 2}, alpha=0.5),
    "Tile": lambda: _one("Tile", {"x": _x(2, 3)}, {"repeats": np.asarray([2, 1], np.int64)}),
    # issue 45: a mixture-of-experts router's expert choice (AFMoE), the smallest along a middle axis here
    "TopK": lambda: _one("TopK", {"x": _x(2, 5, 3)}, {"k": np.asarray([2], np.int64)}, outputs=2, axis=1, largest=0),
    "Where": lambda: _where(),
    "RosettaAxisRange": lambda: _axis_range(),
    "OneHot": lambda: _one("OneHot", {"i": np.array([[0, 3, -1], [5, 2, -4]], np.int64)},
                           {"depth": np.array(4, np.int64), "values": np.array([0.5, 2.0], np.float32)}),
}


def _axis_range():
    """Range(0, batch, 1), which rewrites.axis_ranges writes as RosettaAxisRange."""
    nodes = [helper.make_node("Shape", ["x"], ["shape"]), helper.make_node("Gather", ["shape", "zero"], ["n"]),
             helper.make_node("Range", ["zero", "n", "one"], ["rows"]), helper.make_node("Cast", ["rows"], ["y"], to=1)]
    model = _model(nodes, [("x", TensorProto.FLOAT, ["N", 3])], [("y", TensorProto.FLOAT, ["N"])],
                   [("zero", np.array(0, np.int64)), ("one", np.array(1, np.int64))])
    return model, {"x": _x(3, 3)}


def _where():
    """Where of a condition computed in the graph (MXNet takes no boolean input)."""
    nodes = [helper.make_node("Greater", ["x", "y"], ["c"]), helper.make_node("Where", ["c", "x", "y"], ["z"])]
    model = _model(nodes, [("x", TensorProto.FLOAT, [2, 3]), ("y", TensorProto.FLOAT, [2, 3])],
                   [("z", TensorProto.FLOAT, [2, 3])])
    return model, {"x": _x(2, 3), "y": _x(2, 3, seed=1)}


@pytest.mark.parametrize("count_include_pad", [0, 1])
@pytest.mark.parametrize("shape, kernel, pads", [((1, 2, 6, 5), [3, 2], [0, 1, 2, 0]),  # SAME_UPPER-like, 2-D
                                                 ((1, 2, 4, 5, 5), [2, 3, 3], [1, 0, 0, 0, 2, 1])])  # 3-D
def test_an_average_pool_whose_pads_differ_at_the_two_ends_computes_what_onnxruntime_computes(
        shape, kernel, pads, count_include_pad, tmp_path):
    """Issue 45: AveragePool with pads that differ at the two ends (auto_pad SAME_* made explicit) was refused;
    padded first, then pooled, the count of real elements kept where count_include_pad is 0."""
    model, feeds = _one("AveragePool", {"x": _x(*shape)}, kernel_shape=kernel, strides=[2] * len(kernel), pads=pads,
                        count_include_pad=count_include_pad)
    _check(model, feeds, tmp_path, atol=1e-5)


@pytest.mark.parametrize("shape, pads", [((2, 5, 4, 3), [0, 1, 0, 0, 0, 2, 3, 0]),  # channels-last H and W (DaViT)
                                         ((2, 4, 3), [0, 2, 0, 0, 1, 0]),  # a 3-D tensor's middle axis
                                         ((6, 5), [0, 0, 0, 4]), ((6, 5), [1, 2, 0, 3]),  # 2-D rows (HaloNet)
                                         ((2, 3, 4, 2, 2), [0, 0, 1, 0, 0, 0, 0, 2, 0, 1])])
def test_a_pad_of_axes_mxnet_does_not_pad_computes_what_onnxruntime_computes(shape, pads, tmp_path):
    """Issue 45: MXNet's pad pads the axes after the first two only; timm's DaViT and Swin pad a channels-last
    map's H and W (refused before). The padded axes are moved last and back."""
    model, feeds = _one("Pad", {"x": _x(*shape)}, {"pads": np.asarray(pads, np.int64), "v": np.float32(0.5)})
    _check(model, feeds, tmp_path, atol=1e-6)


def test_every_registered_op_has_a_case():
    from rosetta.convert.onnx.to_mxnet.registry import registered

    assert set(registered()) == set(REGISTRY_CASES)


@pytest.mark.parametrize("op", sorted(REGISTRY_CASES))
def test_each_registered_op_computes_what_onnxruntime_computes(op, tmp_path):
    from rosetta.convert.onnx.to_mxnet import rewrite_for_mxnet

    model, feeds = REGISTRY_CASES[op]()
    rewritten = rewrite_for_mxnet(onnx.load_from_string(model.SerializeToString()))
    assert op in {node.op_type for node in rewritten.graph.node}, "the case does not reach this converter"
    _check(model, feeds, tmp_path, atol=1e-5)


class _MultiQueryAttention(torch.nn.Module):
    """timm's MobileNetV5 attention: four query heads against one shared key and value head, by broadcasting."""

    def __init__(self):
        super().__init__()
        self.q, self.kv = torch.nn.Linear(8, 16), torch.nn.Linear(8, 8)

    def forward(self, x):
        q = self.q(x).reshape(-1, 5, 4, 4).transpose(1, 2)  # (N, 4, 5, 4)
        k, v = self.kv(x).reshape(-1, 1, 5, 8).split(4, dim=-1)  # (N, 1, 5, 4) each
        return torch.softmax(q @ k.transpose(-1, -2), dim=-1) @ v


def test_a_matmul_that_broadcasts_one_head_to_many_computes_what_onnxruntime_computes(tmp_path):
    """MXNet's MatMul takes the same batch axes on both sides; the shared head is tiled to the query heads
    (matmul_batch_broadcast_as_tile), at another batch than the export's."""
    model = _exported(_MultiQueryAttention(), np.zeros((2, 5, 8), np.float32), tmp_path)
    _check(model, {"x": np.random.default_rng(3).normal(size=(3, 5, 8)).astype(np.float32)}, tmp_path, atol=1e-5)


class _ReshapeIdioms(torch.nn.Module):
    """Reshapes whose target torch.onnx computes at run time from the batch: `b, c, h, w = y.shape` read from
    the very tensor, the input's batch read from another tensor beside an explicit -1, batch x channels folded
    into one axis, and attention's `B, N, C = x.shape` then `qkv(x).reshape(B, N, 3, heads, d)`."""

    def __init__(self):
        super().__init__()
        self.conv, self.fc = torch.nn.Conv2d(3, 4, 3), torch.nn.Linear(9, 5)
        self.qkv, self.proj = torch.nn.Linear(4, 12), torch.nn.Linear(4, 4)

    def forward(self, x):
        y = self.conv(x)  # (N, 4, 3, 3)
        b, c, h, w = y.shape
        tokens = y.reshape(b, c, h * w).transpose(1, 2)  # (N, 9, 4)
        tokens = tokens.reshape(x.shape[0], -1, c)  # the batch of the input, beside -1
        B, N, C = tokens.shape
        q, k, v = self.qkv(tokens).reshape(B, N, 3, 2, C // 2).permute(2, 0, 3, 1, 4)
        mixed = (torch.softmax(q @ k.transpose(-1, -2), dim=-1) @ v).transpose(1, 2).reshape(B, N, C)
        folded = self.proj(mixed).transpose(1, 2).reshape(b * c, h * w)  # batch x channels in one axis
        return self.fc(folded).reshape(b, c, 5)


def test_reshapes_to_a_run_time_batch_convert_as_torch_onnx_writes_them(tmp_path):
    """MXNet's Reshape takes a constant shape only ("KeyError: '/Concat'" from its importer); the Keras mapper
    needs one too. Each run-time target becomes a constant (constant_reshape_shapes): 0 where it copies an axis
    of the reshaped tensor, -1 for the one element known only at run time. Both compute what ONNX Runtime does
    at a batch other than the export's."""
    from rosetta.convert.onnx.to_keras import onnx_to_keras_model
    from rosetta.frameworks.keras import import_keras

    torch.manual_seed(0)
    model = _exported(_ReshapeIdioms(), np.zeros((2, 3, 5, 5), np.float32), tmp_path)
    assert not any(n.op_type == "Reshape" and n.input[1] in {i.name for i in model.graph.initializer}
                   for n in model.graph.node)  # every target computed at run time, as exported
    x = np.random.default_rng(5).normal(size=(3, 3, 5, 5)).astype(np.float32)
    _check(model, {"x": x}, tmp_path, atol=1e-5)
    keras_model = onnx_to_keras_model(onnx.ModelProto.FromString(model.SerializeToString()), import_keras())
    np.testing.assert_allclose(np.asarray(keras_model(x, training=False)), _onnxruntime(model, {"x": x})[0],
                               rtol=1e-5, atol=1e-5)
