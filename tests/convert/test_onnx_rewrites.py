"""The graph rewrites are semantics-preserving: the rewritten graph computes the same outputs in ONNX Runtime.
Graphs MXNet's importer failed on convert with them, and compute the same in MXNet."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper

from rosetta.convert.onnx import rewrites as rw
from rosetta.convert.store import run_conversion
from rosetta.convert.targets import get_target
from rosetta.frameworks import load_runner
from rosetta.frameworks.onnx_graph import constant_values, graph_inputs, value_info_signature
from rosetta.errors import RosettaError
from rosetta.manifest import Manifest, sha256_of
from rosetta.models import get_model, list_models
from rosetta.models.inputs import generate_inputs

# Rewrites whose output is valid ONNX at the model's opset, so ONNX Runtime can run it. axes_inputs_to_attributes
# writes opset-11-style nodes for MXNet's importer (checked structurally below; MXNet's verification runs it).
REWRITES = [rw.drop_zero_initial_states, rw.constants_to_initializers, rw.positive_gather_indices,
            rw.drop_default_training_mode, rw.initializers_as_inputs]


RNG = np.random.default_rng(0)


def _run_all(model, feeds) -> list[np.ndarray]:
    # Optimisations off on both sides: ORT's optimiser treats initializers listed as inputs as overridable
    # and so fuses differently, which changes float rounding, not the function.
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def _run(model, feeds):
    return _run_all(model, feeds)[0]


@pytest.mark.parametrize("rewrite", REWRITES, ids=lambda f: f.__name__)
@pytest.mark.parametrize("name", list_models())
def test_rewrite_preserves_outputs(store, name, rewrite):
    spec = get_model(name)
    folder = store.get(spec, 0, get_target("mxnet").chain[:2], dict(get_target("mxnet").export))
    original = onnx.load(str(folder / "model.onnx"))
    feeds = generate_inputs(spec.inputs, 2, 0)
    rewritten = rewrite(onnx.load(str(folder / "model.onnx")))
    onnx.checker.check_model(rewritten)
    # Equal up to float32 rounding: weights that become graph inputs are not prepacked by ORT, which changes
    # the summation order (~1e-7). A semantic change (e.g. index -1 read as 0) moves outputs by ~1e-1.
    np.testing.assert_allclose(_run(rewritten, feeds), _run(original, feeds), rtol=1e-5, atol=1e-6)


def test_gru_zero_state_chain_is_removed(store):
    folder = store.get(get_model("gru"), 0, ("torch", "onnx"))
    model = rw.drop_zero_initial_states(onnx.load(str(folder / "model.onnx")))
    ops = [n.op_type for n in model.graph.node]
    assert "ConstantOfShape" not in ops and "Shape" not in ops
    gru = next(n for n in model.graph.node if n.op_type == "GRU")
    assert list(gru.input)[-1] != "" and len(gru.input) == 4


def test_negative_gather_index_becomes_positive(store):
    folder = store.get(get_model("gru"), 0, ("torch", "onnx"))
    model = rw.positive_gather_indices(onnx.load(str(folder / "model.onnx")))
    pick = [n for n in model.graph.node if n.op_type == "Gather" and any(a.name == "axis" and a.i == 1 for a in n.attribute)][0]
    value = onnx.numpy_helper.to_array(next(i for i in model.graph.initializer if i.name == pick.input[1]))
    assert int(value) == 149


def test_squeeze_axes_move_to_the_attribute(store):
    folder = store.get(get_model("gru"), 0, ("torch", "onnx"))
    model = rw.axes_inputs_to_attributes(onnx.load(str(folder / "model.onnx")))
    squeeze = next(n for n in model.graph.node if n.op_type == "Squeeze")
    assert len(squeeze.input) == 1
    assert [list(a.ints) for a in squeeze.attribute if a.name == "axes"] == [[1]]


# Graphs MXNet's importer failed on before a rewrite (LayerNormalization, ConstantOfShape, Slice): each rewritten
# graph computes in ONNX Runtime what the original does, and the original converts to MXNet through rosetta's
# path (rewrite_for_mxnet, then its importer) and computes the same there.


def _exported(module, x, tmp_path):
    """`module` exported as rosetta exports (TorchScript exporter, opset 17, constant folding), batch fixed."""
    path = tmp_path / "exported.onnx"
    torch.onnx.export(module.eval(), (torch.from_numpy(x),), str(path), dynamo=False, opset_version=17,
                      input_names=["x"], output_names=["y"], do_constant_folding=True)
    return onnx.load(str(path))


def _graph(nodes, inputs, outputs, initializers=(), opset=17):
    """A float graph: inputs and outputs as (name, shape) pairs, initializers as (name, array) pairs."""
    def values(pairs):
        return [helper.make_tensor_value_info(name, TensorProto.FLOAT, shape) for name, shape in pairs]

    graph = helper.make_graph(nodes, "g", values(inputs), values(outputs),
                              [numpy_helper.from_array(value, name) for name, value in initializers])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def _target_outputs(model, feeds, tmp_path, target: str = "mxnet") -> list[np.ndarray]:
    """`model` converted to `target` (MXNet unless said) by rosetta's onnx -> target path and run in its worker."""
    source = tmp_path / "onnx"
    source.mkdir()
    onnx.save(model, str(source / "model.onnx"))
    Manifest(artifact="model.onnx", format="onnx", source={"path": "test"}, converter={"name": "test"},
             inputs=value_info_signature(graph_inputs(model)), outputs=value_info_signature(model.graph.output),
             sha256=sha256_of(source / "model.onnx"), opset=model.opset_import[0].version).write(source)
    run_conversion(source, ("onnx", target), tmp_path / target)
    outputs = load_runner(target, tmp_path / target).predict(feeds)
    return [outputs[value.name] for value in model.graph.output]


def _check_rewrite(rewrite, model, feeds, tmp_path):
    """The rewritten graph computes the original's outputs in ONNX Runtime, and MXNet computes them too."""
    expected = _run_all(model, feeds)
    rewritten = rewrite(onnx.load_from_string(model.SerializeToString()))
    onnx.checker.check_model(rewritten)
    for got, want in zip(_run_all(rewritten, feeds), expected):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    for got, want in zip(_target_outputs(model, feeds, tmp_path), expected):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    return rewritten


def test_layer_normalization_becomes_primitives_mxnet_reads(tmp_path):
    norm = torch.nn.LayerNorm((4, 6))
    with torch.no_grad():
        norm.weight.normal_()
        norm.bias.normal_()
    x = np.random.default_rng(0).normal(size=(2, 3, 4, 6)).astype(np.float32)
    model = _exported(norm, x, tmp_path)
    assert [n.op_type for n in model.graph.node] == ["LayerNormalization"]
    rewritten = _check_rewrite(rw.decompose_layer_normalization, model, {"x": x}, tmp_path)
    assert "LayerNormalization" not in {n.op_type for n in rewritten.graph.node}


@pytest.mark.parametrize("opset, dtype", [(17, np.float32), (18, np.float32), (17, np.float16)])
def test_layer_normalization_keeps_its_outputs_opset_and_stash_type(opset, dtype):
    # float16 is normalised in float32 (stash_type=1): Mean and InvStdDev are float32, Y float16
    rng = np.random.default_rng(1)
    x_type = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    node = helper.make_node("LayerNormalization", ["x", "scale"], ["y", "mean", "inv_std"], axis=1, epsilon=1e-3)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", x_type, [2, 3, 5])],
        [helper.make_tensor_value_info("y", x_type, [2, 3, 5]),
         helper.make_tensor_value_info("mean", TensorProto.FLOAT, [2, 1, 1]),
         helper.make_tensor_value_info("inv_std", TensorProto.FLOAT, [2, 1, 1])],
        [numpy_helper.from_array(rng.normal(size=(3, 5)).astype(dtype), "scale")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
    feeds = {"x": rng.normal(size=(2, 3, 5)).astype(dtype)}
    rewritten = rw.decompose_layer_normalization(onnx.load_from_string(model.SerializeToString()))
    onnx.checker.check_model(rewritten)
    assert "LayerNormalization" not in {n.op_type for n in rewritten.graph.node}
    for got, want in zip(_run_all(rewritten, feeds), _run_all(model, feeds)):
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.float32 else 1e-3, atol=1e-6)


