"""Optimiser specs come from the model registry and cross process boundaries as JSON unchanged."""

from __future__ import annotations

import numpy as np
import pytest

from rosetta.errors import RosettaError
from rosetta.models import get_model, list_models
from rosetta.execution import pack, unpack
from rosetta.train.optim import OptimizerSpec, synthetic_labels, training_batches


@pytest.mark.parametrize("model", list_models())
def test_spec_from_registry_round_trips(model):
    spec = OptimizerSpec.from_training(get_model(model).training)
    assert OptimizerSpec.from_json(spec.to_json()) == spec


def test_dlf_optimisers():
    cnn, gru = (OptimizerSpec.from_training(get_model(m).training) for m in ("cnn", "gru"))
    assert (cnn.name, cnn.lr, cnn.momentum, cnn.nesterov) == ("sgd", 0.01, 0.9, False)
    assert (gru.name, gru.lr, gru.betas, gru.eps, gru.epsilon) == ("adam", 0.001, (0.9, 0.999), 1e-8, "torch")


def test_unknown_optimizer_is_a_clear_error():
    with pytest.raises(RosettaError, match="unknown optimizer 'rmsprop'"):
        OptimizerSpec(name="rmsprop", lr=0.1)
    with pytest.raises(RosettaError, match="epsilon placement"):
        OptimizerSpec(name="adam", lr=0.1, epsilon="inside")


@pytest.mark.parametrize("model", list_models())
def test_batches_are_seeded_and_survive_a_job_boundary(model):
    spec = get_model(model)
    batches = training_batches(spec, 3, 2, seed=0)
    arrays: dict = {}
    again = unpack(pack(training_batches(spec, 3, 2, seed=0), arrays), arrays)
    assert len(again) == 3
    for (feeds, labels), (feeds2, labels2) in zip(batches, again):
        assert feeds.keys() == feeds2.keys() and all(np.array_equal(feeds[k], feeds2[k]) for k in feeds)
        assert np.array_equal(labels, labels2)
    first, second = (next(iter(feeds.values())) for feeds, _ in batches[:2])
    assert not np.array_equal(first, second)  # a new batch every step
    labels = synthetic_labels(spec, 4, 0)
    assert labels.dtype == (np.int64 if spec.training.loss == "cross_entropy" else np.float32)
