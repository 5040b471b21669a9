"""The export step's second way in (issue 45 item 3): where no exporter was chosen and the TorchScript exporter
refuses a module (timm's haloregnetz: an Unfold whose input size it cannot read; rot90, which it has no symbolic
for), the
dynamo exporter makes the ONNX artifact, and the manifest says so and why; an exporter the user chose is the only
one tried. An adaptive average pooling whose output size does not divide the input's (torchvision's AlexNet and
VGG at 64x64) is no refusal: the TorchScript exporter writes it as a MatMul (tests/convert/test_torch_to_onnx.py)."""

from __future__ import annotations

import torch

import rosetta
from rosetta.manifest import Manifest

TORCHSCRIPT_REFUSAL = "Exporting the operator 'aten::rot90' to ONNX opset version 17 is not supported"


class Rotated(torch.nn.Module):
    """A 4x4 map turned a quarter (torch.rot90), which TorchScript's exporter has no symbolic for (an
    antialiased resize was the example until rosetta wrote one: from_torch.primitive_forms)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.fc = torch.nn.Linear(36, 5)

    def forward(self, x):
        turned = torch.rot90(self.conv(x).relu(), 1, (2, 3))[:, :, :3, :3]
        return self.fc(turned.flatten(1))


class RotatedOnItsSign(Rotated):
    """The same, with a branch on the input's values, which the dynamo exporter (torch.export) refuses."""

    def forward(self, x):
        y = super().forward(x)
        return y if x.sum() > 0 else -y


def _convert(tmp_path, module, **options):
    conversion = rosetta.convert(module.eval(), "onnx", inputs=["x:Nx3x4x4:float32"], batch=2,
                                 output_dir=tmp_path / "out", **options)
    return {row.target: row for row in conversion.report}["onnx"]


def test_a_module_torchscript_refuses_is_exported_by_dynamo_and_passes_saying_why(tmp_path):
    row = _convert(tmp_path, Rotated())
    assert row.verdict == "PASS", row.reason
    converter = Manifest.read(tmp_path / "out" / "onnx").converter
    assert converter["name"] == "torch.onnx.export[dynamo]" and converter["options"]["exporter"] == "dynamo"
    assert "rewrites" not in converter  # the TorchScript graph's dynamic-batch rewrites: not run on dynamo's
    way_in = converter["way_in"]
    assert way_in["used"] == "dynamo" and way_in["ways"] == ["torchscript", "dynamo"]
    assert way_in["why"].startswith("the TorchScript exporter could not make it (UnsupportedOperatorError: ")
    assert TORCHSCRIPT_REFUSAL in way_in["why"] and way_in["why"].endswith("the dynamo exporter's artifact kept")


def test_the_torchscript_exporter_asked_for_is_the_only_one_tried(tmp_path):
    row = _convert(tmp_path, Rotated(), exporter="torchscript")
    assert row.verdict == "CANNOT", row.reason
    assert "torch.onnx.export (torchscript) failed: UnsupportedOperatorError" in row.reason
    assert TORCHSCRIPT_REFUSAL in row.reason and "dynamo" not in row.reason


def test_a_module_both_exporters_refuse_is_cannot_with_both_reasons(tmp_path):
    row = _convert(tmp_path, RotatedOnItsSign())
    assert row.verdict == "CANNOT", row.reason
    torchscript, dynamo = row.reason.split("; torch.onnx.export (dynamo) failed: ")
    assert "every way in failed: torch.onnx.export (torchscript) failed" in torchscript
    assert TORCHSCRIPT_REFUSAL in torchscript and "data-dependent" in dynamo.lower()


def test_no_second_way_for_a_training_mode_graph(tmp_path):
    """The dynamo exporter has no training-mode graph: TorchScript's refusal stands, and the reason says why
    no other exporter was tried."""
    row = _convert(tmp_path, Rotated(), training="train")
    assert row.verdict == "CANNOT", row.reason
    assert TORCHSCRIPT_REFUSAL in row.reason
    assert row.reason.endswith("the dynamo exporter, the second way in, has no training-mode graph")