def test_static_constant_of_shape_becomes_an_initializer(tmp_path):
    # ConstantOfShape(Shape(x)) with x of static shape, as torch writes `x + torch.full(x.shape, 2.5)` unfolded
    nodes = [helper.make_node("Shape", ["x"], ["shape"]),
             helper.make_node("ConstantOfShape", ["shape"], ["filled"],
                              value=numpy_helper.from_array(np.array([2.5], np.float32))),
             helper.make_node("Add", ["x", "filled"], ["y"])]
    model = _graph(nodes, [("x", [2, 3])], [("y", [2, 3])])
    feeds = {"x": np.random.default_rng(2).normal(size=(2, 3)).astype(np.float32)}
    rewritten = _check_rewrite(rw.constant_of_shape_as_initializers, model, feeds, tmp_path)
    assert [n.op_type for n in rewritten.graph.node] == ["Add"]


def test_constant_of_shape_of_a_dynamic_shape_is_left_alone(store):
    folder = store.get(get_model("gru"), 0, ("torch", "onnx"))  # its zero initial state: Shape -> ConstantOfShape
    model = rw.constant_of_shape_as_initializers(onnx.load(str(folder / "model.onnx")))
    assert "ConstantOfShape" in {n.op_type for n in model.graph.node}


class _Slices(torch.nn.Module):
    def forward(self, x):
        return x[:, 1:] + x[:, :-1] * x[:, 1:5:2].sum(dim=1, keepdim=True)


def test_slice_to_the_end_is_bounded_and_read_by_mxnet(tmp_path):
    x = np.random.default_rng(3).normal(size=(2, 6)).astype(np.float32)
    model = _exported(_Slices(), x, tmp_path)
    constants = constant_values(model)
    ends = [int(constants[n.input[2]].ravel()[0]) for n in model.graph.node if n.op_type == "Slice"]
    assert np.iinfo(np.int64).max in ends  # x[:, 1:]: the end MXNet's own converter reads as 'nan'
    _check_rewrite(rw.bounded_slices, model, {"x": x}, tmp_path)


SLICES = [  # starts, ends, axes, steps, and the output's shape from x (5, 7)
    ([-2**63], [2**63 - 1], [-1], [1], [5, 7]),  # everything, on a negative axis
    ([-1], [-2**63], [1], [-1], [5, 7]),  # reversed, through the first element
    ([100, 1], [-100, 4], [-1, 0], [-2, 1], [3, 4]),  # backward from past the end, two axes
    ([-100], [3], [1], [1], [5, 3]),  # from before the first element (MXNet refuses that start)
    ([5], [1], [1], [-2], [5, 2]),
    ([-3], [100], [1], [2], [5, 2]),
]


def test_slice_bounds_keep_the_function(tmp_path):
    # one graph, one Slice of x per case: one conversion to MXNet for all
    nodes, parameters = [], []
    for case, values in enumerate(SLICES):
        names = [f"{role}_{case}" for role in ("starts", "ends", "axes", "steps")]
        parameters += [(name, np.array(value)) for name, value in zip(names, values)]
        nodes.append(helper.make_node("Slice", ["x", *names], [f"y_{case}"]))
    outputs = [(f"y_{case}", values[-1]) for case, values in enumerate(SLICES)]
    model = _graph(nodes, [("x", [5, 7])], outputs, parameters)
    feeds = {"x": np.random.default_rng(4).normal(size=(5, 7)).astype(np.float32)}
    _check_rewrite(rw.bounded_slices, model, feeds, tmp_path)


def test_slice_on_an_axis_of_unknown_size_is_bounded_within_int32(tmp_path):
    parameters = [("starts", np.array([-2**63, 1])), ("ends", np.array([2**63 - 1, -1]))]
    model = _graph([helper.make_node("Slice", ["x", "starts", "ends"], ["y"])], [("x", ["n", "m"])], [("y", None)],
                   parameters)
    rewritten = rw.bounded_slices(onnx.load_from_string(model.SerializeToString()))
    starts, ends = (numpy_helper.to_array(next(i for i in rewritten.graph.initializer if i.name == name)).tolist()
                    for name in rewritten.graph.node[0].input[1:3])
    assert starts == [0, 1] and ends == [rw.SLICE_BOUND, -1]
    feeds = {"x": np.random.default_rng(5).normal(size=(4, 6)).astype(np.float32)}
    np.testing.assert_array_equal(_run(rewritten, feeds), feeds["x"][:, 1:-1])
    np.testing.assert_array_equal(_target_outputs(model, feeds, tmp_path)[0], feeds["x"][:, 1:-1])


def test_erf_of_the_exact_gelu_converts_to_mxnet(tmp_path):
    x = np.random.default_rng(0).normal(size=(2, 5)).astype(np.float32) * 2
    model = _exported(torch.nn.GELU(), x, tmp_path)
    assert "Erf" in {n.op_type for n in model.graph.node}
    expected = _run_all(model, {"x": x})
    for got, want in zip(_target_outputs(model, {"x": x}, tmp_path), expected):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_linear_on_tokens_converts_to_mxnet(tmp_path):
    """nn.Linear on (N, tokens, C) is a MatMul of a rank-3 tensor by a 2-D weight (MXNet's gemm2 refuses)."""
    torch.manual_seed(0)
    x = np.random.default_rng(0).normal(size=(2, 5, 4)).astype(np.float32)
    model = _exported(torch.nn.Linear(4, 3, bias=False), x, tmp_path)
    assert "MatMul" in {n.op_type for n in model.graph.node}
    for got, want in zip(_target_outputs(model, {"x": x}, tmp_path), _run_all(model, {"x": x})):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_an_omitted_optional_input_is_refused_naming_the_op(tmp_path):
    resize = helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="nearest")  # scales given at run time
    model = _graph([resize], [("x", [1, 1, 2, 2]), ("scales", [4])], [("y", None)])
    with pytest.raises(RosettaError, match="ONNX op Resize with an omitted optional input cannot be converted to mxnet"):
        _target_outputs(model, {"x": np.ones((1, 1, 2, 2), np.float32), "scales": np.ones(4, np.float32)}, tmp_path)


@pytest.mark.parametrize("nodes, shape, initializers", [
    ([helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="nearest")], ["N", 2, 3, 4],
     [("scales", np.array([1, 1, 2, 1.5], np.float32))]),  # U-Net's upsampling, roi omitted
    ([helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode="linear", coordinate_transformation_mode="align_corners")],
     [2, 2, 3, 4], [("sizes", np.array([2, 2, 5, 7], np.int64))]),
    ([helper.make_node("Trilu", ["x"], ["y"], upper=0)], ["N", 4, 4], []),  # a causal mask's triangle
    ([helper.make_node("DepthToSpace", ["x"], ["y"], blocksize=2, mode="CRD")], ["N", 8, 3, 2], []),  # pixel shuffle
    ([helper.make_node("GroupNormalization", ["x", "scale", "bias"], ["y"], num_groups=2, epsilon=1e-3)],
     ["N", 4, 3, 2], [("scale", RNG.normal(size=4).astype(np.float32)), ("bias", RNG.normal(size=4).astype(np.float32))]),
    ([helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER")],
     ["N", 2, 7, 6], []),
], ids=["resize_nearest", "resize_linear_align_corners", "trilu", "depth_to_space", "group_norm", "max_pool_same"])
def test_ops_mxnet_lacks_are_rewritten_and_compute_in_mxnet_what_onnxruntime_does(nodes, shape, initializers, tmp_path):
    opset = 21 if nodes[0].op_type == "GroupNormalization" else 18
    model = _graph(nodes, [("x", shape)], [("y", None)], initializers, opset=opset)
    x = np.random.default_rng(4).normal(size=[2] + shape[1:]).astype(np.float32)
    np.testing.assert_allclose(_target_outputs(model, {"x": x}, tmp_path)[0], _run(model, {"x": x}), rtol=1e-5, atol=1e-5)


