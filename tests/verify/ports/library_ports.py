"""A port written by a model library: keras.applications' ResNet50 (v1: the stride on the first 1x1 conv of each
downsampling bottleneck, ZeroPadding2D split from conv1 and from the max pool, BatchNorm epsilon 1.001e-5, a bias
on every conv) with every weight copied from rosetta's PyTorch ResNet-50 (rosetta/models/resnet50.py, torchvision's
v1.5 layout: the stride on the 3x3). Writes into FOLDER:

- library_nets.py: the PyTorch factories, read as `library_nets.py:NAME` (with --trust-code): `resnet50` (rosetta's
  seeded v1.5 model) and `resnet50_v1` (the same model, the same weights, each downsampling block's stride moved
  from conv2 to conv1: the function keras.applications computes);
- keras-resnet50.keras: the Keras port, on SIZE x SIZE images (small, so verifying it is fast).

    python library_ports.py FOLDER     (run in a process of its own: TensorFlow and PyTorch in one process is
                                        slow to tear down)
"""

from __future__ import annotations

import sys
from pathlib import Path

SIZE = 64  # 64 -> 32 (conv1) -> 16 (pool) -> 16, 8, 4, 2 (layer1..4) -> (N, 2048)

FACTORIES = '''"""rosetta's ResNet-50 (v1.5: the stride on each downsampling block's 3x3) and the same model,
same weights, with the stride on the first 1x1 instead (v1, as keras.applications' ResNet50). Written by
library_ports.py."""

from rosetta.models.resnet50 import build_resnet50


def resnet50():
    return build_resnet50(seed=0)


def resnet50_v1():
    model = build_resnet50(seed=0)
    for layer in (model.layer2, model.layer3, model.layer4):
        block = layer[0]
        block.conv1.stride, block.conv2.stride = block.conv2.stride, (1, 1)
    return model
'''


def hwio(weight):
    """A PyTorch conv weight (out, in, kh, kw) as Keras's kernel (kh, kw, in, out)."""
    return weight.transpose(2, 3, 1, 0)


def pairs(model):
    """(PyTorch conv, PyTorch BatchNorm, Keras layer prefix) for every conv of the network."""
    yield "conv1", "bn1", "conv1"
    for stage, blocks in enumerate((model.layer1, model.layer2, model.layer3, model.layer4), start=2):
        for index, block in enumerate(blocks):
            torch_prefix, keras_prefix = f"layer{stage - 1}.{index}", f"conv{stage}_block{index + 1}"
            for n in (1, 2, 3):
                yield f"{torch_prefix}.conv{n}", f"{torch_prefix}.bn{n}", f"{keras_prefix}_{n}"
            if block.downsample is not None:
                yield f"{torch_prefix}.downsample.0", f"{torch_prefix}.downsample.1", f"{keras_prefix}_0"


def build(folder: Path) -> None:
    (folder / "library_nets.py").write_text(FACTORIES)
    sys.path.insert(0, str(folder))
    import keras
    import library_nets
    import numpy as np

    model = library_nets.resnet50()
    w = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    port = keras.applications.ResNet50(weights=None, include_top=False, pooling="avg", input_shape=(SIZE, SIZE, 3))
    copied = set()
    for conv, bn, prefix in pairs(model):
        kernel = hwio(w[conv + ".weight"])
        port.get_layer(prefix + "_conv").set_weights([kernel, np.zeros(kernel.shape[-1], "float32")])
        port.get_layer(prefix + "_bn").set_weights([w[bn + ".weight"], w[bn + ".bias"], w[bn + ".running_mean"],
                                                   w[bn + ".running_var"]])
        copied |= {conv + ".weight"} | {f"{bn}.{k}" for k in ("weight", "bias", "running_mean", "running_var")}
    missed = {k for k in w if not k.endswith("num_batches_tracked")} - copied
    assert not missed, f"weights not copied: {sorted(missed)}"
    # the copy is the v1 function: the same outputs as the v1 PyTorch variant (float32 noise apart)
    import torch

    image = np.random.default_rng(0).uniform(-2, 2, (2, 3, SIZE, SIZE)).astype("float32")
    with torch.no_grad():
        expected = library_nets.resnet50_v1()(torch.from_numpy(image)).numpy()
    got = np.asarray(port(image.transpose(0, 2, 3, 1), training=False))
    assert got.shape == expected.shape == (2, 2048), (got.shape, expected.shape)
    scale = float(np.abs(expected).max())
    assert np.abs(got - expected).max() <= 1e-3 * scale, ("the copy is not the v1 model", np.abs(got - expected).max(),
                                                          scale)
    port.save(folder / "keras-resnet50.keras")


if __name__ == "__main__":
    build(Path(sys.argv[1]))
