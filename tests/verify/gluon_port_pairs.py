"""The Gluon halves of the port-training pairs (tests/verify/port_training_pairs.py): a Gluon block holding the
PyTorch module's weights (saved by the caller as an .npz by PyTorch name), its gluon.Trainer and loss, correct or
with one seeded training bug. Imported only by the Gluon factory files the pairs write, which run in rosetta's
MXNet worker (MXNet never in the tests' process)."""

from __future__ import annotations

import numpy as np

import mxnet as mx  # noqa: F401: the worker imported it through rosetta.frameworks.mxnet (numpy aliases) first
from mxnet import gluon

GLUON_NAMES = {"weight": ("weight", "gamma"), "bias": ("bias", "beta")}


def _block(model: str, bug: str):
    momentum = 0.1 if bug == "batchnorm-momentum" else 0.9  # MXNet's 0.9 is PyTorch's 0.1
    net = gluon.nn.HybridSequential()
    if model == "mlp":
        net.add(gluon.nn.Dense(16, in_units=6))
        net.add(gluon.nn.BatchNorm(momentum=momentum, epsilon=1e-5, in_channels=16,
                                   use_global_stats=bug == "bn-inference"))
        net.add(gluon.nn.Activation("relu"))
        net.add(gluon.nn.Dense(4, in_units=16))
    else:  # the CNN: NCHW, as PyTorch
        net.add(gluon.nn.Conv2D(8, 3, padding=1, in_channels=3))
        net.add(gluon.nn.BatchNorm(momentum=momentum, epsilon=1e-5, in_channels=8,
                                   use_global_stats=bug == "bn-inference"))
        net.add(gluon.nn.Activation("relu"))
        net.add(gluon.nn.GlobalAvgPool2D())
        net.add(gluon.nn.Flatten())
        net.add(gluon.nn.Dense(4, in_units=8))
    net.initialize()
    return net


def build_gluon(model: str, bug: str, optimizer: str, weights: str):
    """(block, trainer, loss) with the weights of the .npz at `weights` (PyTorch's names: "0.weight", "1.bias",
    "1.running_mean"; a Dropout at PyTorch's index 3 shifts the head's index by one)."""
    net = _block(model, bug)
    saved = dict(np.load(weights))
    params = net._collect_params_with_prefix()
    for name, value in saved.items():
        layer, _, part = name.rpartition(".")
        if bug == "dropout" and model == "mlp" and layer == "4":
            layer = "3"  # the PyTorch side's Dropout, absent here
        kind = type(net[int(layer)]).__name__
        gluon_part = {"weight": "gamma", "bias": "beta"}.get(part, part) if kind == "BatchNorm" else part
        params[f"{layer}.{gluon_part}"].set_data(value)
    if bug == "frozen":
        for param in net[len(net) - 1].collect_params().values():
            param.grad_req = "null"
    if optimizer == "sgd":
        trainer = gluon.Trainer(net.collect_params(), "nag" if bug == "nesterov" else "sgd",
                                {"learning_rate": 0.05, "momentum": 0.9})
    elif optimizer == "adam":
        trainer = gluon.Trainer(net.collect_params(), "adam",
                                {"learning_rate": 1e-3, "epsilon": 1e-7 if bug == "adam-epsilon" else 1e-8,
                                 "wd": 0.01 if bug == "weight-decay" else 0.0})
    else:  # "adam-wd": Adam with wd, L2 added to the gradient, as PyTorch's Adam(weight_decay=...)
        trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 1e-3, "epsilon": 1e-8, "wd": 0.01})
    loss = gluon.loss.SoftmaxCrossEntropyLoss()
    if bug == "step-rescale":  # the mean taken in the loss, then trainer.step(batch_size) divides again
        per_sample = loss

        def loss(output, labels):
            return per_sample(output, labels).mean()
    return net, trainer, loss