def _small_graph(nodes, inputs, initializers, opset: int = 17):
    """A one-output graph ("y") from onnx.helper: inputs as (name, shape) with "N" a symbolic batch axis,
    initializers as (name, array)."""
    values = [helper.make_tensor_value_info(name, TensorProto.FLOAT, shape) for name, shape in inputs]
    graph = helper.make_graph(nodes, "g", values, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(np.asarray(value), name) for name, value in initializers])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def _int64(*values):
    return np.array(values, np.int64)


# A generator of its own for cases added later, so that the draws of the cases after them in DIRECT stay as they were
_RNG_45 = np.random.default_rng(45)

# rewrite -> (graph it changes, what it leaves); each graph's input is x, its output y
DIRECT = {
    rw.remove_dead_nodes: (_small_graph(
        [helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Sigmoid", ["x"], ["unused"])],
        [("x", ["N", 3])], [("w", np.ones(3, np.float32))]), "Sigmoid"),
    rw.bypass_identity_of_initializers: (_small_graph(
        [helper.make_node("Identity", ["w"], ["w_copy"]), helper.make_node("Add", ["x", "w_copy"], ["sum"]),
         helper.make_node("Mul", ["sum", "w_copy"], ["y"])],
        [("x", ["N", 3])], [("w", RNG.normal(size=3).astype(np.float32))]), "Identity"),
    rw.identity_of_initializers_as_initializers: (_small_graph(  # torch.onnx's equal biases (zeros, in timm) merged:
        [helper.make_node("Identity", ["bias"], ["second.bias"]),  # the second reader's behind an Identity, the
         helper.make_node("Identity", ["second.bias"], ["third.bias"]),  # third's behind an Identity of that
         helper.make_node("Conv", ["x", "w1", "bias"], ["first"], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["first"], ["r"]),
         helper.make_node("Conv", ["r", "w2", "second.bias"], ["second"], pads=[1, 1, 1, 1]),
         helper.make_node("Conv", ["second", "w2", "third.bias"], ["y"])],
        [("x", ["N", 3, 5, 5])], [("w1", _RNG_45.normal(size=(4, 3, 3, 3)).astype(np.float32)),
                                  ("w2", _RNG_45.normal(size=(4, 4, 3, 3)).astype(np.float32)),
                                  ("bias", _RNG_45.normal(size=4).astype(np.float32))]), "Identity"),
    rw.constant_weights_as_initializers: (_small_graph(  # a symbolic's constant weight, as TorchScript writes it
        [helper.make_node("Constant", [], ["kernel"], value=numpy_helper.from_array(
            np.random.default_rng(46).normal(size=(3, 2, 2, 2)).astype(np.float32))),
         helper.make_node("ConvTranspose", ["x", "kernel"], ["y"], strides=[2, 2])],
        [("x", ["N", 3, 4, 4])], []), "Constant"),
    rw.resize_of_a_filled_tensor: (_small_graph(  # DETR's pixel mask of ones, resized to a feature map's size
        [helper.make_node("Shape", ["x"], ["shape"]),
         helper.make_node("ConstantOfShape", ["shape"], ["ones"], value=numpy_helper.from_array(np.ones(1, np.int64))),
         helper.make_node("Cast", ["ones"], ["mask"], to=TensorProto.FLOAT),
         helper.make_node("Shape", ["mask"], ["leading"], start=0, end=2),
         helper.make_node("Concat", ["leading", "spatial"], ["sizes"], axis=0),
         helper.make_node("Resize", ["mask", "", "", "sizes"], ["resized"], mode="linear"),
         helper.make_node("Mul", ["resized", "scale"], ["y"])],
        [("x", ["N", 3, 4, 5])], [("spatial", _int64(7, 3)), ("scale", np.float32(1.5))]), "Resize"),
    rw.constant_reshape_shapes: (_small_graph(  # tf2onnx's Flatten: the batch size read from the input
        [helper.make_node("Shape", ["x"], ["shape"]), helper.make_node("Gather", ["shape", "first"], ["batch"]),
         helper.make_node("Concat", ["batch", "rest"], ["target"], axis=0),
         helper.make_node("Reshape", ["x", "target"], ["y"])],
        [("x", ["N", 3, 4])], [("first", _int64(0)), ("rest", _int64(12))]), "Shape"),
    rw.fold_constant_subgraphs: (_small_graph(
        [helper.make_node("Div", ["sizes", "two"], ["half"]), helper.make_node("Reshape", ["x", "half"], ["y"])],
        [("x", [6])], [("sizes", _int64(6, 4)), ("two", _int64(2, 2))]), "Div"),
    rw.static_shape_parts: (_small_graph(  # attention's scale: Shape -> Slice[-1:] -> Cast -> Sqrt
        [helper.make_node("Shape", ["x"], ["shape"]), helper.make_node("Slice", ["shape", "start", "end"], ["last"]),
         helper.make_node("Cast", ["last"], ["size"], to=TensorProto.FLOAT), helper.make_node("Sqrt", ["size"], ["root"]),
         helper.make_node("Div", ["x", "root"], ["y"])],
        [("x", ["N", 3, 4])], [("start", _int64(-1)), ("end", _int64(np.iinfo(np.int64).max))]), "Slice"),
    rw.symbolic_reshape_shapes: (_small_graph(
        [helper.make_node("Shape", ["x"], ["shape"]), helper.make_node("Gather", ["shape", "first"], ["batch"]),
         helper.make_node("Concat", ["batch", "minus_one"], ["target"], axis=0),
         helper.make_node("Reshape", ["x", "target"], ["y"])],
        [("x", ["N", 3, 4])], [("first", _int64(0)), ("minus_one", _int64(-1))]), "Concat"),
    rw.constant_operands_second: (_small_graph(  # torch.onnx's Linear: Add(bias, MatMul)
        [helper.make_node("MatMul", ["x", "w"], ["product"]), helper.make_node("Add", ["bias", "product"], ["y"])],
        [("x", ["N", 4])], [("w", RNG.normal(size=(4, 3)).astype(np.float32)),
                            ("bias", RNG.normal(size=3).astype(np.float32))]), None),
    rw.explicit_default_axes: (_small_graph(  # opset 13: the last axis, where MXNet's importer reads 1
        [helper.make_node("Hardmax", ["x"], ["y"])], [("x", ["N", 3, 4])], [], opset=13), None),
    rw.resize_sizes_as_scales: (_small_graph(  # torchvision's F.interpolate(x, size=(8, 8)) of an FCN head
        [helper.make_node("Shape", ["x"], ["shape"]), helper.make_node("Slice", ["shape", "zero", "two"], ["nc"]),
         helper.make_node("Concat", ["nc", "hw"], ["sizes"], axis=0),
         helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode="linear",
                          coordinate_transformation_mode="half_pixel")],
        [("x", ["N", 3, 4, 4])], [("zero", _int64(0)), ("two", _int64(2)), ("hw", _int64(8, 8))]), "Concat"),
    rw.scope_safe_node_names: (_small_graph(  # torch.onnx's names: a root scope TensorFlow refuses
        [helper.make_node("Relu", ["x"], ["r"], name="/stages/conv_dw/Relu"),
         helper.make_node("Neg", ["r"], ["y"], name="stages/conv_dw/Relu")],  # the same name once "/" goes: kept apart
        [("x", ["N", 4])], []), None),
    rw.scalar_constants_as_vectors: (_small_graph(  # attention's scale, a 0-d constant after the scores' MatMul
        [helper.make_node("MatMul", ["x", "w"], ["scores"]), helper.make_node("Mul", ["scores", "scale"], ["y"])],
        [("x", ["N", 4])], [("w", RNG.normal(size=(4, 3)).astype(np.float32)),
                            ("scale", np.array(0.35355338, np.float32))]), None),
    rw.conv_transpose_as_depth_to_space: (_small_graph(  # U-Net's 2x2, stride-2 upsampling
        [helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], kernel_shape=[2, 2], strides=[2, 2])],
        [("x", ["N", 3, 4, 4])], [("w", RNG.normal(size=(3, 2, 2, 2)).astype(np.float32)),
                                  ("b", RNG.normal(size=2).astype(np.float32))]), "ConvTranspose"),
    rw.resize_as_gathers_and_matmuls: (_small_graph(  # nearest up, then cubic down with antialias
        [helper.make_node("Resize", ["x", "", "up"], ["nearest"], mode="nearest", nearest_mode="ceil",
                          coordinate_transformation_mode="asymmetric"),
         helper.make_node("Resize", ["nearest", "", "down"], ["y"], mode="cubic", antialias=1)],
        [("x", ["N", 3, 4, 5])], [("up", np.array([1, 1, 2, 1.5], np.float32)),
                                  ("down", np.array([1, 1, 0.6, 0.5], np.float32))], opset=19), "Resize"),
    rw.resize_except_upsampling_as_gathers_and_matmuls: (_small_graph(  # an upsampling kept, a downsampling written
        [helper.make_node("Resize", ["x", "", "twice"], ["repeated"], mode="nearest", nearest_mode="floor",
                          coordinate_transformation_mode="asymmetric"),
         helper.make_node("Resize", ["repeated", "", "", "sizes"], ["y"], mode="linear")],
        [("x", [2, 3, 4, 5])], [("twice", np.array([1, 1, 2, 2], np.float32)),
                                ("sizes", np.array([2, 3, 5, 7], np.int64))], opset=19), None),
    rw.trilu_as_where: (_small_graph(
        [helper.make_node("Trilu", ["x", "k"], ["y"], upper=0)], [("x", ["N", 4, 5])], [("k", _int64(1))]), "Trilu"),
    rw.depth_to_space_as_reshapes: (_small_graph(  # pixel shuffle (torch's CRD), then back
        [helper.make_node("DepthToSpace", ["x"], ["shuffled"], blocksize=2, mode="CRD"),
         helper.make_node("SpaceToDepth", ["shuffled"], ["y"], blocksize=2)], [("x", ["N", 8, 3, 4])], []),
        "DepthToSpace"),
    rw.explicit_pads: (_small_graph(
        [helper.make_node("Conv", ["x", "w"], ["conv"], auto_pad="SAME_LOWER", strides=[2, 2]),
         helper.make_node("MaxPool", ["conv"], ["y"], auto_pad="SAME_UPPER", kernel_shape=[2, 3])],
        [("x", ["N", 3, 7, 6])], [("w", RNG.normal(size=(4, 3, 3, 2)).astype(np.float32))]), None),
    rw.counted_pads_as_pad: (_small_graph(  # a window larger than the 2x1 map, its pads counted (onnx2tf: not)
        [helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1)],
        [("x", ["N", 3, 2, 1])], []), None),
    rw.group_normalization_as_instance_normalization: (_small_graph(
        [helper.make_node("GroupNormalization", ["x", "scale", "bias"], ["y"], num_groups=2)], [("x", ["N", 4, 3, 3])],
        [("scale", RNG.uniform(0.5, 1.5, size=4).astype(np.float32)), ("bias", RNG.normal(size=4).astype(np.float32))],
        opset=21), "GroupNormalization"),
    rw.layer_normalization_statistics_as_primitives: (_small_graph(
        [helper.make_node("LayerNormalization", ["x", "scale"], ["normalized", "mean", "inverse"], axis=1),
         helper.make_node("Add", ["normalized", "mean"], ["centred"]), helper.make_node("Mul", ["centred", "inverse"], ["y"])],
        [("x", ["N", 3, 4])], [("scale", RNG.normal(size=(3, 4)).astype(np.float32))]), "LayerNormalization"),
    rw.cast_like_as_cast: (_small_graph(
        [helper.make_node("Cast", ["x"], ["whole"], to=TensorProto.INT32),
         helper.make_node("CastLike", ["whole", "x"], ["y"])], [("x", ["N", 3])], []), "CastLike"),
    rw.gelu_as_primitives: (_small_graph(
        [helper.make_node("Gelu", ["x"], ["exact"]), helper.make_node("Gelu", ["exact"], ["y"], approximate="tanh")],
        [("x", ["N", 3])], [], opset=20), "Gelu"),
    rw.static_shapes_as_constants: (_small_graph(  # an expanded LayerNorm's ones of the normalized shape
        [helper.make_node("Shape", ["x"], ["shape"], start=1), helper.make_node("ConstantOfShape", ["shape"], ["ones"],
                                                                                value=helper.make_tensor("", 1, [1], [1.0])),
         helper.make_node("Add", ["x", "ones"], ["y"])], [("x", [2, 3, 4])], []), "Shape"),
    rw.flatten_as_reshape: (_small_graph(
        [helper.make_node("Flatten", ["x"], ["y"], axis=2)], [("x", ["N", 3, 4, 2])], []), "Flatten"),
    rw.clip_bounds_as_max_min: (_small_graph(  # a lower bound computed at run time, then bounds with min > max
        [helper.make_node("ReduceMean", ["x"], ["mean"], keepdims=0), helper.make_node("Clip", ["x", "mean"], ["floor"]),
         helper.make_node("Clip", ["floor", "high", "low"], ["y"])],
        [("x", ["N", 3])], [("high", np.array(1.5, np.float32)), ("low", np.array(0.8, np.float32))]), "Clip"),
    rw.lp_normalization_as_primitives: (_small_graph(  # a column of zeros: its norm 0 is taken as 1
        [helper.make_node("Mul", ["x", "mask"], ["masked"]), helper.make_node("LpNormalization", ["masked"], ["l2"], axis=0),
         helper.make_node("LpNormalization", ["masked"], ["y_l1"], axis=-1, p=1), helper.make_node("Add", ["l2", "y_l1"], ["y"])],
        [("x", ["N", 3])], [("mask", np.array([1, 0, 1], np.float32))]), "LpNormalization"),
    rw.constant_attributes_as_tensors: (_small_graph(  # how ONNX's function bodies write Elu's and Selu's constants
        [helper.make_node("Constant", [], ["alpha"], value_float=1.5), helper.make_node("Constant", [], ["shift"], value_floats=[0.5, 1, 2]),
         helper.make_node("Mul", ["x", "alpha"], ["scaled"]), helper.make_node("Add", ["scaled", "shift"], ["y"])],
        [("x", ["N", 3])], []), None),
    rw.empty_axes_as_every_axis: (_small_graph(  # axes computed at run time, empty: every axis is reduced
        [helper.make_node("Shape", ["x"], ["axes"], start=0, end=0), helper.make_node("ReduceSum", ["x", "axes"], ["y"])],
        [("x", ["N", 3, 4])], []), None),
    rw.unsigned_divisions_as_int64: (_small_graph(  # uint8 quotients, truncated
        [helper.make_node("Mul", ["x", "ten"], ["scaled"]), helper.make_node("Cast", ["scaled"], ["a"], to=TensorProto.UINT8),
         helper.make_node("Cast", ["x"], ["b"], to=TensorProto.UINT8), helper.make_node("Add", ["b", "one"], ["divisor"]),
         helper.make_node("Div", ["a", "divisor"], ["q"]), helper.make_node("Cast", ["q"], ["y"], to=TensorProto.FLOAT)],
        [("x", ["N", 5])], [("ten", np.array(10, np.float32)), ("one", np.array(1, np.uint8))]), None),
    rw.integer_fmod_as_magnitudes: (_small_graph(  # C's fmod of dividends of both signs
        [helper.make_node("Mul", ["x", "ten"], ["scaled"]), helper.make_node("Sub", ["scaled", "fifteen"], ["signed"]),
         helper.make_node("Cast", ["signed"], ["a"], to=TensorProto.INT32), helper.make_node("Mul", ["x", "three"], ["d"]),
         helper.make_node("Cast", ["d"], ["b"], to=TensorProto.INT32), helper.make_node("Add", ["b", "one"], ["divisor"]),
         helper.make_node("Mod", ["a", "divisor"], ["r"], fmod=1), helper.make_node("Cast", ["r"], ["y"], to=TensorProto.FLOAT)],
        [("x", ["N", 6])], [("ten", np.array(10, np.float32)), ("fifteen", np.array(15, np.float32)),
                            ("three", np.array(3, np.float32)), ("one", np.array(1, np.int32))]), None),
    rw.one_hot_out_of_range_as_off: (_small_graph(  # indices from -10 to 5 in a depth of 5: some out of range
        [helper.make_node("Mul", ["x", "ten"], ["scaled"]), helper.make_node("Sub", ["scaled", "fifteen"], ["shifted"]),
         helper.make_node("Cast", ["shifted"], ["indices"], to=TensorProto.INT64),
         helper.make_node("OneHot", ["indices", "depth", "values"], ["y"], axis=0)],
        [("x", ["N", 6])], [("ten", np.array(10, np.float32)), ("fifteen", np.array(15, np.float32)),
                            ("depth", np.array(5, np.int64)), ("values", np.array([-1.0, 3.0], np.float32))]), None),
    rw.shifts_out_of_range_as_where: (_small_graph(  # amounts in range here (ONNX Runtime's own differ outside)
        [helper.make_node("Mul", ["x", "ten"], ["scaled"]), helper.make_node("Cast", ["scaled"], ["a"], to=TensorProto.UINT8),
         helper.make_node("Cast", ["x"], ["amount"], to=TensorProto.UINT8),
         helper.make_node("BitShift", ["a", "amount"], ["shifted"], direction="LEFT"),
         helper.make_node("Cast", ["shifted"], ["y"], to=TensorProto.FLOAT)],
        [("x", ["N", 4])], [("ten", np.array(10, np.float32))]), None),
    rw.unnamed_batch_of_5d_inputs: (_small_graph(
        [helper.make_node("Relu", ["x"], ["y"])], [("x", ["N", 2, 2, 3, 3])], []), None),
    rw.shape_bounds_as_slice: (_small_graph(  # the sizes after the batch, as Shape-15 reads them
        [helper.make_node("Shape", ["x"], ["sizes"], start=1, end=-1), helper.make_node("Cast", ["sizes"], ["y"], to=1)],
        [("x", ["N", 3, 4, 2])], []), None),
    rw.vector_reshapes_as_identity: (_small_graph(  # torch.onnx's expand(batch, -1, -1): Reshape(shape, [-1])
        [helper.make_node("Shape", ["x"], ["shape"]), helper.make_node("Reshape", ["shape", "flat"], ["vector"]),
         helper.make_node("Reshape", ["x", "vector"], ["y"])], [("x", ["N", 3, 4])], [("flat", _int64(-1))]), None),
    rw.vector_wheres_as_gathers: (_small_graph(  # and Where(shape == -1, 1, shape), its condition a constant
        [helper.make_node("Shape", ["x"], ["shape"]), helper.make_node("Where", ["minus_one", "ones", "shape"], ["s"]),
         helper.make_node("Expand", ["token", "s"], ["expanded"]), helper.make_node("Add", ["x", "expanded"], ["y"])],
        [("x", ["N", 3, 4])], [("minus_one", np.array([False, True, False])), ("ones", _int64(1)),
                               ("token", _RNG_45.normal(size=(1, 1, 4)).astype(np.float32))]), "Where"),
    rw.einsum_as_matmul: (_small_graph(  # attention's scores, then its weighted values
        [helper.make_node("Einsum", ["x", "x"], ["scores"], equation="bhid,bhjd->bhij"),
         helper.make_node("Einsum", ["scores", "x"], ["y"], equation="B H I J, B H J D -> B H I D")],
        [("x", ["N", 2, 3, 4])], [], opset=17), "Einsum"),
    rw.allowzero_without_zeros: (_small_graph(  # the dynamo exporter's Reshape, its target read from x's shape
        [helper.make_node("Shape", ["x"], ["shape"], start=0, end=1), helper.make_node("Concat", ["shape", "rest"],
                                                                                     ["target"], axis=0),
         helper.make_node("Reshape", ["x", "target"], ["y"], allowzero=1)], [("x", ["N", 3, 4])], [("rest", _int64(12))],
        opset=17), None),
    rw.tile_as_expand: (_small_graph(  # CPM-Ant's: a row repeated once per sample of the batch
        [helper.make_node("Shape", ["x"], ["batch"], start=0, end=1),
         helper.make_node("Concat", ["batch", "once"], ["repeats"], axis=0),
         helper.make_node("Tile", ["row", "repeats"], ["rows"]), helper.make_node("Add", ["x", "rows"], ["y"])],
        [("x", ["N", 3])], [("once", _int64(1)), ("row", _RNG_45.normal(size=(1, 3)).astype(np.float32))]), "Tile"),
    rw.gather_elements_of_a_vector: (_small_graph(  # RoBERTa's position buffer expanded to the batch, gathered
        [helper.make_node("Shape", ["x"], ["batch"], start=0, end=1),
         helper.make_node("Concat", ["batch", "six"], ["shape"], axis=0),
         helper.make_node("Expand", ["positions", "shape"], ["every"]),
         helper.make_node("GatherElements", ["every", "picks"], ["picked"], axis=1),
         helper.make_node("Add", ["x", "picked"], ["y"])],
        [("x", ["N", 3])], [("six", _int64(6)), ("positions", _RNG_45.normal(size=(1, 6)).astype(np.float32)),
                            ("picks", np.array([[5, -1, 2]], np.int64))]), "GatherElements"),
    rw.gather_nd_as_gather: (_small_graph(  # the dynamo exporter's x[rows, columns]
        [helper.make_node("GatherND", ["x", "picks"], ["picked"]), helper.make_node("Relu", ["picked"], ["y"])],
        [("x", [3, 4, 5])], [("picks", np.array([[[2, 1], [0, 3]], [[1, -1], [2, 0]]], np.int64))]), "GatherND"),
    rw.matmul_batch_broadcast_as_tile: (_small_graph(  # multi-query attention: 4 query heads, one key head
        [helper.make_node("ReduceMean", ["x"], ["key"], axes=[1], keepdims=1),
         helper.make_node("Transpose", ["key"], ["key_t"], perm=[0, 1, 3, 2]),
         helper.make_node("MatMul", ["x", "key_t"], ["y"])], [("x", ["N", 4, 3, 5])], [], opset=17), None),
    rw.old_opsets_upgraded: (_small_graph(  # Pad-2, its pads and value attributes (opset 11 made them inputs)
        [helper.make_node("Pad", ["x"], ["y"], pads=[0, 1, 0, 2], value=2.0)], [("x", ["N", 3])], [], opset=9), None),
}


