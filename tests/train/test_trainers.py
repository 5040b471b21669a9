"""Trainers in every framework: the converted artifacts train every weight the reference trains."""

from __future__ import annotations

import numpy as np
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


def test_resident_data_trains_the_same_steps_and_reads_the_losses_back_after_them():
    """--resident-data stages the batches once and leaves each loss on the device until the timed steps are
    done; on the CPU the same code path runs: the same losses and weights as stepping on host batches."""
    spec = get_model("cnn")
    batches = training_batches(spec, 3, 2, 0)
    options = {**training_options(spec), "model": "cnn", "seed": 0}
    plain = run_training("torch", REFERENCE, batches, options, warmup=1)
    resident = run_training("torch", REFERENCE, batches, {**options, "speed": {"resident_data": True}}, warmup=1)
    assert (resident["losses"] == plain["losses"]).all() and (resident["parameters"] == plain["parameters"]).all()
    assert resident["settings"]["staged"] == "tensors made once" and resident["settings"]["speed"] == "fp32+resident-data"
    assert resident["step_seconds"]["window_s"] >= resident["step_seconds"]["repeats"] * resident["step_seconds"]["min_s"]


@pytest.mark.parametrize("framework", ["torch", "keras"])
def test_cuda_graphs_on_the_cpu_are_not_available_and_say_why(store, framework):
    from rosetta.frameworks.speed import SettingUnavailable

    spec = get_model("cnn")
    options = {**training_options(spec), "speed": {"cuda_graphs": True}}
    folder = store.get(spec, 0, get_target(framework).chain, get_target(framework).export_options())
    with pytest.raises(RosettaError, match="cuda_graphs= is CUDA-only: not available on the CPU") as raised:
        run_training(framework, folder, training_batches(spec, 2, 2, 0), options, warmup=1)
    assert framework != "torch" or isinstance(raised.value, SettingUnavailable)  # in-process: the type itself


@pytest.mark.gpu
@pytest.mark.parametrize("model", ["cnn", "gru"])
def test_a_step_captured_as_a_cuda_graph_trains_as_the_eager_step(model):
    """The whole step (forward, loss, backward, optimiser; Adam capturable) replayed as one CUDA graph after two
    eager steps gives the eager run's losses, to float32 noise (cuDNN may pick other algorithms)."""
    spec = get_model(model)
    batches = training_batches(spec, 6, 8, 0)
    options = {**training_options(spec, device="cuda"), "model": model, "seed": 0}
    eager = run_training("torch", REFERENCE, batches, options, warmup=3)
    for speed in ({"cuda_graphs": True}, {"cuda_graphs": True, "resident_data": True}):
        graphed = run_training("torch", REFERENCE, batches, {**options, "speed": speed}, warmup=3)
        assert graphed["settings"]["cuda graphs"].startswith("torch.cuda.CUDAGraph")
        np.testing.assert_allclose(graphed["losses"], eager["losses"], rtol=1e-4)
        assert graphed["peak_device_mb"] > 0 and graphed["settings"]["device used"] == "cuda:0"


@pytest.mark.gpu
def test_batches_too_big_for_the_device_budget_are_pinned_and_copied_one_ahead():
    import torch

    from rosetta.frameworks.torch import ResidentBatches

    batches = [[torch.full((4, 3), float(index)), torch.tensor([index])] for index in range(3)]
    staged = ResidentBatches(batches, torch.device("cuda"), budget_bytes=0)
    assert staged.where.startswith("pinned") and all(t.is_pinned() for batch in staged.batches for t in batch)
    for index in range(3):
        inputs, labels = staged[index]
        assert inputs.is_cuda and float(inputs.sum()) == 12 * index and int(labels) == index


@pytest.mark.parametrize("speed,step", [({}, "jax.jit"), ({"eager": True}, "eager (run_eagerly)")])
def test_keras_trains_as_keras_compiles_by_default_and_eagerly_only_when_asked(store, monkeypatch, speed, step):
    """Keras on JAX trained eagerly (101 ms a CNN step on an H100) while its row said it was compiled: the step
    is Keras's default (jit_compile "auto") unless --eager, and the row reads it back from the model (on
    TensorFlow: tests/bench/test_run.py)."""
    backend = "jax"
    monkeypatch.setenv("KERAS_BACKEND", backend)  # the worker's
    spec, target = get_model("cnn"), get_target("keras")
    folder = store.get(spec, 0, target.chain, target.export_options())
    trained = run_training("keras", folder, training_batches(spec, 2, 2, 0), {**training_options(spec), "speed": speed},
                           warmup=1)
    assert trained["settings"]["compiled step"] == step and trained["version"].endswith(f"({backend} backend)")
