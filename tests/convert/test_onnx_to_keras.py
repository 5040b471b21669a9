from __future__ import annotations

import pytest
from onnx import TensorProto, helper

from rosetta.errors import RosettaError


def test_unsupported_op_is_a_clear_error_naming_it():
    from rosetta.convert.onnx.to_keras import onnx_to_keras_model
    from rosetta.frameworks.keras import import_keras

    node = helper.make_node("Sin", ["x"], ["y"], name="the_sine")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])])
    with pytest.raises(RosettaError, match="ONNX op Sin cannot be converted to keras: rosetta's Keras mapper"):
        onnx_to_keras_model(helper.make_model(graph), import_keras())


def test_keras_artifact_loads_in_plain_keras_safe_mode(store):
    """No rosetta code is needed to load it: a fresh interpreter with only keras imported."""
    import subprocess
    import sys

    from rosetta.convert.targets import get_target
    from rosetta.models import get_model

    target = get_target("keras")
    folder = store.get(get_model("cnn"), 0, target.chain, target.export_options())
    code = ("import keras; m = keras.saving.load_model(r'%s', safe_mode=True); "
            "print(sum(int(w.numpy().size) for w in m.trainable_weights))" % (folder / "model.keras"))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env={"KERAS_BACKEND": "tensorflow", "TF_CPP_MIN_LOG_LEVEL": "3", "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == str(get_model("cnn").parameter_count)