@pytest.mark.parametrize("rewrite", DIRECT, ids=lambda f: f.__name__)
def test_each_rewrite_changes_its_graph_and_computes_the_same(rewrite):
    """Every rewrite on a graph it applies to: the graph changes (the op it removes is gone, or the operands
    move) and ONNX Runtime computes the same outputs on random inputs, before and after."""
    original, removed = DIRECT[rewrite]
    rewritten = rewrite(onnx.ModelProto.FromString(original.SerializeToString()))
    assert rewritten.SerializeToString() != original.SerializeToString()
    if removed:
        assert removed not in {n.op_type for n in rewritten.graph.node}
    shape = [2 if isinstance(d, str) else d for d in
             [d.dim_param or d.dim_value for d in original.graph.input[0].type.tensor_type.shape.dim]]
    for seed in range(3):
        feeds = {"x": np.random.default_rng(seed).uniform(0.5, 2, size=shape).astype(np.float32)}
        np.testing.assert_allclose(_run(rewritten, feeds), _run(original, feeds), rtol=1e-5, atol=1e-6)


def test_the_direct_rewrite_tests_cover_every_registered_rewrite():
    """The registry drives the cases: each registered rewrite (rewrites/ and the MXNet-only ones of to_mxnet/) has
    a graph in DIRECT or a test of its own (ConstantOfShape, LayerNormalization, Slice bounds and the reference
    models' rewrites above; the MXNet-only ones in test_onnx_to_mxnet.py, whose registry cases reach them), and
    every rewrite a target's pipeline lists is registered."""
    from rosetta.convert.onnx import to_keras, to_mxnet, to_tensorflow, to_torch

    covered_elsewhere = {rw.drop_zero_initial_states, rw.drop_default_training_mode, rw.constants_to_initializers,
                         rw.axes_inputs_to_attributes, rw.positive_gather_indices, rw.initializers_as_inputs,
                         rw.decompose_layer_normalization, rw.constant_of_shape_as_initializers, rw.bounded_slices,
                         rw.batch_normalization_of_constants, rw.axis_ranges}
    mxnet_only = {"same_shape_adds", "integer_divisions", "shapes_as_references", "scalar_gather_indices",
                  "split_sizes_as_attribute", "name_omitted_inputs"}
    assert set(rw.registered()) == {f.__name__ for f in set(DIRECT) | covered_elsewhere} | mxnet_only
    listed = {f.__name__ for target in (to_keras, to_mxnet, to_tensorflow, to_torch) for f in target.REWRITES}
    assert listed <= set(rw.registered())


