"""The export step on patterns of whole libraries that lost every target of a model (issue 45 item 4): a
weight-standardised convolution (timm's StdConv2d, NF-ResNet's ScaledStdConv2d) calls
batch_norm(weight, training=True) on its parameter, which the training-mode check called FAIL."""

from __future__ import annotations

import torch

import rosetta


class StandardisedConvNet(torch.nn.Module):
    """A conv whose weight is standardised per output channel by a training-mode batch_norm, as timm's
    StdConv2d does, then a BatchNorm on activations (eval: its running statistics)."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.bn.running_mean.uniform_(-0.5, 0.5)
        self.bn.running_var.uniform_(0.5, 2.0)

    def forward(self, x):
        weight = torch.nn.functional.batch_norm(self.conv.weight.reshape(1, 8, -1), None, None, training=True,
                                                momentum=0.0, eps=1e-6).reshape_as(self.conv.weight)
        y = torch.nn.functional.conv2d(x, weight, self.conv.bias, padding=1)
        return self.bn(y).relu().mean((2, 3))


def test_a_weight_standardised_conv_passes_and_is_not_called_exported_in_training_mode(tmp_path):
    import onnx

    from rosetta.frameworks.onnx_graph import training_mode_nodes

    conversion = rosetta.convert(StandardisedConvNet().eval(), "onnx", inputs=["x:Nx3x8x8:float32"], batch=4,
                                 output_dir=tmp_path / "out")
    rows = {row.target: row for row in conversion.report}
    assert rows["onnx"].verdict == "PASS", rows["onnx"].reason
    model = onnx.load(str(tmp_path / "out" / "onnx" / "model.onnx"))
    standardising = [n for n in model.graph.node if n.op_type == "BatchNormalization"
                     and any(a.name == "training_mode" and a.i for a in n.attribute)]
    assert standardising, "the export no longer writes the weight's batch_norm in training mode: test it otherwise"
    assert training_mode_nodes(model) == []
