"""Ports whose layers do not line up one to one with the reference's modules (tests/verify/ports/
make_unaligned.py), as people and model libraries write them (issue 42): split padding, an activation fused into
the conv that PyTorch applies as a function, BatchNorm folded into the conv, a transformer block held as one
custom Keras layer, a bottleneck with its stride on another conv. Each correct port PASSes; each bug FAILs and is
located at the segment pair that holds it (reference modules and port layers between two matched tensors), its
cause named where it is a known class; and no segment holds a correct layer known to lie outside the bug (0 wrong
localisations is the acceptance)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.shared import shared_folder
from tests.verify.ports.checks import PASS, all_problems, problems_of, verify_ports  # noqa: F401 - problems_of: its old home

HERE = Path(__file__).parent / "ports"


def _build(folder: Path) -> None:
    """The references, the custom layers' module (Keras finds EncoderBlock only once it is imported) and the ports."""
    for name in ("unaligned_nets.py", "unaligned_layers.py"):
        shutil.copyfile(HERE / name, folder / name)
    subprocess.run([sys.executable, str(HERE / "make_unaligned.py"), str(folder)], check=True, capture_output=True,
                   timeout=600)


@pytest.fixture(scope="module")
def unaligned(tmp_path_factory) -> Path:
    return shared_folder(tmp_path_factory, "unaligned-ports", _build)


IMAGE, SIGNAL = ["--input", "image:Nx3x16x16:float32"], ["--input", "signal:Nx4x12:float32"]
TOKENS, X = ["--input", "tokens:Nx8:int64:0:50"], ["--input", "x:Nx6x8x8:float32"]
# (reference, its --input, {port: (verdict, reference modules of which one must be in segment["reference"], port
#  layers of which one must be in segment["port"], a phrase of the diagnosis ("" where no class is expected),
#  correct layers that neither side of the segment may hold)})
UNALIGNED = {
    "split-padding": ("unaligned_nets.py:padded_cnn", IMAGE, {
        # ZeroPadding2D + 'valid' conv is the same function as padding=1
        "split-padding.keras": PASS,
        # the head's flatten order, not the split-padded conv2 before it
        "split-padding-flatten.keras": ("FAIL", {"fc"}, {"fc"}, "flatten order",
                                        {"conv2", "pad2", "relu2", "conv1"})}),
    "fused-tanh": ("unaligned_nets.py:conv_tanh", SIGNAL, {
        # Conv1D(activation="tanh") against Conv1d + torch.tanh in forward, channels-last
        "fused-tanh.keras": PASS,
        # the LayerNorm's epsilon, not the fused conv before it
        "fused-tanh-epsilon.keras": ("FAIL", {"norm"}, {"norm"}, "epsilon", {"conv"}),
        # a kernel reversed in time is in the conv (no class expected); not the LayerNorm or head after it
        "fused-tanh-flipped.keras": ("FAIL", {"conv"}, {"conv"}, "", {"norm", "fc"})}),
    "folded-bn": ("unaligned_nets.py:bn_cnn", IMAGE, {
        # conv+bn+relu folded and fused into one Conv2D, twice
        "folded-bn.keras": PASS,
        # bn1 folded with epsilon 1e-3: in conv1's segment (reference conv1/bn1), nothing from conv2 on
        "folded-bn-epsilon.keras": ("FAIL", {"conv1", "bn1"}, {"conv1"}, "epsilon", {"conv2", "bn2", "fc"}),
        # the head's bias: fc alone, not the folded conv2 before it; no class, but the figures name the bias
        "folded-bn-bias.keras": ("FAIL", {"fc"}, {"fc"}, "bias", {"conv2", "bn2", "relu2", "conv1"}),
        # elu fused in conv2 for the ReLU after bn2: conv2's segment (or its activation split out), not conv1's
        "folded-bn-activation.keras": ("FAIL", {"conv2", "bn2", "relu2"}, {"conv2", "conv2/activation"}, "activation",
                                       {"conv1", "bn1", "pool"}),
        # padding='same' at stride 2 pads (0, 1) against PyTorch's symmetric 1: conv2's segment
        "folded-bn-padding.keras": ("FAIL", {"conv2", "bn2", "relu2"}, {"conv2"}, "padding",
                                    {"conv1", "bn1", "pool"})}),
    "encoder-block": ("unaligned_nets.py:encoder", TOKENS, {
        # each Block (11 modules, attention in forward) as one custom EncoderBlock layer
        "encoder-block.keras": PASS,
        # block 1's layer-norm epsilon (a setting of the block): in block 1, not in block 0 or the embeddings
        "encoder-block-epsilon.keras": ("FAIL", {"blocks.1.norm1"}, {"block_1", "block_1/norm1"}, "epsilon",
                                        {"embed", "position", "blocks.0.norm2", "block_0", "block_0/norm2"}),
        # block 0's query kernel not transposed: at block 0's query, not the embeddings before it nor block 1
        "encoder-block-query.keras": ("FAIL", {"blocks.0.query"},
                                      {"block_0", "block_0/attention", "block_0/attention/query"}, "transposed",
                                      {"embed", "position", "blocks.1.query", "blocks.1.key", "block_1"})}),
    "bottleneck": ("unaligned_nets.py:bottleneck", X, {
        # v1.5 against v1.5: the stride on the 3x3 on both sides
        "bottleneck-v15.keras": PASS,
        # v1 (stride on the first 1x1) against v1.5: the block's first convs, stride placement named; the
        # shortcut and conv3 are correct
        "bottleneck-v1.keras": ("FAIL", {"conv1", "conv2"}, {"conv1", "conv2"}, "stride placement",
                                {"conv3", "downsample.0", "downsample_conv"})}),
}


@pytest.mark.parametrize("direction", UNALIGNED)
def test_unaligned_ports_verify_and_every_bug_is_located_at_its_segment(direction, unaligned, tmp_path, monkeypatch):
    monkeypatch.chdir(unaligned)  # the factories are named as a user in that folder names them
    reference, inputs, expected = UNALIGNED[direction]
    found = verify_ports(reference, inputs, expected, tmp_path / "r.json")
    assert not all_problems(found), all_problems(found)
