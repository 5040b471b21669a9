"""What tf2onnx writes for a Keras 3 model, made plain ONNX (rosetta.convert.onnx.tf2onnx_graph): each rewrite
computes what the graph tf2onnx wrote computes, at any batch size, and leaves no op of the pattern it removes.
The graphs are built here as tf2onnx writes them (the zoo's keras-transformer-encoder converts a real one)."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from rosetta.convert.onnx import tf2onnx_graph as plain

OPSET = 17
RNG = np.random.default_rng(0)


def graph(nodes, inputs, outputs, constants) -> onnx.ModelProto:
    model = helper.make_model(
        helper.make_graph(nodes, "tf2onnx", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
                          [numpy_helper.from_array(np.asarray(v), n) for n, v in constants.items()]),
        opset_imports=[helper.make_opsetid("", OPSET)], ir_version=8)  # as tf2onnx writes opset 17
    return onnx.shape_inference.infer_shapes(model, strict_mode=True)


def run(model, feeds) -> np.ndarray:
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]


def assert_same_function(before, after, shapes: dict, atol: float = 0.0) -> None:
    for batch in (1, 5):  # the batch sizes the rewrite never measured at
        feeds = {name: RNG.standard_normal((batch, *shape)).astype(np.float32) for name, shape in shapes.items()}
        np.testing.assert_allclose(run(after, feeds), run(before, feeds), rtol=0, atol=atol)


def op_types(model) -> set[str]:
    return {node.op_type for node in model.graph.node}


def copy(model):
    duplicate = onnx.ModelProto()
    duplicate.CopyFrom(model)
    return duplicate


def test_a_reshape_target_computed_from_the_batch_size_becomes_a_constant_with_minus_one():
    """tf2onnx's Tensordot: Reshape(x, [N * 4, 6]) from Shape -> Gather -> Mul -> Concat."""
    nodes = [helper.make_node("Shape", ["x"], ["shape"]), helper.make_node("Gather", ["shape", "zero"], ["n"]),
             helper.make_node("Mul", ["n", "four"], ["rows"]), helper.make_node("Concat", ["rows", "six"], ["target"], axis=0),
             helper.make_node("Reshape", ["x", "target"], ["y"])]
    before = graph(nodes, [("x", ["N", 4, 6])], ["y"], {"zero": np.array([0]), "four": np.array([4]), "six": np.array([6])})
    after = plain.constant_reshape_targets(copy(before))
    assert op_types(after) == {"Reshape"}
    assert numpy_helper.to_array(next(i for i in after.graph.initializer if i.name.endswith("_constant_shape"))).tolist() == [-1, 6]
    assert_same_function(before, after, {"x": (4, 6)})


def test_a_reshape_whose_size_moves_on_two_axes_is_left_as_it_is():
    nodes = [helper.make_node("Shape", ["x"], ["shape"]), helper.make_node("Gather", ["shape", "zero"], ["n"]),
             helper.make_node("Concat", ["n", "n", "minus"], ["target"], axis=0),
             helper.make_node("Reshape", ["x", "target"], ["y"])]
    before = graph(nodes, [("x", ["N", 4, 6])], ["y"], {"zero": np.array([0]), "minus": np.array([-1])})
    assert op_types(plain.constant_reshape_targets(copy(before))) == op_types(before)


@pytest.mark.parametrize("equation, shapes", [
    ("aecd,abcd->acbe", {"key": (7, 4, 8), "query": (5, 4, 8)}),  # MultiHeadAttention's scores
    ("acbe,aecd->abcd", {"key": (4, 5, 7), "query": (7, 4, 8)}),  # and its weighted values
])
def test_attention_einsums_become_transposes_and_a_batched_matmul(equation, shapes):
    before = graph([helper.make_node("Einsum", list(shapes), ["y"], equation=equation)],
                   [(name, ["N", *shape]) for name, shape in shapes.items()], ["y"], {})
    after = plain.einsum_as_matmul(copy(before))
    assert "Einsum" not in op_types(after) and "MatMul" in op_types(after)
    assert_same_function(before, after, shapes, atol=1e-5)


def test_other_einsums_stay_einsum_ops():
    before = graph([helper.make_node("Einsum", ["a", "b"], ["y"], equation="abc,abd->cd")],
                   [("a", ["N", 3, 4]), ("b", ["N", 3, 5])], ["y"], {})
    assert op_types(plain.einsum_as_matmul(copy(before))) == {"Einsum"}


def test_dense_on_a_sequence_is_one_matmul():
    nodes = [helper.make_node("Reshape", ["x", "flat"], ["rows"]), helper.make_node("MatMul", ["rows", "w"], ["product"]),
             helper.make_node("Reshape", ["product", "back"], ["y"])]
    before = graph(nodes, [("x", ["N", 6, 8])], ["y"], {"flat": np.array([-1, 8]), "back": np.array([-1, 6, 3]),
                                                         "w": RNG.standard_normal((8, 3)).astype(np.float32)})
    after = plain.tensordot_as_matmul(copy(before))
    assert [node.op_type for node in after.graph.node] == ["MatMul"]
    assert_same_function(before, after, {"x": (6, 8)})


