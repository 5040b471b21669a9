"""MXNet's Adam with PyTorch's epsilon placement (rosetta.train.mxnet.torch_epsilon_adam), the one Adam that both the
MXNet trainer and a Gluon port's training check (rosetta.train.port_mxnet) run: in float64 it steps as
torch.optim.Adam does, with weight decay coupled as Adam(weight_decay=...) and clip_gradient clipping each element.
MXNet runs in a process of its own (never beside the tests' torch); PyTorch's steps are taken here."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

STEPS, LR, BETAS, EPS = 6, 1e-3, (0.9, 0.999), 1e-8

MXNET_STEPS = textwrap.dedent("""
    import sys
    import numpy as np
    from rosetta.frameworks.mxnet import import_mxnet
    from rosetta.train.mxnet import torch_epsilon_adam

    mx = import_mxnet()
    data, kwargs = np.load(sys.argv[1]), eval(sys.argv[2])
    adam = torch_epsilon_adam(mx)(**kwargs)
    weight = mx.nd.array(data["weight"], dtype="float64")
    state = adam.create_state(0, weight)
    for grad in data["grads"]:
        adam.update(0, weight, mx.nd.array(grad, dtype="float64"), state)
    np.save(sys.argv[3], weight.asnumpy())
""")


def mxnet_adam(tmp_path, weight, grads, **options) -> np.ndarray:
    np.savez(tmp_path / "steps.npz", weight=weight, grads=grads)
    kwargs = {"learning_rate": LR, "beta1": BETAS[0], "beta2": BETAS[1], "epsilon": EPS, **options}
    done = subprocess.run([sys.executable, "-c", MXNET_STEPS, str(tmp_path / "steps.npz"), repr(kwargs),
                           str(tmp_path / "after.npy")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return np.load(tmp_path / "after.npy")


def torch_adam(weight, grads, weight_decay=0.0) -> np.ndarray:
    import torch

    parameter = torch.nn.Parameter(torch.from_numpy(weight.copy()))
    adam = torch.optim.Adam([parameter], lr=LR, betas=BETAS, eps=EPS, weight_decay=weight_decay)
    for grad in grads:
        parameter.grad = torch.from_numpy(grad.copy())
        adam.step()
    return parameter.detach().numpy()


CLIP = 2.0 ** -18  # 3.8e-6, exact in float32: MXNet's clip operator holds its bounds as C floats


@pytest.mark.parametrize("options", [{}, {"wd": 0.01}, {"clip_gradient": CLIP}])
def test_mxnet_adam_steps_as_torch_adam_in_float64(tmp_path, options):
    rng = np.random.default_rng(0)
    weight = rng.normal(size=(4, 5))
    grads = rng.normal(size=(STEPS, 4, 5)) * 1e-5  # small: where the epsilon's placement shows (1e-8 vs ~3e-7)
    expected_grads = np.clip(grads, -CLIP, CLIP) if "clip_gradient" in options else grads
    mine = mxnet_adam(tmp_path, weight, grads, **options)
    theirs = torch_adam(weight, expected_grads, weight_decay=options.get("wd", 0.0))
    moved = np.max(np.abs(theirs - weight))
    assert moved > 1e-4  # the steps moved the weights
    assert np.max(np.abs(mine - theirs)) <= 1e-12 * moved, np.max(np.abs(mine - theirs)) / moved
