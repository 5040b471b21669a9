from __future__ import annotations

import numpy as np
import pytest

from rosetta.convert.targets import get_target
from rosetta.errors import RosettaError
from rosetta.frameworks import load_runner, runner_class
from rosetta.models import get_model
from rosetta.models.inputs import generate_inputs


@pytest.fixture(scope="module")
def cnn_runner(store):
    return load_runner("onnxruntime", store.get(get_model("cnn"), 0, get_target("onnxruntime").chain))


def test_runner_reports_framework_and_version():
    cls = runner_class("onnxruntime")
    assert cls.framework == "onnxruntime" and cls.version().count(".") >= 1


def test_wrong_input_shape_is_one_clear_line(cnn_runner):
    with pytest.raises(RosettaError, match=r"input 'images' has shape \(2, 3, 31, 32\); the model expects \(batch, 3, 32, 32\)"):
        cnn_runner.predict({"images": np.zeros((2, 3, 31, 32), np.float32)})


def test_wrong_input_dtype_is_one_clear_line(cnn_runner):
    with pytest.raises(RosettaError, match="input 'images' has dtype float64; the model expects float32"):
        cnn_runner.predict({"images": np.zeros((2, 3, 32, 32))})


def test_wrong_input_name_is_one_clear_line(cnn_runner):
    with pytest.raises(RosettaError, match=r"missing \['images'\], unexpected \['x'\]"):
        cnn_runner.predict({"x": np.zeros((2, 3, 32, 32), np.float32)})


def test_unknown_framework_is_a_clear_error():
    with pytest.raises(RosettaError, match="unknown framework 'caffe'"):
        runner_class("caffe")


def test_optimised_and_unoptimised_sessions_agree_on_a_correct_artifact(store):
    folder = store.get(get_model("cnn"), 0, get_target("onnxruntime").chain)
    feeds = generate_inputs(get_model("cnn").inputs, 4, 0)
    a = load_runner("onnxruntime", folder, optimization="all").predict(feeds)["logits"]
    b = load_runner("onnxruntime", folder, optimization="disabled").predict(feeds)["logits"]
    np.testing.assert_allclose(a, b, atol=1e-5)
