"""Trainers in every framework: the converted artifacts train every weight the reference trains."""

from __future__ import annotations

import pytest

from rosetta.convert.targets import get_target
from rosetta.frameworks import trainable_frameworks, trainer_class
from rosetta.errors import RosettaError
from rosetta.models import get_model
from rosetta.train.base import REFERENCE, run_training
from rosetta.train.optim import training_batches, training_options


@pytest.mark.parametrize("target", trainable_frameworks())
def test_converted_gru_trains_every_reference_parameter(store, target):
    """onnx2torch keeps the embedding table as a buffer and MXNet holds graph constants as parameters: the
    trainers must still train exactly the reference's parameters, no fewer and no more."""
    spec = get_model("gru")
    folder = store.get(spec, 0, get_target(target).chain, get_target(target).export_options())
    trained = run_training(target, folder, training_batches(spec, 1, 2, 0), training_options(spec))
    assert trained["parameters"].size == spec.parameter_count


def test_reference_training_is_deterministic():
    spec = get_model("cnn")
    batches = training_batches(spec, 2, 2, 0)
    runs = [run_training("torch", REFERENCE, batches, {**training_options(spec, "float64"), "model": "cnn", "seed": 0})
            for _ in range(2)]
    assert (runs[0]["losses"] == runs[1]["losses"]).all()
    assert runs[0]["step_seconds"]["repeats"] == 2


def test_inference_only_framework_cannot_train():
    with pytest.raises(RosettaError, match="onnxruntime artifacts are inference-only"):
        trainer_class("onnxruntime")
