"""The table of more hand ports (more_nets.py against make_more.py's Keras ports): architectures the other tables
lack, each correct and with seeded bugs of different kinds. tests/verify/test_more_ports.py runs COMPACT (the
cheapest cases) in `make test`; scripts/ports.py --tables more runs all of MORE."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tests.verify.ports.checks import PASS

HERE = Path(__file__).parent


def build(folder: Path, names: tuple = ()) -> None:
    """The references, the custom layer's module and the ports (only those of `names`' directions, if given)."""
    for name in ("more_nets.py", "more_layers.py"):
        shutil.copyfile(HERE / name, folder / name)
    subprocess.run([sys.executable, str(HERE / "make_more.py"), str(folder), *names], check=True,
                   capture_output=True, timeout=600)


IMAGE8 = ["--input", "x:Nx3x8x8:float32"]
# (reference, its --input, {port: (verdict, reference modules of which one must be in segment["reference"], port
#  layers of which one must be in segment["port"], a phrase of the diagnosis ("" where no class is expected),
#  correct layers that neither side of the segment may hold)}), as in test_unaligned_ports.UNALIGNED
MORE = {
    "mobile": ("more_nets.py:mobile_block", ["--input", "x:Nx4x8x8:float32:-4:4"], {
        "mobile.keras": PASS,
        "mobile-relu.keras": ("FAIL", {"relu1"}, {"relu1"}, "relu6", {"depthwise", "pointwise", "bn2", "relu2", "fc"}),
        "mobile-epsilon.keras": ("FAIL", {"bn1"}, {"bn1"}, "epsilon", {"depthwise", "pointwise", "bn2", "fc"}),
        "mobile-kernel.keras": ("FAIL", {"depthwise"}, {"depthwise"}, "", {"pointwise", "bn2", "relu2", "fc"})}),
    "se": ("more_nets.py:squeeze_excite", IMAGE8, {
        "se.keras": PASS,
        "se-hard-sigmoid.keras": ("FAIL", {"expand"}, {"expand"}, "activation", {"conv", "reduce", "fc"}),
        "se-bias.keras": ("FAIL", {"expand"}, {"expand"}, "bias", {"conv", "reduce", "fc"})}),
    "bilstm": ("more_nets.py:bilstm", ["--input", "tokens:Nx6:int64:0:30"], {
        "bilstm.keras": PASS,
        "bilstm-swapped.keras": ("FAIL", {"rnn"}, {"rnn"}, "halves swapped", {"embed", "fc"}),
        "bilstm-final.keras": ("FAIL", {"rnn"}, {"rnn"}, "", {"embed", "fc"})}),
    "residual": ("more_nets.py:residual_projection", ["--input", "x:Nx4x8x8:float32"], {
        "residual.keras": PASS,
        "residual-padding.keras": ("FAIL", {"conv1"}, {"conv1"}, "padding",
                                   {"conv2", "bn2", "shortcut.0", "shortcut.1", "shortcut_conv", "shortcut_bn"}),
        "residual-epsilon.keras": ("FAIL", {"shortcut.1"}, {"shortcut_bn"}, "epsilon",
                                   {"conv1", "bn1", "relu1", "conv2", "bn2"})}),
    "temporal": ("more_nets.py:temporal", ["--input", "signal:Nx3x16:float32"], {
        "temporal.keras": PASS,
        "temporal-dilation.keras": ("FAIL", {"conv2"}, {"conv2"}, "dilation", {"conv1", "fc"}),
        "temporal-same.keras": ("FAIL", {"conv2"}, {"conv2"}, "padding", {"conv1", "fc"})}),
    "group-norm": ("more_nets.py:group_norm", IMAGE8, {
        "group-norm.keras": PASS,
        "group-norm-epsilon.keras": ("FAIL", {"norm"}, {"norm"}, "epsilon", {"conv1", "conv2", "fc"}),
        "group-norm-groups.keras": ("FAIL", {"norm"}, {"norm"}, "groups", {"conv1", "conv2", "fc"})}),
    "bag": ("more_nets.py:bag_of_words", ["--input", "tokens:Nx7:int64:0:40"], {
        "bag.keras": PASS,
        "bag-gelu.keras": ("FAIL", {"act", "fc1"}, {"fc1", "fc1/activation"}, "gelu", {"embed", "norm", "fc2"}),
        "bag-epsilon.keras": ("FAIL", {"norm"}, {"norm"}, "epsilon", {"embed", "fc1", "act", "fc2"}),
        "bag-mask.keras": ("FAIL", {"mean", "fc1"}, {"mean"}, "mask", {"norm", "fc2"})}),
    "unet": ("more_nets.py:tiny_unet", IMAGE8, {
        "unet.keras": PASS,
        "unet-concat.keras": ("FAIL", {"head", "cat"}, {"concat", "head"}, "", {"down", "middle", "up", "pool"}),
        "unet-bilinear.keras": ("FAIL", {"up"}, {"up"}, "interpolation", {"down", "middle", "head"})}),
    "prelu": ("more_nets.py:prelu_mlp", ["--input", "x:Nx6:float32"], {
        "prelu.keras": PASS,
        "prelu-alpha.keras": ("FAIL", {"act1"}, {"act1"}, "", {"fc2", "act2", "fc3"}),
        "prelu-shared.keras": ("FAIL", {"act2"}, {"act2"}, "", {"fc1", "act1", "fc3"})}),
    "average": ("more_nets.py:padded_average", IMAGE8, {
        "average.keras": PASS,
        "average-same.keras": ("FAIL", {"pool"}, {"pool"}, "average pooling count", {"conv1", "conv2"})}),
    "decoder": ("more_nets.py:decoder", ["--input", "x:Nx4x6x6:float32"], {
        "decoder.keras": PASS,
        "decoder-flipped.keras": ("FAIL", {"deconv"}, {"deconv"}, "", {"conv", "head"}),
        # the ReLU left out: the segment runs from the transposed conv's output (which agrees) to the head's; the
        # reference's relu2 is the layer without a counterpart
        "decoder-relu.keras": ("FAIL", {"relu2"}, {"head"}, "relu2 has no counterpart", {"conv", "deconv"})}),
}
