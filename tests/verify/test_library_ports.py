"""A port written by a model library (issue 42): keras.applications' ResNet50 with every weight copied from
rosetta's PyTorch ResNet-50 (tests/verify/ports/library_ports.py). keras.applications is v1 (the stride on the
first 1x1 conv of each downsampling bottleneck), pads with ZeroPadding2D layers split from conv1 and the max pool,
and keeps BatchNorm's epsilon at 1.001e-5. Against the same network with its strides moved to the 1x1 it PASSes
(split padding and that epsilon are the same function within tolerance); against rosetta's v1.5 model (torchvision's
layout, the stride on the 3x3) it FAILs, located at the first downsampling block (layer2.0 / conv3_block1) with the
cause named, and no segment holds a layer outside that block (0 wrong localisations is the acceptance)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.shared import shared_folder
from tests.verify.ports.checks import PASS, all_problems, verify_ports

HERE = Path(__file__).parent / "ports"


def _build(folder: Path) -> None:
    """library_nets.py (the PyTorch factories) and keras-resnet50.keras."""
    subprocess.run([sys.executable, str(HERE / "library_ports.py"), str(folder)], check=True, capture_output=True,
                   timeout=600)


@pytest.fixture(scope="module")
def library(tmp_path_factory) -> Path:
    return shared_folder(tmp_path_factory, "library-ports", _build)


def _block(stage: int, index: int) -> set[str]:
    """The PyTorch modules and the keras.applications layers of bottleneck `index` of layer`stage`."""
    torch_prefix, keras_prefix = f"layer{stage}.{index}", f"conv{stage + 1}_block{index + 1}"
    names = {torch_prefix, f"{torch_prefix}.relu"} | {f"{torch_prefix}.{kind}{n}" for kind in ("conv", "bn")
                                                       for n in (1, 2, 3)}
    names |= {f"{torch_prefix}.downsample", f"{torch_prefix}.downsample.0", f"{torch_prefix}.downsample.1"}
    return names | {f"{keras_prefix}_{n}_{kind}" for n in (0, 1, 2, 3) for kind in ("conv", "bn", "relu")} | {
        f"{keras_prefix}_add", f"{keras_prefix}_out"}


STEM = {"conv1", "bn1", "relu", "maxpool", "conv1_pad", "conv1_conv", "conv1_bn", "conv1_relu", "pool1_pad",
        "pool1_pool"}
# every layer outside the first downsampling block (layer2.0 / conv3_block1): the stem, layer1 (conv2_block*),
# the rest of layer2, layer3 and layer4 are correct in a v1 port
OUTSIDE = STEM | {name for stage, blocks in ((1, 3), (2, 4), (3, 6), (4, 3)) for index in range(blocks)
                  if (stage, index) != (2, 0) for name in _block(stage, index)}
X = ["--input", "x:Nx3x64x64:float32"]
# (reference, its --input, {port: expectation as test_unaligned_ports.UNALIGNED's})
LIBRARY = {
    # the v1 network itself (rosetta's weights, the strides on the 1x1): keras.applications computes the same
    "resnet50-v1": ("library_nets.py:resnet50_v1", X, {"keras-resnet50.keras": PASS}),
    # rosetta's v1.5 model: the first downsampling block's first convs, stride placement named
    "resnet50-v15": ("library_nets.py:resnet50", X, {
        "keras-resnet50.keras": ("FAIL", {"layer2.0.conv1", "layer2.0.conv2"},
                                 {"conv3_block1_1_conv", "conv3_block1_2_conv"}, "stride placement", OUTSIDE)}),
}


@pytest.mark.parametrize("direction", LIBRARY)
def test_a_library_port_verifies_and_its_stride_placement_is_located(direction, library, tmp_path, monkeypatch):
    monkeypatch.chdir(library)  # the factories are named as a user in that folder names them
    reference, inputs, expected = LIBRARY[direction]
    found = verify_ports(reference, inputs, expected, tmp_path / "r.json")
    assert not all_problems(found), all_problems(found)