def test_an_identity_of_an_initializer_a_caller_may_override_or_of_a_graph_output_stays():
    """identity_of_initializers_as_initializers leaves an Identity alone where its copy would change the function
    (the initializer is also a graph input, which a caller may feed) or the graph's outputs (it makes one)."""
    fed = _small_graph([helper.make_node("Identity", ["w"], ["w_copy"]),
                        helper.make_node("Add", ["x", "w_copy"], ["y"])],
                       [("x", ["N", 3]), ("w", [3])], [("w", np.ones(3, np.float32))])
    output = _small_graph([helper.make_node("Identity", ["w"], ["y"])], [("x", ["N", 3])],
                          [("w", np.ones(3, np.float32))])
    for model in (fed, output):
        before = model.SerializeToString()
        assert rw.identity_of_initializers_as_initializers(model).SerializeToString() == before


def test_onnx2tf_keeps_the_upsampling_real_models_use():
    """onnx2tf gets U-Net's upsampling right; written as Gathers or MatMuls its layout inference took the U-Net
    apart: only the other Resize is written out."""
    original, _ = DIRECT[rw.resize_except_upsampling_as_gathers_and_matmuls]
    rewritten = rw.resize_except_upsampling_as_gathers_and_matmuls(onnx.ModelProto.FromString(original.SerializeToString()))
    assert [n.op_type for n in rewritten.graph.node].count("Resize") == 1
    assert rewritten.graph.node[0].op_type == "Resize" and rewritten.graph.node[0].output[0] == "repeated"


