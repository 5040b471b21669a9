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


@pytest.mark.parametrize("model,moments", [("cnn", 1), ("gru", 2)])
def test_optimizer_state_is_one_buffer_per_value_and_moment(model, moments):
    """SGD keeps one momentum buffer per trainable value, Adam two moments; neither model has BatchNorm."""
    spec = get_model(model)
    trained = run_training("torch", REFERENCE, training_batches(spec, 1, 2, 0),
                           {**training_options(spec), "model": model, "seed": 0})
    assert trained["optimizer_state"].size == moments * spec.parameter_count
    assert trained["statistics"].size == 0


def test_resnet50_exposes_every_batchnorm_running_mean_and_variance():
    import torch

    spec = get_model("resnet50")
    channels = sum(m.num_features for m in spec.build(0).modules() if isinstance(m, torch.nn.BatchNorm2d))
    trained = run_training("torch", REFERENCE, training_batches(spec, 1, 2, 0),
                           {**training_options(spec), "model": "resnet50", "seed": 0})
    assert trained["statistics"].size == 2 * channels


def test_seeded_model_changes():
    """The training faults' model changes: BatchNorm momentum 1 - m, the first layer with weights frozen."""
    import torch

    from rosetta.train.torch import flip_batchnorm_momentum, freeze_first_layer

    module = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.BatchNorm2d(2), torch.nn.Conv2d(2, 2, 1))
    assert flip_batchnorm_momentum(module) == 1 and module[1].momentum == pytest.approx(0.9)
    assert freeze_first_layer(module) == ["0.weight", "0.bias"]
    assert [p.requires_grad for p in module.parameters()] == [False, False, True, True, True, True]
