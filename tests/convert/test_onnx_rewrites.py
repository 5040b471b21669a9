"""The graph rewrites are semantics-preserving: the rewritten graph computes the same outputs in ONNX Runtime."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from rosetta.convert.onnx import rewrites as rw
from rosetta.convert.targets import get_target
from rosetta.models import get_model, list_models
from rosetta.models.inputs import generate_inputs

# Rewrites whose output is valid ONNX at the model's opset, so ONNX Runtime can run it. axes_inputs_to_attributes
# writes opset-11-style nodes for MXNet's importer (checked structurally below; MXNet's verification runs it).
REWRITES = [rw.drop_zero_initial_states, rw.constants_to_initializers, rw.positive_gather_indices,
            rw.drop_default_training_mode, rw.initializers_as_inputs]


def _run(model, feeds):
    # Optimisations off on both sides: ORT's optimiser treats initializers listed as inputs as overridable
    # and so fuses differently, which changes float rounding, not the function.
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)[0]


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