def keras_layer_normalization(reduce: str) -> onnx.ModelProto:
    """Keras 3's LayerNormalization on TensorFlow as tf2onnx writes it: moments, then
    x * inv + (beta - mean * inv), inv = gamma / sqrt(var + eps); the mean by GlobalAveragePool or ReduceMean."""
    def mean(source, target):
        return helper.make_node("GlobalAveragePool", [source], [target]) if reduce == "pool" else \
            helper.make_node("ReduceMean", [source], [target], axes=[-1], keepdims=1)

    nodes = [mean("x", "mean"), helper.make_node("Sub", ["x", "mean"], ["centred"]),
             helper.make_node("Mul", ["centred", "centred"], ["squared"]), mean("squared", "variance"),
             helper.make_node("Add", ["variance", "epsilon"], ["shifted"]), helper.make_node("Sqrt", ["shifted"], ["root"]),
             helper.make_node("Reciprocal", ["root"], ["inverse"]), helper.make_node("Mul", ["inverse", "gamma"], ["scale"]),
             helper.make_node("Mul", ["x", "scale"], ["scaled"]), helper.make_node("Neg", ["mean"], ["negated"]),
             helper.make_node("Mul", ["negated", "scale"], ["shift"]), helper.make_node("Add", ["shift", "beta"], ["offset"]),
             helper.make_node("Add", ["scaled", "offset"], ["y"])]
    constants = {"epsilon": np.float32(1e-3), "gamma": RNG.uniform(0.5, 1.5, (1, 1, 8)).astype(np.float32),
                 "beta": RNG.uniform(-0.2, 0.2, (1, 1, 8)).astype(np.float32)}
    return graph(nodes, [("x", ["N", 6, 8])], ["y"], constants)


@pytest.mark.parametrize("reduce", ["pool", "reduce_mean"])
def test_keras_layer_normalization_arithmetic_is_one_layer_normalization(reduce):
    before = keras_layer_normalization(reduce)
    after = plain.fused_layer_normalization(copy(before))
    assert [node.op_type for node in after.graph.node] == ["LayerNormalization"]
    assert_same_function(before, after, {"x": (6, 8)}, atol=1e-5)


def test_tensorflow_exact_gelu_is_written_as_torch_writes_it():
    """0.5 x erfc(-x / sqrt 2), after rosetta's Erfc handler: 0.5 x (1 - erf(Neg(x) / sqrt 2))."""
    nodes = [helper.make_node("Mul", ["half", "x"], ["half_x"]), helper.make_node("Neg", ["x"], ["negated"]),
             helper.make_node("Mul", ["negated", "root_half"], ["scaled"]), helper.make_node("Erf", ["scaled"], ["erf"]),
             helper.make_node("Sub", ["one", "erf"], ["erfc"]), helper.make_node("Mul", ["half_x", "erfc"], ["y"])]
    before = graph(nodes, [("x", ["N", 16])], ["y"],
                   {"half": np.float32(0.5), "root_half": np.float32(np.sqrt(0.5)), "one": np.float32(1.0)})
    after = plain.erfc_as_one_plus_erf(plain.negation_in_constants(copy(before)))
    assert sorted(node.op_type for node in after.graph.node) == ["Add", "Erf", "Mul", "Mul", "Mul"]
    assert_same_function(before, after, {"x": (16,)})


def test_what_the_sequence_length_alone_computes_becomes_a_constant_and_the_batch_dependent_stays():
    """T5's position buckets: Range over a length read from the input's shape (rosetta.convert.onnx.dynamic_batch);
    the batch size read the same way varies, so the Expand it feeds stays computed."""
    from rosetta.convert.onnx.dynamic_batch import batch_independent_constants

    nodes = [helper.make_node("Shape", ["x"], ["shape"]), helper.make_node("Gather", ["shape", "one"], ["length"]),
             helper.make_node("Range", ["zero", "length", "step"], ["positions"]),
             helper.make_node("Cast", ["positions"], ["bias"], to=TensorProto.FLOAT),
             helper.make_node("Add", ["x", "bias"], ["shifted"]), helper.make_node("Relu", ["shifted"], ["y"])]
    before = graph(nodes, [("x", ["N", 4, 6])], ["y"], {"one": np.array(2), "zero": np.array(0), "step": np.array(1)})
    after = batch_independent_constants(copy(before))
    assert op_types(after) == {"Add", "Relu"}
    assert_same_function(before, after, {"x": (4, 6)})
    batch = [helper.make_node("Shape", ["x"], ["shape"]), helper.make_node("Gather", ["shape", "first"], ["n"]),
             helper.make_node("Concat", ["n", "six"], ["target"], axis=0), helper.make_node("Expand", ["row", "target"], ["y"])]
    varying = graph(batch, [("x", ["N", 6])], ["y"], {"first": np.array([0]), "six": np.array([6]),
                                                       "row": np.ones((1, 6), np.float32)})
    assert op_types(batch_independent_constants(copy(varying))) == op_types(varying)