@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
def test_shifts_out_of_range_give_what_onnx_says(direction):
    """A shift by a negative amount or by the width or more gives 0 (a right shift of a negative value, -1), as
    ONNX's reference computes it: the rewritten graph gives that in ONNX Runtime, whose own BitShift does not."""
    from onnx.reference import ReferenceEvaluator

    graph = helper.make_graph([helper.make_node("BitShift", ["a", "b"], ["z"], direction=direction)], "g",
                              [helper.make_tensor_value_info("a", TensorProto.UINT8, [5]),
                               helper.make_tensor_value_info("b", TensorProto.UINT8, [5])],
                              [helper.make_tensor_value_info("z", TensorProto.UINT8, [5])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    feeds = {"a": np.array([200, 7, 1, 255, 16], np.uint8), "b": np.array([8, 9, 255, 1, 3], np.uint8)}
    rewritten = rw.shifts_out_of_range_as_where(onnx.ModelProto.FromString(model.SerializeToString()))
    np.testing.assert_array_equal(_run(rewritten, feeds), ReferenceEvaluator(model).run(None, feeds)[0])


def test_a_batch_normalization_of_constants_becomes_the_weights_torch_computes():
    """BiT's weight standardisation, batch_norm(weight, training=True) on a constant: folded into the initializer it
    computes, as torch computes it (biased batch variance; ONNX Runtime's training-mode BatchNormalization divides by
    another variance, 0.16 off here, so the rewrite is checked against torch, not against ONNX Runtime's run of the
    original graph). A BatchNormalization whose running statistics are read stays."""
    import torch

    weight = _RNG_45.normal(size=(1, 4, 6)).astype(np.float32)
    nodes = [helper.make_node("BatchNormalization", ["w", "ones", "zeros", "zeros", "ones"], ["standard", "mean", "var"],
                              training_mode=1, epsilon=1e-6),
             helper.make_node("Add", ["x", "standard"], ["y"])]
    initializers = [("w", weight), ("ones", np.ones(4, np.float32)), ("zeros", np.zeros(4, np.float32))]
    rewritten = rw.batch_normalization_of_constants(_small_graph(nodes, [("x", ["N", 4, 6])], initializers))
    assert "BatchNormalization" not in {node.op_type for node in rewritten.graph.node}
    x = np.random.default_rng(0).normal(size=(2, 4, 6)).astype(np.float32)
    expected = x + torch.nn.functional.batch_norm(torch.from_numpy(weight), None, None, training=True, eps=1e-6).numpy()
    np.testing.assert_allclose(_run(rewritten, {"x": x}), expected, rtol=1e-5, atol=1e-6)
    statistics_read = _small_graph(nodes + [helper.make_node("Add", ["x", "mean"], ["unused"])], [("x", ["N", 4, 6])],
                                   initializers)
    kept = rw.batch_normalization_of_constants(onnx.ModelProto.FromString(statistics_read.SerializeToString()))
    assert "BatchNormalization" in {node.op_type for node in kept.graph.node}


def test_a_range_over_the_run_time_batch_counts_along_it_in_keras_and_mxnet(tmp_path):
    """Issue 45: CLIP's pooled token, x[arange(batch), argmax]: a Range up to the run-time batch size, which
    neither the Keras mapper nor MXNet converted (Range: no converter), is RosettaAxisRange after axis_ranges, and
    both compute what ONNX Runtime does at two batch sizes (MXNet's ArgMax index, int64 there, was refused by
    the Add with the Range)."""
    from rosetta.convert.onnx.to_keras import onnx_to_keras_model
    from rosetta.frameworks.keras import import_keras

    nodes = [helper.make_node("Shape", ["x"], ["shape"]), helper.make_node("Gather", ["shape", "zero"], ["n"], axis=0),
             helper.make_node("Range", ["zero", "n", "one"], ["rows"]),
             helper.make_node("ReduceSum", ["x", "last"], ["score"], keepdims=0),
             helper.make_node("ArgMax", ["score"], ["best"], axis=1, keepdims=0),
             helper.make_node("Mul", ["rows", "four"], ["first"]), helper.make_node("Add", ["first", "best"], ["flat"]),
             helper.make_node("Reshape", ["x", "tokens"], ["token_rows"]),
             helper.make_node("Gather", ["token_rows", "flat"], ["y"], axis=0)]
    model = _graph(nodes, [("x", ["N", 4, 3])], [("y", ["N", 3])],
                   [("zero", np.array(0, np.int64)), ("one", np.array(1, np.int64)), ("four", np.array(4, np.int64)),
                    ("last", _int64(2)), ("tokens", _int64(-1, 3))])
    rewritten = rw.axis_ranges(onnx.ModelProto.FromString(model.SerializeToString()))
    assert "RosettaAxisRange" in {n.op_type for n in rewritten.graph.node}
    assert "Range" not in {n.op_type for n in rewritten.graph.node}
    keras_model = onnx_to_keras_model(onnx.ModelProto.FromString(model.SerializeToString()), import_keras())
    for batch in (2, 3):
        x = np.random.default_rng(batch).normal(size=(batch, 4, 3)).astype(np.float32)
        np.testing.assert_allclose(np.asarray(keras_model(x, training=False)), _run(model, {"x": x}), rtol=1e-6)
    x = np.random.default_rng(0).normal(size=(2, 4, 3)).astype(np.float32)
    np.testing.assert_allclose(_target_outputs(model, {"x": x}, tmp_path)[0], _run(model, {"x": x}), rtol=1e-6)


@pytest.mark.parametrize("equation, shapes", [
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("ij,kj->ik", [(3, 4), (5, 4)]), ("bi,bi->b", [(2, 3), (2, 3)]),
    ("bi,bj->bij", [(2, 3), (2, 4)]), ("hbid,hbjd->bhji", [(2, 3, 4, 5), (2, 3, 6, 5)]), ("i,j->ij", [(3,), (4,)]),
    ("bhd,hd->bh", [(2, 3, 5), (3, 5)]), ("bhwc,hkc->bhwk", [("N", 3, 4, 5), (3, 6, 5)]),
    ("bhwc,wkc->bhwk", [("N", 3, 4, 5), (4, 6, 5)]), ("ihc,bwc->bhwi", [(3, 4, 5), ("N", 6, 5)])])
def test_an_einsum_that_is_a_matrix_product_computes_the_same_as_a_matmul(equation, shapes):
    """Issue 45: MXNet has no Einsum (CvT, MaxViT); as Transposes, a MatMul and Unsqueeze/Squeeze, the same
    outputs in ONNX Runtime as Einsum's, for every arrangement of batch, summed and free letters; two free
    letters of one operand (SAM's relative positions) merged by a Reshape and split after, the run-time batch
    ("N", at two sizes) among them."""
    inputs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, shape) for name, shape in zip("ab", shapes)]
    graph = helper.make_graph([helper.make_node("Einsum", ["a", "b"], ["y"], equation=equation)], "g", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    rewritten = rw.einsum_as_matmul(onnx.ModelProto.FromString(model.SerializeToString()))
    assert "Einsum" not in {n.op_type for n in rewritten.graph.node}
    rng = np.random.default_rng(0)
    for batch in (2, 3):
        feeds = {name: rng.normal(size=[batch if d == "N" else d for d in shape]).astype(np.float32)
                 for name, shape in zip("ab", shapes)}
        np.testing.assert_allclose(_run(rewritten, feeds), _run(model, feeds), rtol=1e-5, atol=1e-6)


def test_constants_written_as_value_ints_are_read_as_any_other():
    """Issue 45: the dynamo exporter's optimiser writes small constants as Constant(value_ints=...); read only in
    the `value` form, a shape built from one could not be traced (CPM-Ant's zeros of [batch, 32]: MXNet's
    Expand refused)."""
    nodes = [helper.make_node("Constant", [], ["ints"], value_ints=[32]),
             helper.make_node("Constant", [], ["one"], value_float=1.5),
             helper.make_node("Shape", ["x"], ["batch"], start=0, end=1),
             helper.make_node("Concat", ["batch", "ints"], ["shape"], axis=0)]
    model = _small_graph(nodes + [helper.make_node("Expand", ["one", "shape"], ["y"])], [("x", ["N", 3])], [])
    values = constant_values(model)
    assert values["ints"].tolist() == [32] and values["ints"].dtype == np.int64 and values["one"] == np.float32(1.5)
    from rosetta.frameworks.onnx_graph import shape_tracer

    elements, _ = shape_tracer(model)
    assert elements("shape") == [("x", 0), 32]


@pytest.mark.parametrize("target", ["torch", "mxnet", "keras"])
def test_a_constant_written_as_value_ints_converts_in_every_bridge(target, tmp_path):
    """Issue 45: the dynamo exporter's optimiser writes an Unsqueeze's axes as Constant(value_ints=...), which
    onnx2torch read as a list ("'list' object has no attribute 'tolist'": timm's CSATv2, torch CANNOT); each
    bridge's pipeline starts with constant_attributes_as_tensors."""
    nodes = [helper.make_node("Constant", [], ["axes"], value_ints=[1]),
             helper.make_node("Constant", [], ["scale"], value_float=1.5),
             helper.make_node("Unsqueeze", ["x", "axes"], ["wide"]), helper.make_node("Mul", ["wide", "scale"], ["y"])]
    model = _graph(nodes, [("x", ["N", 3])], [("y", ["N", 1, 3])], opset=18)
    x = np.random.default_rng(0).normal(size=(2, 3)).astype(np.float32)
    np.testing.assert_allclose(_target_outputs(model, {"x": x}, tmp_path, target)[0], _run(model, {"x": x}), rtol=1e-6)


def test_a_clip_by_bounds_computed_at_run_time_converts_to_torch(tmp_path):
    """Issue 45: onnx2torch refused a Clip whose bounds are not constants ("Dynamic value of min/max is not
    implemented": timm's EdgeNeXt); its pipeline writes it as Min(Max(x, min), max), ONNX's definition."""
    nodes = [helper.make_node("ReduceMin", ["x"], ["low"], keepdims=0), helper.make_node("Neg", ["low"], ["high"]),
             helper.make_node("Clip", ["x", "low", "high"], ["y"])]
    model = _graph(nodes, [("x", ["N", 4])], [("y", ["N", 4])], opset=17)
    x = np.array([[-2.0, 0.5, 3.0, -0.5], [1.0, 2.5, -1.0, 0.0]], np.float32)
    np.testing.assert_allclose(_target_outputs(model, {"x": x}, tmp_path, "torch")[0], _run(model, {"x": x}))


def test_a_gather_nd_converts_to_mxnet_as_a_gather_of_flat_positions(tmp_path):
    """Issue 45: MXNet has no GatherND (the dynamo exporter's advanced indexing: timm's CSATv2); as a Gather of
    data with the indexed axes flattened, by each index's flat position, MXNet computes ONNX Runtime's."""
    nodes = [helper.make_node("GatherND", ["x", "picks"], ["y"])]
    model = _graph(nodes, [("x", ["N", 4, 5])], [("y", None)],
                   [("picks", np.array([[1, 2], [0, -1], [1, 0]], np.int64))], opset=17)
    x = np.random.default_rng(3).normal(size=(2, 4, 5)).astype(np.float32)
    np.testing.assert_allclose(_target_outputs(model, {"x": x}, tmp_path)[0], _run(model, {"x": x}), rtol=1e-6)


def test_remove_dead_nodes_keeps_what_a_subgraph_reads_from_the_graph():
    """SAM2's Hiera: a Sub's output is read only inside an If's branch, which no edge of the graph shows; dropping
    the Sub as unused left a graph the ONNX checker refuses (every target CANNOT)."""
    branch = lambda name, op: helper.make_graph(  # noqa: E731 - each branch reads `shifted` from the graph
        [helper.make_node(op, ["shifted", "x"], [f"{name}_out"])], name, [],
        [helper.make_tensor_value_info(f"{name}_out", TensorProto.FLOAT, [3])])
    nodes = [helper.make_node("Sub", ["x", "w"], ["shifted"]),
             helper.make_node("ReduceSum", ["x"], ["total"], keepdims=0),
             helper.make_node("Greater", ["total", "zero"], ["positive"]),
             helper.make_node("If", ["positive"], ["y"], then_branch=branch("then", "Add"),
                              else_branch=branch("else", "Mul"))]
    model = _small_graph(nodes, [("x", [3])], [("w", np.ones(3, np.float32)), ("zero", np.zeros((), np.float32))])
    model.graph.output[0].CopyFrom(helper.make_tensor_value_info("y", TensorProto.FLOAT, [3]))
    x = np.array([1.0, 2.0, 3.0], np.float32)
    expected = _run_all(model, {"x": x})
    rewritten = rw.remove_dead_nodes(model)
    onnx.checker.check_model(rewritten)
    assert "Sub" in {node.op_type for node in rewritten.graph.node}
    np.testing.assert_array_equal(_run_all(rewritten, {"x": x})[0], expected[0])


def test_an_einsum_by_a_constant_reads_the_constant_s_sizes():
    """SAM's relative positions are an initializer by the time the rewrite runs, which shape inference does not
    list: its sizes are read from its value (was left an Einsum, which MXNet has no converter for)."""
    table = np.random.default_rng(3).normal(size=(4, 6, 5)).astype(np.float32)
    graph = helper.make_graph([helper.make_node("Einsum", ["x", "table"], ["y"], equation="bhwc,hkc->bhwk")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4, 3, 5])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(table, "table")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    rewritten = rw.einsum_as_matmul(onnx.ModelProto.FromString(model.SerializeToString()))
    assert "Einsum" not in {n.op_type for n in rewritten.graph.node}
    x = np.random.default_rng(4).normal(size=(3, 4, 3, 5)).astype(np.float32)
    np.testing.assert_allclose(_run(rewritten, {"x": x}), _run(model, {"x": x}), rtol=1e-5, atol=1e-6)


def test_a_resize_of_a_constant_is_rewritten_from_the_constant_s_shape():
    """DINOv2's position embeddings (a constant by the time the rewrites run) resized to sizes made constant:
    shape inference lists no initializer, so the constant's shape is read from its value (the Resize was left,
    and MXNet refused its omitted roi and scales)."""
    table = np.random.default_rng(5).normal(size=(1, 2, 5, 5)).astype(np.float32)
    nodes = [helper.make_node("Resize", ["table", "", "", "sizes"], ["resized"], mode="cubic"),
             helper.make_node("Add", ["x", "resized"], ["y"])]
    model = _small_graph(nodes, [("x", ["N", 2, 3, 4])], [("table", table), ("sizes", _int64(1, 2, 3, 4))])
    x = np.random.default_rng(6).normal(size=(2, 2, 3, 4)).astype(np.float32)
    for rewrite in (rw.resize_sizes_as_scales, rw.resize_as_gathers_and_matmuls):
        rewritten = rewrite(onnx.ModelProto.FromString(model.SerializeToString()))
        assert rewritten.SerializeToString() != model.SerializeToString(), rewrite.__name__
        np.testing.assert_allclose(_run(rewritten, {"x": x}), _run(model, {"x": x}), rtol=1e-5, atol=1e-6)


def test_a_tile_of_a_constant_by_the_batch_is_expand_and_reshape(tmp_path):
    """BLOOM's ALiBi slopes (one per head) tiled once per sample, Tile(slopes, [batch]): neither the Keras mapper
    nor MXNet takes a Tile by repeats read at run time of an axis of size other than 1. As Unsqueeze, Expand to
    (batch, heads) and Reshape: the same outputs in ONNX Runtime at two batch sizes, and in Keras and MXNet."""
    from rosetta.convert.onnx.to_keras import onnx_to_keras_model
    from rosetta.frameworks.keras import import_keras

    nodes = [helper.make_node("Shape", ["x"], ["batch"], start=0, end=1),
             helper.make_node("Tile", ["slopes", "batch"], ["tiled"]),
             helper.make_node("Reshape", ["tiled", "rows"], ["per_sample"]),
             helper.make_node("Mul", ["x", "per_sample"], ["y"])]
    model = _small_graph(nodes, [("x", ["N", 3])], [("slopes", np.array([0.5, -2.0, 3.0], np.float32)),
                                                      ("rows", _int64(-1, 3))])
    rewritten = rw.tile_as_expand(onnx.ModelProto.FromString(model.SerializeToString()))
    assert "Tile" not in {n.op_type for n in rewritten.graph.node}
    keras_model = onnx_to_keras_model(onnx.ModelProto.FromString(model.SerializeToString()), import_keras())
    for batch in (2, 3):
        x = np.random.default_rng(batch).normal(size=(batch, 3)).astype(np.float32)
        np.testing.assert_allclose(_run(rewritten, {"x": x}), _run(model, {"x": x}), rtol=1e-6)
        np.testing.assert_allclose(np.asarray(keras_model(x, training=False)), _run(model, {"x": x}), rtol=1e-6)
    x = np.random.default_rng(0).normal(size=(2, 3)).astype(np.float32)
    np.testing.assert_allclose(_target_outputs(model, {"x": x}, tmp_path)[0], _run(model, {"x": x}), rtol=1e-6)


def test_a_clip_by_constant_nodes_is_converted_by_onnx2torch(tmp_path):
    """onnx2torch reads Clip's bounds among the initializers only; given by Constant nodes (timm's SwinV2-CR's
    logit scale clamp), it refused them as computed at run time. As initializers, it converts the Clip, and the
    module computes what ONNX Runtime does."""
    from rosetta.frameworks.onnx2torch import build_module

    nodes = [helper.make_node("Constant", [], ["low"], value=numpy_helper.from_array(np.array(-0.5, np.float32))),
             helper.make_node("Constant", [], ["high"], value=numpy_helper.from_array(np.array(0.75, np.float32))),
             helper.make_node("Clip", ["x", "low", "high"], ["y"])]
    model = _small_graph(nodes, [("x", ["N", 3])], [])
    rewritten = rw.constant_weights_as_initializers(onnx.ModelProto.FromString(model.SerializeToString()))
    assert {init.name for init in rewritten.graph.initializer} == {"low", "high"}
    x = np.random.default_rng(7).normal(size=(2, 3)).astype(np.float32)
    onnx.save(rewritten, str(tmp_path / "clip.onnx"))
    module = build_module(tmp_path / "clip.onnx")
    np.testing.assert_allclose(module(torch.from_numpy(x)).numpy(), _run(model, {"x": x}), rtol=1e-6)


def test_a_clip_with_only_a_max_is_written_as_min_for_onnx2torch(tmp_path):
    """onnx2torch refused a Clip whose min is omitted before a constant max (timm's SwinV2-CR clamps its logit
    scale so): clip_bounds_as_max_min writes it as Min(x, max), which it converts."""
    from rosetta.convert.onnx.to_torch import REWRITES
    from rosetta.frameworks.onnx2torch import build_module

    model = _small_graph([helper.make_node("Clip", ["x", "", "high"], ["y"])], [("x", ["N", 3])],
                         [("high", np.array(0.25, np.float32))])
    rewritten = rw.apply(REWRITES, onnx.ModelProto.FromString(model.SerializeToString()))
    assert "Clip" not in {n.op_type for n in rewritten.graph.node}
    onnx.save(rewritten, str(tmp_path / "clip.onnx"))
    x = np.random.default_rng(8).normal(size=(2, 3)).astype(np.float32)
    np.testing.assert_allclose(build_module(tmp_path / "clip.onnx")(torch.from_numpy(x)).numpy(),
                               _run(model, {"x": x}), rtol=1e-6)


def test_a_batch_followed_through_a_chain_too_long_to_follow_is_left_to_reshape_as_minus_one():
    """The shape tracer follows a size back through each op (MatMul, Add of a bias, Relu: 1,200 here, no
    residual to stop it) only so far (_MAX_FOLLOWED), not into Python's recursion limit: past it the batch is
    unknown, the one unknown element of the target, -1, and the graph computes the same."""
    nodes, initializers, x = [], [], "x"
    for i in range(400):
        initializers += [(f"w{i}", np.eye(4, dtype=np.float32)), (f"b{i}", np.zeros(4, np.float32))]
        nodes += [helper.make_node("MatMul", [x, f"w{i}"], [f"m{i}"]),
                  helper.make_node("Add", [f"m{i}", f"b{i}"], [f"a{i}"]), helper.make_node("Relu", [f"a{i}"], [f"r{i}"])]
        x = f"r{i}"
    nodes += [helper.make_node("Shape", ["x"], ["shape"]), helper.make_node("Gather", ["shape", "first"], ["batch"]),
              helper.make_node("Concat", ["batch", "rest"], ["target"], axis=0),
              helper.make_node("Reshape", [x, "target"], ["y"])]
    model = _small_graph(nodes, [("x", ["N", 4])], initializers + [("first", _int64(0)), ("rest", _int64(2, 2))])
    rewritten = rw.constant_reshape_shapes(onnx.ModelProto.FromString(model.SerializeToString()))
    (target,) = [numpy_helper.to_array(i).tolist() for i in rewritten.graph.initializer if i.name == "y_constant_shape"]
    assert target == [-1, 2, 2]
    feeds = {"x": np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)}
    np.testing.assert_array_equal(_run(rewritten, feeds), _run(model, feeds))
