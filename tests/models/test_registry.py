"""Every registered reference model is checked by the same tests (timm style): add a model, get the tests."""

from __future__ import annotations

import pytest
import torch

from rosetta.errors import RosettaError
from rosetta.models import get_model, list_models, parse_model_list
from rosetta.models.inputs import generate_inputs

MODELS = list_models()


def test_the_three_dlf_models_are_registered():
    assert {"cnn", "gru", "resnet50"} <= set(MODELS)


@pytest.mark.parametrize("name", MODELS)
def test_parameter_count_matches_spec(name):
    spec = get_model(name)
    assert sum(p.numel() for p in spec.build(0).parameters()) == spec.parameter_count


@pytest.mark.parametrize("name", MODELS)
def test_same_seed_gives_bit_identical_weights_and_other_seeds_differ(name):
    spec = get_model(name)
    a, b, c = spec.build(3).state_dict(), spec.build(3).state_dict(), spec.build(4).state_dict()
    assert a.keys() == b.keys()
    for key in a:
        assert torch.equal(a[key], b[key]), key
    differing = [k for k in a if a[k].is_floating_point() and not torch.equal(a[k], c[k])]
    assert len(differing) == len([k for k in a if a[k].is_floating_point()])


@pytest.mark.parametrize("name", MODELS)
def test_forward_gives_declared_output_shapes(name):
    spec = get_model(name)
    feeds = generate_inputs(spec.inputs, batch=2, seed=0)
    with torch.no_grad():
        out = spec.build(0)(*[torch.from_numpy(v) for v in feeds.values()])
    assert tuple(out.shape) == spec.outputs[0].concrete_shape(2)
    assert torch.isfinite(out).all()


@pytest.mark.parametrize("name", MODELS)
def test_models_are_built_in_eval_mode(name):
    assert not get_model(name).build(0).training


def test_resnet50_batchnorm_statistics_are_non_trivial():
    model = get_model("resnet50").build(0)
    bn = model.layer2[1].bn2
    assert not torch.allclose(bn.running_mean, torch.zeros_like(bn.running_mean))
    assert not torch.allclose(bn.running_var, torch.ones_like(bn.running_var))
    assert not torch.allclose(bn.weight, torch.ones_like(bn.weight))


def test_resnet50_is_v1_5_stride_in_3x3_conv():
    block = get_model("resnet50").build(0).layer2[0]
    assert block.conv1.stride == (1, 1) and block.conv2.stride == (2, 2)


def test_cnn_weights_are_glorot_uniform_bounded():
    fc1 = get_model("cnn").build(0).fc1.weight
    bound = (6.0 / (6400 + 512)) ** 0.5
    assert fc1.abs().max() <= bound and fc1.abs().max() > 0.95 * bound


def test_dlf_training_hyper_parameters():
    cnn, gru = get_model("cnn").training, get_model("gru").training
    assert (cnn.epochs, cnn.batch, cnn.optimizer) == (10, 64, "sgd")
    assert cnn.optimizer_settings == {"lr": 0.01, "momentum": 0.9, "nesterov": False}
    assert (gru.epochs, gru.batch, gru.optimizer) == (3, 64, "adam")
    assert gru.optimizer_settings["eps"] == 1e-8


def test_unknown_model_is_a_clear_error():
    with pytest.raises(RosettaError, match="unknown model 'vgg'.*cnn"):
        parse_model_list("cnn,vgg")


def test_all_expands_to_every_model():
    assert [s.name for s in parse_model_list("all")] == MODELS
