"""Writes one Gluon model-zoo network of the zoo as a symbol + params checkpoint: run in a fresh interpreter,
so MXNet never shares a process with TensorFlow or the tests. python make_gluon.py NAME PREFIX
(writes PREFIX-symbol.json and PREFIX-0000.params).

Built with pretrained=False and 10 classes (logits); every BatchNorm gets random affine parameters and running
statistics taken from a batch of inputs like the ones rosetta generates (uniform 0..1)."""

import sys

import numpy as np

for alias, value in {"bool": bool, "int": int, "float": float, "complex": complex, "object": object, "str": str}.items():
    if alias not in np.__dict__:  # MXNet 1.9.1 still uses the aliases numpy 1.24 removed
        setattr(np, alias, value)
import mxnet as mx  # noqa: E402
from mxnet.gluon.model_zoo import vision  # noqa: E402

SEED = 0
IMAGE_SHAPE = (3, 32, 32)
CALIBRATION_BATCH = 16


def batch_norms(block) -> list:
    found = [block] if isinstance(block, mx.gluon.nn.BatchNorm) else []
    for child in block._children.values():
        found += batch_norms(child)
    return found


def calibrate_batch_norms(net, rng) -> None:
    """Random gamma/beta, then running mean/variance equal to one training-mode batch's statistics."""
    batch = mx.nd.array(rng.uniform(0, 1, (CALIBRATION_BATCH, *IMAGE_SHAPE)))
    net(batch)  # parameters are shaped on the first call
    norms = batch_norms(net)
    for norm in norms:
        channels = norm.gamma.shape
        norm.gamma.set_data(mx.nd.array(rng.uniform(0.5, 1.5, channels)))
        norm.beta.set_data(mx.nd.array(rng.uniform(-0.2, 0.2, channels)))
        norm._kwargs["momentum"] = 0.0  # the running statistics become this batch's
    with mx.autograd.record(train_mode=True):
        logits = net(batch)
    logits.backward()  # MXNet updates the running statistics in the backward pass
    for norm in norms:
        norm._kwargs["momentum"] = 0.9


if __name__ == "__main__":
    name, prefix = sys.argv[1], sys.argv[2]
    mx.random.seed(SEED)
    rng = np.random.default_rng(SEED)
    net = vision.get_model(name, pretrained=False, classes=10)
    net.initialize(mx.init.Xavier())
    calibrate_batch_norms(net, rng)
    net.hybridize()
    net(mx.nd.array(rng.uniform(0, 1, (2, *IMAGE_SHAPE))))
    net.export(prefix, 0)
