"""The torch bridge's registry drives its tests: every converter registered (op, since_version) has a case, a
one-node model of an opset whose schema of that op starts at that version, converted by onnx2torch with rosetta's
converters installed and compared with ONNX Runtime (timm's tests over list_models(), to_keras's over its
registry)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
import torch
from onnx import helper, numpy_helper

from rosetta.errors import RosettaError
from rosetta.frameworks.onnx2torch import build_module

RNG = np.random.default_rng(0)


def _f(*shape, positive: bool = False) -> np.ndarray:
    values = RNG.normal(size=shape).astype(np.float32)
    return np.abs(values) + 0.1 if positive else values


def _i(*values) -> np.ndarray:
    return np.asarray(values, np.int64)


def _recurrent(op: str, gates: int, opset: int):
    hidden, size = 4, 3
    weights = {"W": _f(1, gates * hidden, size), "R": _f(1, gates * hidden, hidden), "B": _f(1, 2 * gates * hidden)}
    extra = {"linear_before_reset": 1} if op == "GRU" else {}
    outputs = ["Y", "Y_h"] + (["Y_c"] if op == "LSTM" else [])
    return opset, [helper.make_node(op, ["X", "W", "R", "B"], outputs, hidden_size=hidden, **extra)], \
        {"X": _f(5, 2, size)}, weights, outputs


def _one(op: str, opset: int, inputs: dict, initializers: dict | None = None, outputs: int = 1, **attributes):
    """A case of one `op` node: the graph inputs, then the initializers, in that order as its inputs."""
    names = [f"y{i}" for i in range(outputs)]
    node = helper.make_node(op, list(inputs) + list(initializers or {}), names, **attributes)
    return opset, [node], inputs, initializers or {}, names


_REDUCTIONS_18 = ("ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin",
                  "ReduceProd", "ReduceSumSquare")
# equal values, which ONNX orders lowest index first
_TIES = np.asarray([[1.0, 3.0, 3.0, 2.0, 3.0], [0.5, 0.5, 0.1, 0.5, 0.9]], np.float32)
_ONE_AND_A_HALF = numpy_helper.from_array(np.asarray([1.5], np.float32))

# (op, since_version) -> a function giving (opset, nodes, graph inputs, initializers, outputs)
CASES = {
    ("ConstantOfShape", 9): lambda: (11, [helper.make_node("Shape", ["x"], ["s"]),
                                          helper.make_node("ConstantOfShape", ["s"], ["y0"], value=_ONE_AND_A_HALF)],
                                     {"x": _f(2, 3)}, {}, ["y0"]),
    ("ConvTranspose", 1): lambda: _one("ConvTranspose", 7, {"x": _f(1, 2, 4, 4)}, {"w": _f(2, 3, 3, 3)},
                                       pads=[1, 0, 1, 0], strides=[2, 2]),
    ("ConvTranspose", 11): lambda: _one("ConvTranspose", 11, {"x": _f(1, 2, 4, 4)}, {"w": _f(2, 3, 3, 3), "b": _f(3)},
                                        pads=[1, 0, 1, 0], strides=[2, 1]),
    ("AveragePool", 19): lambda: _one("AveragePool", 19, {"x": _f(1, 2, 6, 5)}, kernel_shape=[3, 2], strides=[2, 2],
                                      pads=[0, 1, 2, 0]),  # pads differing at the two ends
    **{(op, 18): (lambda op=op: _one(op, 18, {"x": np.asarray([[5, -3, 12], [0, 7, -1]], np.int32),
                                              "y": np.asarray([[6, 3, -8], [1, 7, 2]], np.int32)}))
       for op in ("BitwiseAnd", "BitwiseOr", "BitwiseXor")},  # CPM-Ant's integer masks
    ("BitwiseNot", 18): lambda: _one("BitwiseNot", 18, {"x": np.asarray([[5, -3, 0]], np.int32)}),
    ("CumSum", 11): lambda: _one("CumSum", 11, {"x": _f(2, 5)}, {"axis": _i(1).reshape(())}, exclusive=1),
    ("CumSum", 14): lambda: _one("CumSum", 14, {"x": _f(2, 5)}, {"axis": _i(1).reshape(())}),
    ("Dropout", 7): lambda: _one("Dropout", 7, {"x": _f(2, 5)}, ratio=0.3),
    ("Dropout", 12): lambda: _one("Dropout", 12, {"x": _f(2, 5)}, {"ratio": np.asarray(0.2, np.float32)}),
    ("Dropout", 13): lambda: _one("Dropout", 13, {"x": _f(2, 5)}, {"ratio": np.asarray(0.2, np.float32)}),
    ("GRU", 7): lambda: _recurrent("GRU", 3, 7),
    ("GRU", 14): lambda: _recurrent("GRU", 3, 14),
    ("LSTM", 7): lambda: _recurrent("LSTM", 4, 7),
    ("LSTM", 14): lambda: _recurrent("LSTM", 4, 14),
    ("Gather", 1): lambda: _one("Gather", 7, {"x": _f(3, 4)}, {"i": _i(2).reshape(())}, axis=1),
    ("Gather", 11): lambda: _one("Gather", 11, {"x": _f(3, 4)}, {"i": _i(-1).reshape(())}, axis=1),
    ("Gather", 13): lambda: _one("Gather", 13, {"x": _f(3, 4)}, {"i": _i(1).reshape(())}),
    ("GatherElements", 11): lambda: _one("GatherElements", 11, {"x": _f(2, 3)},
                                         {"i": _i(-1, 0, -2, 1, -3, 2).reshape(2, 3)}, axis=1),  # negative: from the end
    ("GatherElements", 13): lambda: _one("GatherElements", 13, {"x": _f(3, 2)}, {"i": _i(-1, 0, 2, -3).reshape(2, 2)}),
    ("GlobalMaxPool", 1): lambda: _one("GlobalMaxPool", 7, {"x": _f(2, 3, 4, 5)}),
    ("GroupNormalization", 18): lambda: _one("GroupNormalization", 18, {"x": _f(2, 4, 3, 3)},
                                             {"scale": _f(2), "bias": _f(2)}, num_groups=2),
    ("GroupNormalization", 21): lambda: _one("GroupNormalization", 21, {"x": _f(2, 4, 3, 3)},
                                             {"scale": _f(4), "bias": _f(4)}, num_groups=2),
    ("IsInf", 10): lambda: _one("IsInf", 10, {"x": np.asarray([1.0, np.inf, -np.inf, np.nan], np.float32)},
                                detect_negative=0),
    ("LayerNormalization", 17): lambda: _one("LayerNormalization", 17, {"x": _f(2, 3, 4)},
                                             {"scale": _f(4), "bias": _f(4)}),
    ("NonZero", 13): lambda: _one("NonZero", 13, {"x": np.asarray([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]], np.float32)}),
    ("Pad", 2): lambda: _one("Pad", 7, {"x": _f(2, 3)}, pads=[0, 1, 1, 2], value=1.5),
    ("Pad", 18): lambda: _one("Pad", 18, {"x": _f(2, 3)},
                              {"pads": _i(0, 1, 1, 2), "value": np.asarray(1.5, np.float32)}),
    **{(op, 18): (lambda op=op: _one(op, 18, {"x": _f(2, 3, 4, positive=True)}, {"axes": _i(1)}, keepdims=0))
       for op in _REDUCTIONS_18},
    ("OneHot", 9): lambda: _one("OneHot", 9, {"i": _i(0, 3, 2).reshape(1, 3)},
                                {"depth": _i(4).reshape(()), "values": np.asarray([0.5, 2.0], np.float32)}),
    ("OneHot", 11): lambda: _one("OneHot", 11, {"i": _i(0, 3, -1, 5, 2, -4).reshape(2, 3)},
                                 {"depth": _i(4).reshape(()), "values": np.asarray([0.0, 1.0], np.float32)}, axis=1),
    ("ScatterElements", 11): lambda: _one("ScatterElements", 11, {"x": _f(3, 4)},
                                          {"i": _i(1, -1, 0, 2).reshape(1, 4), "u": _f(1, 4)}, axis=0),
    ("ScatterElements", 16): lambda: _one("ScatterElements", 16, {"x": _f(2, 5)},
                                          {"i": _i(4, 0, 4, 1).reshape(2, 2), "u": _f(2, 2)}, axis=1, reduction="add"),
    ("ScatterElements", 18): lambda: _one("ScatterElements", 18, {"x": _f(2, 5)},
                                          {"i": _i(3, 3, 0, 1).reshape(2, 2), "u": _f(2, 2)}, axis=1, reduction="max"),
    ("Split", 18): lambda: _one("Split", 18, {"x": _f(2, 7)}, outputs=3, axis=1, num_outputs=3),
    ("Squeeze", 13): lambda: _one("Squeeze", 13, {"x": _f(2, 1, 3)}, {"axes": _i(1)}),
    ("Squeeze", 21): lambda: _one("Squeeze", 21, {"x": _f(2, 1, 3)}, {"axes": _i(1)}),
    ("ThresholdedRelu", 10): lambda: _one("ThresholdedRelu", 10, {"x": _f(2, 5) * 2}, alpha=0.5),
    ("TopK", 1): lambda: _one("TopK", 7, {"x": _TIES}, outputs=2, k=3),
    ("TopK", 10): lambda: _one("TopK", 10, {"x": _TIES}, {"k": _i(3)}, outputs=2),
    ("TopK", 11): lambda: _one("TopK", 11, {"x": _TIES}, {"k": _i(2)}, outputs=2, largest=0),
    ("Trilu", 14): lambda: _one("Trilu", 14, {"x": _f(3, 4)}, {"k": _i(1).reshape(())}, upper=0),
}


def _save(case, path) -> tuple[str, dict]:
    opset, nodes, inputs, initializers, outputs = case
    graph = helper.make_graph(
        nodes, "case", [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
                        for n, v in inputs.items()],
        [helper.make_empty_tensor_value_info(n) for n in outputs],
        [numpy_helper.from_array(v, n) for n, v in initializers.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
    onnx.save(model, str(path))
    return str(path), inputs


def test_every_registered_converter_has_a_case():
    from rosetta.convert.onnx.to_torch import converters

    assert {(c.op_type, c.since_version) for c in converters()} == set(CASES)


@pytest.mark.parametrize("key", sorted(CASES), ids=lambda key: f"{key[0]}-{key[1]}")
def test_each_registered_converter_computes_what_onnxruntime_computes(key, tmp_path):
    import onnxruntime as ort

    op, since = key
    case = CASES[key]()
    assert onnx.defs.get_schema(op, case[0]).since_version == since, "the case does not reach this registration"
    path, inputs = _save(case, tmp_path / "case.onnx")
    expected = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, inputs)
    with torch.no_grad():
        got = build_module(path).eval()(*(torch.from_numpy(v) for v in inputs.values()))
    got = list(got) if isinstance(got, (list, tuple)) else [got]
    assert len(got) == len(expected)
    for value, wanted in zip(got, expected):
        np.testing.assert_allclose(value.numpy(), wanted, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("count_include_pad", [0, 1])
@pytest.mark.parametrize("shape, kernel, pads", [((1, 2, 6, 5), [3, 3], [1, 1, 1, 1]),  # symmetric: onnx2torch's
                                                 ((1, 2, 6, 5), [3, 2], [0, 1, 2, 0]),  # SAME_UPPER-like, 2-D
                                                 ((1, 2, 4, 5, 5), [2, 3, 3], [1, 0, 0, 0, 2, 1]),  # 3-D
                                                 ((1, 2, 6, 5), [3, 3], [2, 2, 2, 2]),  # pads over half the kernel
                                                 ((1, 2, 6, 5), [3, 2], "SAME_UPPER"),
                                                 ((1, 2, 6, 5), [3, 2], "SAME_LOWER")])
def test_an_opset_22_average_pool_computes_what_onnxruntime_computes(shape, kernel, pads, count_include_pad, tmp_path):
    """Issue 45: AveragePool at opset 22 (22 only widened the types of 19's: the same converter) had no converter
    (onnx2torch stops at 11); pads that differ at the two ends (auto_pad SAME_* too) or exceed half the kernel
    are padded first, the real count kept."""
    import onnxruntime as ort

    padding = {"auto_pad": pads} if isinstance(pads, str) else {"pads": pads}
    case = _one("AveragePool", 22, {"x": _f(*shape)}, kernel_shape=kernel, strides=[2] * len(kernel),
                count_include_pad=count_include_pad, **padding)
    path, inputs = _save(case, tmp_path / "case.onnx")
    expected = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, inputs)[0]
    with torch.no_grad():
        got = build_module(path).eval()(*(torch.from_numpy(v) for v in inputs.values()))
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER"])
def test_a_conv_with_auto_pad_same_converts_through_the_bridges_rewrites(auto_pad, tmp_path):
    """Issue 45 (timm's ConvMixer, Keras's ConvNeXt through tf2onnx): onnx2torch's Conv raises NotImplementedError
    on auto_pad SAME_*; the bridge's rewrites make it the explicit pads it means first (static spatial sizes),
    the odd one at the end (UPPER) or the start (LOWER), which onnx2torch pads ahead of the Conv."""
    import onnxruntime as ort

    from rosetta.convert.onnx import rewrites as rw
    from rosetta.convert.onnx.to_torch import REWRITES

    case = _one("Conv", 17, {"x": _f(1, 2, 7, 6)}, {"w": _f(3, 2, 3, 2)}, auto_pad=auto_pad, strides=[2, 2])
    path, inputs = _save(case, tmp_path / "case.onnx")
    with pytest.raises(RosettaError, match=f'"{auto_pad}" auto_pad is not implemented'):
        build_module(path)  # onnx2torch alone
    rewritten = str(tmp_path / "rewritten.onnx")
    onnx.save(rw.apply(REWRITES, onnx.load(path)), rewritten)
    expected = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, inputs)[0]
    with torch.no_grad():
        got = build_module(rewritten).eval()(torch.from_numpy(inputs["x"]))
    assert got.shape == expected.shape == (1, 3, 4, 3)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-5, atol=1e-6)


def test_a_dilated_average_pool_is_refused_by_name(tmp_path):
    path, _ = _save(_one("AveragePool", 19, {"x": _f(1, 2, 6, 6)}, kernel_shape=[2, 2], dilations=[2, 2]),
                    tmp_path / "case.onnx")
    with pytest.raises(RosettaError, match="dilations cannot be converted to torch"):
        build_module(path)


def test_opset_7_dropout_is_the_identity_at_inference_and_a_read_mask_is_refused(tmp_path):
    """Issue 45: Caffe2-era models (opset 7-9) hold Dropout of opset 7, for which onnx2torch has no converter."""
    path, inputs = _save(_one("Dropout", 9, {"x": _f(2, 5)}, ratio=0.4), tmp_path / "dropout.onnx")
    module = build_module(path)
    assert [type(m).__name__ for m in module.modules()].count("Dropout") == 1
    assert next(m for m in module.modules() if isinstance(m, torch.nn.Dropout)).p == pytest.approx(0.4)
    with torch.no_grad():
        np.testing.assert_array_equal(module.eval()(torch.from_numpy(inputs["x"])).numpy(), inputs["x"])
    path, _ = _save(_one("Dropout", 7, {"x": _f(2, 5)}, outputs=2), tmp_path / "mask.onnx")
    with pytest.raises(RosettaError, match="mask output"):
        build_module(path)


class _ZeroBiasConvsAndLinears(torch.nn.Module):
    """Zero biases as timm and transformers initialise them: torch.onnx merges the equal ones into one initializer
    and feeds each later Conv and Gemm through an Identity of it (issue 45's KeyError 'module.second.bias')."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.first, self.second = torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.Conv2d(4, 4, 3, padding=1)
        self.head, self.out = torch.nn.Linear(4 * 8 * 8, 4), torch.nn.Linear(4, 4)
        for layer in (self.first, self.second, self.head, self.out):
            torch.nn.init.zeros_(layer.bias)

    def forward(self, x):
        return self.out(self.head(self.second(self.first(x).relu()).flatten(1)).relu())


def test_a_bias_torch_onnx_merged_behind_an_identity_converts_to_torch():
    import rosetta

    conversion = rosetta.convert(_ZeroBiasConvsAndLinears().eval(), "onnx,torch", inputs=["x:Nx3x8x8:float32"], batch=2)
    rows = {row.target: row for row in conversion.report}
    assert rows["torch"].verdict == "PASS", rows["torch"].reason
