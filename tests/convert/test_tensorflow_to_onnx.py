"""tf2onnx on a SavedModel (the tensorflow-roundtrip target and users' SavedModels and Keras files), run in the
process that has TensorFlow: the signature's names and channels-last tensors come back as asked, and what
tf2onnx cannot convert is one line naming every op, with no model left behind."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

from rosetta.convert.onnx.from_tensorflow import run_tf2onnx
from rosetta.errors import RosettaError
from rosetta.frameworks.tensorflow import import_tensorflow


def _saved_model(folder, function, shape):
    tf = import_tensorflow()
    module = tf.Module()
    module.serve = tf.function(lambda x: {"y": function(tf, x)}, input_signature=[tf.TensorSpec(shape, tf.float32, name="x")])
    tf.saved_model.save(module, str(folder), signatures={"serving_default": module.serve})
    return folder


def test_channels_last_tensors_come_back_channels_first(tmp_path):
    saved = _saved_model(tmp_path / "saved", lambda tf, x: tf.nn.relu(x) * tf.range(3, dtype=tf.float32), [2, 4, 5, 3])
    run_tf2onnx(saved, tmp_path / "model.onnx", 17, nchw_inputs=["x"], nchw_outputs=["y"])
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 5)).astype(np.float32)  # NCHW
    session = ort.InferenceSession(str(tmp_path / "model.onnx"), providers=["CPUExecutionProvider"])
    (y,) = session.run(["y"], {"x": x})
    np.testing.assert_allclose(y, np.maximum(x, 0) * np.arange(3, dtype=np.float32)[None, :, None, None], rtol=1e-6)


@pytest.mark.parametrize("function, reason", [
    (lambda tf, x: tf.math.igamma(x, x) + tf.math.lgamma(x), "tf2onnx failed: TensorFlow ops it cannot convert: Igamma, Lgamma"),
    (None, "tf2onnx failed: "),  # not a SavedModel: TensorFlow's own reason, in one line
])
def test_what_tf2onnx_cannot_convert_is_one_line_and_no_model(function, reason, tmp_path):
    saved = _saved_model(tmp_path / "saved", function, [2, 3]) if function else tmp_path
    with pytest.raises(RosettaError) as error:
        run_tf2onnx(saved, tmp_path / "model.onnx", 17)
    message = str(error.value)
    assert message.startswith(reason) and "\n" not in message and len(message) > len("tf2onnx failed: ") + 5
    assert not (tmp_path / "model.onnx").exists()
