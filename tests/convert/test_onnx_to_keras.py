from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from onnx import TensorProto, helper
from torch import nn

from rosetta.errors import RosettaError


def test_unsupported_op_is_a_clear_error_naming_it():
    from rosetta.convert.onnx.to_keras import onnx_to_keras_model
    from rosetta.frameworks.keras import import_keras

    node = helper.make_node("Det", ["x"], ["y"], name="the_determinant")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N"])])
    with pytest.raises(RosettaError, match=r"ONNX op Det \(opset \d+\) cannot be converted to keras: rosetta.s Keras mapper"):
        onnx_to_keras_model(helper.make_model(graph), import_keras())


def test_keras_artifact_loads_in_plain_keras_safe_mode(store):
    """No rosetta code is needed to load it: a fresh interpreter with only keras imported."""
    import subprocess
    import sys

    from rosetta.convert.targets import get_target
    from rosetta.models import get_model

    target = get_target("keras")
    folder = store.get(get_model("cnn"), 0, target.chain, target.export_options())
    code = ("import keras; m = keras.saving.load_model(r'%s', safe_mode=True); "
            "print(sum(int(w.numpy().size) for w in m.trainable_weights))" % (folder / "model.keras"))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env={"KERAS_BACKEND": "tensorflow", "TF_CPP_MIN_LOG_LEVEL": "3", "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == str(get_model("cnn").parameter_count)


# ---- the ops users' models need, each through torch.onnx.export, the mapper and a safe-mode reload ---------

class FunctionModule(nn.Module):
    """A torch module from a function, for one-line cases (torch side only: Keras never sees it)."""

    def __init__(self, function, **children):
        super().__init__()
        self.function = function
        for name, child in children.items():
            setattr(self, name, child)

    def forward(self, x):
        return self.function(self, x)


class Arithmetic(nn.Module):
    """x * 2 / 3 - 1, 1 - x ** 2, and per-channel and full constants on a channels-last conv output."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 1)
        self.register_buffer("scale", torch.randn(1, 4, 1, 1))
        self.register_buffer("shift", torch.randn(4, 1, 1))
        self.register_buffer("bias_map", torch.randn(4, 5, 3))

    def forward(self, x):
        a = 1 - (x * 2 / 3 - 1) ** 2
        c = self.conv(a) * self.scale + self.shift
        return c * torch.sigmoid(c) - c / 4 + self.bias_map


class UpsampleConcat(nn.Module):
    """A U-Net step: downsample, upsample back (nearest), concatenate with the skip connection."""

    def __init__(self):
        super().__init__()
        self.down = nn.Conv2d(3, 4, 3, stride=2, padding=1)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")

    def forward(self, x):
        return torch.cat([self.up(self.down(x)), x], dim=1)


class SqueezeExcite(nn.Module):
    """MobileNetV3's block: HardSwish, then channels scaled by HardSigmoid of their global average."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.Hardswish())
        self.gate = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(8, 2, 1), nn.ReLU(), nn.Conv2d(2, 8, 1),
                                  nn.Hardsigmoid())

    def forward(self, x):
        x = self.conv(x)
        return x * self.gate(x)


class TransformerMlp(nn.Module):
    """x + Linear(GELU(Linear(LayerNorm(x)))) on tokens, then their mean: Linear on 3-D is MatMul + Add."""

    def __init__(self):
        super().__init__()
        self.mlp = nn.Sequential(nn.LayerNorm(8), nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 8))

    def forward(self, x):
        return (x + self.mlp(x)).mean(dim=1)


def _layer_norm_by_hand(module, x):
    centered = x - x.mean(-1, keepdim=True)
    normalized = centered / torch.sqrt((centered * centered).mean(-1, keepdim=True) + 1e-6)
    return 0.5 * normalized * (1 + torch.erf(normalized * (1 / math.sqrt(2))))  # and GELU by hand


# name: (module factory, input shape, opset)
CASES = {
    "conv_batchnorm_relu6": (lambda: nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU6()),
                             (2, 3, 6, 5), 17),
    "hardtanh": (lambda: nn.Sequential(nn.Conv2d(3, 4, 1), nn.Hardtanh()), (2, 3, 4, 5), 17),
    "depthwise_and_grouped_conv": (lambda: nn.Sequential(
        nn.Conv2d(4, 8, 3, padding=1, groups=4), nn.Conv2d(8, 6, 3, stride=2, groups=2),
        nn.Conv2d(6, 6, 3, padding=2, dilation=2, groups=6, bias=False)), (2, 4, 7, 6), 17),
    # Keras takes strides or dilations > 1, not both: a stride-1 convolution subsampled (selective kernels)
    "conv_strided_and_dilated": (lambda: nn.Sequential(
        nn.Conv2d(3, 4, 3, stride=2, dilation=2), nn.Conv2d(4, 8, 3, stride=(2, 3), padding=2, dilation=(2, 3), groups=4),
        nn.Conv2d(8, 8, 3, stride=2, padding=2, dilation=2, groups=8)), (2, 3, 21, 19), 17),
    "conv1d_stack": (lambda: nn.Sequential(
        nn.Conv1d(3, 6, 3, padding=1), nn.BatchNorm1d(6), nn.ReLU(), nn.MaxPool1d(2),
        nn.Conv1d(6, 6, 3, padding=2, dilation=2, groups=6), nn.AvgPool1d(2), nn.Flatten(), nn.Linear(18, 5)),
        (2, 3, 12), 17),
    "conv_transpose_2d": (lambda: nn.Sequential(
        nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1, output_padding=1), nn.ReLU(),
        nn.ConvTranspose2d(4, 2, 2, stride=2)),
        (2, 3, 4, 5), 17),
    "conv_transpose_1d_kernel_below_stride": (lambda: nn.Sequential(
        nn.ConvTranspose1d(3, 4, 4, stride=3, padding=1), nn.ConvTranspose1d(4, 2, 2, stride=3)), (2, 3, 5), 17),
    "upsample_nearest_concat": (UpsampleConcat, (2, 3, 6, 8), 17),
    "upsample_bilinear": (lambda: nn.Sequential(nn.Conv2d(3, 4, 1), nn.Upsample(scale_factor=2, mode="bilinear")),
                          (2, 3, 4, 5), 17),
    "upsample_1d_nearest": (lambda: nn.Sequential(nn.Conv1d(3, 4, 1), nn.Upsample(scale_factor=3)), (2, 3, 5), 17),
    "average_pools": (lambda: nn.Sequential(
        nn.AvgPool2d(3, 1, 1), nn.AvgPool2d(3, 2, 1, count_include_pad=False), nn.AvgPool2d(2)), (2, 3, 9, 7), 17),
    "zero_pad_2d": (lambda: nn.Sequential(nn.ZeroPad2d((1, 2, 0, 1)), nn.Conv2d(3, 4, 2)), (2, 3, 4, 3), 17),
    "zero_pad_1d": (lambda: nn.Sequential(nn.Conv1d(3, 4, 1), nn.ConstantPad1d((2, 1), 0.0), nn.Conv1d(4, 2, 3)),
                    (2, 3, 5), 17),
    "sequence_pad_on_time_axis": (lambda: FunctionModule(lambda m, x: m.linear(nn.functional.pad(x, (0, 0, 1, 2))),
                                                 linear=nn.Linear(4, 3)), (2, 5, 4), 17),
    "arithmetic_with_constants": (Arithmetic, (2, 3, 5, 3), 17),
    "squeeze_excite_hardswish": (SqueezeExcite, (2, 3, 5, 4), 17),
    "layernorm_gelu_mlp": (TransformerMlp, (2, 5, 8), 17),
    "layernorm_decomposed_below_opset_17": (lambda: nn.LayerNorm(8), (2, 5, 8), 16),
    "layernorm_and_gelu_by_hand": (lambda: FunctionModule(_layer_norm_by_hand), (2, 5, 8), 17),
    "layernorm_over_channels_last_axes": (lambda: nn.Sequential(nn.Conv1d(3, 4, 1), nn.LayerNorm([4, 6])), (2, 3, 6), 17),
    "gelu_tanh_approximation": (lambda: nn.Sequential(nn.Linear(4, 6), nn.GELU(approximate="tanh")), (2, 4), 17),
    "max_pool_1d_to_one": (lambda: nn.Sequential(nn.Conv1d(3, 4, 3), nn.AdaptiveMaxPool1d(1), nn.Flatten()), (2, 3, 7), 17),
    # the batch absorbed by -1 next to static sizes (Keras applications' Reshape to (-1, 1, 1, C))
    "reshape_with_the_batch_as_minus_one": (lambda: FunctionModule(lambda m, x: m.linear(x.reshape(-1, 1, 2, 6)),
                                                                   linear=nn.Linear(6, 3)), (2, 3, 4), 17),
    # issue 45: BART's shift_tokens_right, zeros of the input's shape written by ScatterND at [arange(batch), 1..]:
    # a Range over the run-time batch (rewrites.axis_ranges), Shape and Expand of the zeros, and ScatterND
    "shift_right_by_scatter": (lambda: FunctionModule(_shifted_right), (2, 5), 17),
    "conv_3d_and_pools": (lambda: nn.Sequential(nn.Conv3d(2, 3, 3, padding=1), nn.ReLU(), nn.MaxPool3d(2, padding=1),
                                                nn.AvgPool3d(2)), (2, 2, 4, 3, 4), 17),
}


def _shifted_right(module, x):
    shifted = x.new_zeros(x.shape)
    shifted[:, 1:] = x[:, :-1].clone()
    shifted[:, 0] = 2.0
    return shifted * 1.5 + x


def _randomized(module: nn.Module) -> nn.Module:
    """Non-trivial normalisation statistics and affine parameters, so that a dropped or misplaced one shows."""
    generator = torch.Generator().manual_seed(1)
    for child in module.modules():
        if isinstance(child, (nn.BatchNorm1d, nn.BatchNorm2d)):
            child.running_mean.uniform_(-0.5, 0.5, generator=generator)
            child.running_var.uniform_(0.05, 0.5, generator=generator)  # amplifies: past ReLU6
        if isinstance(child, (nn.BatchNorm1d, nn.BatchNorm2d, nn.LayerNorm)):
            with torch.no_grad():
                child.weight.uniform_(0.5, 1.5, generator=generator)
                child.bias.uniform_(-0.5, 0.5, generator=generator)
    return module.eval()


def _export(module: nn.Module, shape: tuple, opset: int, folder):
    """The module through rosetta's own torch -> ONNX export (BatchNorm kept, as for the keras target)."""
    import onnx

    from rosetta.convert.onnx.from_torch import TorchSource, convert
    from rosetta.models.registry import TensorSpec

    source = TorchSource(module, (TensorSpec("x", (None,) + shape[1:], "float32"),),
                         (TensorSpec("y", (None,), "float32"),), {})
    convert(source, folder, {"training": "preserve", "opset": opset})
    return onnx.load(str(folder / "model.onnx"))


def _to_keras(onnx_model, folder):
    """Mapped, saved, and loaded back in safe mode: what a user of the artifact gets."""
    from rosetta.convert.onnx.to_keras import onnx_to_keras_model
    from rosetta.frameworks.keras import import_keras

    keras = import_keras()
    onnx_to_keras_model(onnx_model, keras).save(str(folder / "model.keras"))
    return keras.saving.load_model(str(folder / "model.keras"), safe_mode=True)


@pytest.mark.parametrize("case", list(CASES))
def test_mapped_model_computes_what_torch_computes(case, tmp_path):
    factory, shape, opset = CASES[case]
    torch.manual_seed(0)
    module = _randomized(factory())
    x = torch.randn(shape) * 3  # beyond ReLU6's and Hardtanh's bounds, negative for the ReLUs
    with torch.no_grad():
        expected = module(x).numpy()
    model = _to_keras(_export(module, shape, opset, tmp_path), tmp_path)
    got = np.asarray(model([x.numpy()], training=False))
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5 * max(1.0, np.abs(expected).max()))
    trainable = sum(int(np.prod(w.shape)) for w in model.trainable_weights)
    assert trainable == sum(p.numel() for p in module.parameters())


def _node_graph(nodes: list, shape: list, opset: int, initializers=()):
    """A hand-built graph from input x to output y (for ops and forms torch's exporter does not write)."""
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def _int64s(name: str, values: list):
    return helper.make_tensor(name, TensorProto.INT64, [len(values)], values)


HAND_BUILT = {
    "global_max_pool": ([helper.make_node("GlobalMaxPool", ["x"], ["y"])], 17, ()),
    "upsample_opset_9": ([helper.make_node("Upsample", ["x", "scales"], ["y"], mode="nearest")], 9,
                         [helper.make_tensor("scales", TensorProto.FLOAT, [4], [1, 1, 3, 2])]),
    "resize_by_sizes_of_axes_half_pixel": ([helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode="nearest",
                                                             axes=[2, 3], coordinate_transformation_mode="half_pixel")],
                                           18, [_int64s("sizes", [8, 15])]),
    "gelu_op_opset_20": ([helper.make_node("Gelu", ["x"], ["y"])], 20, ()),
    # issue 45: a constant expanded to the batch, then expanded again (Cosmos' position ids)
    "constant_expanded_twice": ([helper.make_node("Shape", ["x"], ["batch"], start=0, end=1),
                                 helper.make_node("Concat", ["batch", "rest"], ["first_shape"], axis=0),
                                 helper.make_node("Expand", ["row", "first_shape"], ["once"]),
                                 helper.make_node("Shape", ["x"], ["whole"]),
                                 helper.make_node("Expand", ["once", "whole"], ["twice"]),
                                 helper.make_node("Add", ["x", "twice"], ["y"])], 17,
                                [_int64s("rest", [1, 1, 5]),
                                 helper.make_tensor("row", TensorProto.FLOAT, [1, 1, 1, 5], [0.5, -1, 2, 0, 3])]),
    # issue 45: DETR's pixel mask: ones of the input's shape resized to a feature map's, an output as it is
    "resized_ones_as_output": ([helper.make_node("Shape", ["x"], ["shape"]),
                                helper.make_node("ConstantOfShape", ["shape"], ["ones"],
                                                 value=helper.make_tensor("", TensorProto.FLOAT, [1], [1.5])),
                                helper.make_node("Shape", ["x"], ["leading"], start=0, end=2),
                                helper.make_node("Concat", ["leading", "spatial"], ["sizes"], axis=0),
                                helper.make_node("Resize", ["ones", "", "", "sizes"], ["y"], mode="nearest")], 17,
                               [_int64s("spatial", [2, 10])]),
    # issue 45: DAB-DETR's query positions, a range along the batch of a constant expanded to it
    "range_along_the_batch_of_a_constant_expanded_to_it": (
        [helper.make_node("Shape", ["x"], ["batch"], start=0, end=1),
         helper.make_node("Concat", ["batch", "width"], ["row_shape"], axis=0),
         helper.make_node("Expand", ["row", "row_shape"], ["rows"]),
         helper.make_node("Shape", ["rows"], ["rows_shape"]),
         helper.make_node("Gather", ["rows_shape", "zero"], ["count"], axis=0),
         helper.make_node("Range", ["zero", "count", "one"], ["positions"]),
         helper.make_node("Cast", ["positions"], ["float_positions"], to=TensorProto.FLOAT),
         helper.make_node("Unsqueeze", ["float_positions", "inner"], ["column"]),
         helper.make_node("Add", ["x", "column"], ["y"])], 17,
        [_int64s("width", [4]), helper.make_tensor("row", TensorProto.FLOAT, [1, 4], [0.5, -1, 2, 0]),
         helper.make_tensor("zero", TensorProto.INT64, [], [0]), helper.make_tensor("one", TensorProto.INT64, [], [1]),
         _int64s("inner", [1, 2, 3])]),
    # issue 45: SAM's relative positions, (..., k, 1) + (..., 1, k): each operand's size-1 axis where the other
    # has a real one
    "add_of_size_one_axes_in_other_places": ([helper.make_node("Unsqueeze", ["x", "last"], ["column"]),
                                              helper.make_node("Unsqueeze", ["x", "before_last"], ["row"]),
                                              helper.make_node("Add", ["column", "row"], ["y"])], 17,
                                             [_int64s("last", [4]), _int64s("before_last", [3])]),
    # issue 45: an equation with spaces, as torchvision's MaxViT writes its attention (was refused by Keras)
    "einsum_with_spaces": ([helper.make_node("Einsum", ["x", "x"], ["y"], equation="B C H I, B C H J -> B C I J")],
                           17, ()),
    "pad_axes_input_opset_18": ([helper.make_node("Pad", ["x", "pads", "", "axes"], ["y"])], 18,
                                [_int64s("pads", [1, 0, 2, 3]), _int64s("axes", [2, 3])]),
    "reduce_mean_axes_input_opset_18": ([helper.make_node("ReduceMean", ["x", "axes"], ["y"], keepdims=1)], 18,
                                        [_int64s("axes", [1, 3])]),
    "gelu_tanh_approximation_opset_20": ([helper.make_node("Gelu", ["x"], ["y"], approximate="tanh")], 20, ()),
    "layer_norm_with_its_statistics": ([helper.make_node("LayerNormalization", ["x", "scale"], ["normalized", "mean",
                                                                                                  "inverse"], axis=2),
                                        helper.make_node("Add", ["normalized", "mean"], ["centred"]),
                                        helper.make_node("Mul", ["centred", "inverse"], ["y"])], 17,
                                       [helper.make_tensor("scale", TensorProto.FLOAT, [4, 5], np.linspace(0.5, 1.5, 20))]),
    "upsample_linear_opset_7": ([helper.make_node("Upsample", ["x"], ["y"], mode="linear", scales=[1.0, 1.0, 2.0, 2.0])],
                                7, ()),
    "resize_nearest_ceil_asymmetric": ([helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="nearest",
                                                         nearest_mode="ceil", coordinate_transformation_mode="asymmetric")],
                                       13, [helper.make_tensor("scales", TensorProto.FLOAT, [4], [1, 1, 2, 2])]),
    "softmax_opset_11_flattens_from_axis_1": ([helper.make_node("Softmax", ["x"], ["y"])], 11, ()),
    # issue 45: LRN (Caffe2-era models), after a Conv, which leaves the tensor held channels-last (ONNX Runtime
    # takes odd sizes only)
    "lrn_after_a_conv": ([helper.make_node("Conv", ["x", "w"], ["c"]),
                          helper.make_node("LRN", ["c"], ["y"], size=3, alpha=0.01, beta=0.5, bias=2.0)],
                         13, [helper.make_tensor("w", TensorProto.FLOAT, [3, 3, 1, 1], np.linspace(-1, 1, 9))]),
}


@pytest.mark.parametrize("case", list(HAND_BUILT))
def test_hand_built_graph_computes_what_onnxruntime_computes(case, tmp_path):
    import onnxruntime

    nodes, opset, initializers = HAND_BUILT[case]
    onnx_model = _node_graph(nodes, ["N", 3, 4, 5], opset, initializers)
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 5)).astype(np.float32)
    session = onnxruntime.InferenceSession(onnx_model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = session.run(None, {"x": x})[0]
    got = np.asarray(_to_keras(onnx_model, tmp_path)([x], training=False))
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


# ---- what the mapper cannot do exactly is refused, naming the op ------------------------------------------

class ConstantConcat(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("extra", torch.ones(2, 1, 4))

    def forward(self, x):
        return torch.cat([x, self.extra], dim=1)


UNSUPPORTED = {
    "conv_transpose_grouped": (lambda: nn.ConvTranspose2d(4, 4, 3, groups=2), (2, 4, 4, 4),
                               "ConvTranspose is supported with group=1"),
    "max_pool_dilations": (lambda: nn.MaxPool2d(2, dilation=2), (2, 3, 6, 6), "MaxPool with dilations"),
}


class CausalAttention(nn.Module):
    """A decoder's self-attention: scores masked to the lower triangle (Trilu), -inf above it (Where), softmax."""

    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(8, 24)

    def forward(self, x):
        q, k, v = self.qkv(x).split(8, dim=-1)
        scores = torch.tril(q @ k.transpose(1, 2) / math.sqrt(8))  # a Trilu of the scores
        above = torch.ones(x.shape[1], x.shape[1]).tril() == 0  # a constant mask: Where
        return torch.softmax(scores.masked_fill(above, float("-inf")), dim=-1) @ v


# Ops and attributes the mapper computes with keras.ops (no Lambda), or with layers it once refused; each
# module exported by torch and compared with ONNX Runtime on the exported graph
BEYOND_LAYERS = {
    "pad_reflect": (lambda: nn.ReflectionPad2d(1), (2, 3, 4, 4)),
    "resize_cubic": (lambda: nn.Upsample(scale_factor=2, mode="bicubic"), (2, 3, 4, 4)),
    "resize_fractional": (lambda: nn.Upsample(scale_factor=1.5), (2, 3, 4, 4)),
    "clip_other_bounds": (lambda: FunctionModule(lambda m, x: x.clamp(-2, 3)), (2, 3)),
    "div_of_two_tensors": (lambda: FunctionModule(lambda m, x: x / (torch.abs(x) + 1)), (2, 3)),
    "pow_square_root": (lambda: FunctionModule(lambda m, x: torch.sigmoid(x) ** 0.5), (2, 3)),
    "erf_outside_gelu": (lambda: FunctionModule(lambda m, x: torch.erf(x)), (2, 3)),
    "sqrt_outside_layernorm": (lambda: FunctionModule(lambda m, x: torch.sqrt(torch.sigmoid(x))), (2, 3)),
    "concat_with_constant": (ConstantConcat, (2, 3, 4)),
    "average_pool_ceil_mode": (lambda: nn.AvgPool2d(2, ceil_mode=True), (2, 3, 5, 5)),
    "average_pool_pads_not_same": (lambda: nn.AvgPool2d(3, 2, 1, count_include_pad=False), (2, 3, 8, 8)),
    "max_pool_1d_ceil_mode": (lambda: nn.MaxPool1d(2, ceil_mode=True), (2, 3, 5)),
    "max_pool_padded_on_negatives": (lambda: nn.MaxPool2d(3, 2, padding=1), (2, 3, 7, 6)),
    "causal_attention": (CausalAttention, (2, 5, 8)),
    "group_norm_silu": (lambda: nn.Sequential(nn.Conv2d(3, 4, 1), nn.GroupNorm(2, 4), nn.SiLU()), (2, 3, 4, 5)),
    "instance_norm": (lambda: nn.Sequential(nn.Conv2d(3, 4, 1), nn.InstanceNorm2d(4, affine=True)), (2, 3, 4, 5)),
    "pixel_shuffle": (lambda: nn.Sequential(nn.Conv2d(3, 8, 1), nn.PixelShuffle(2)), (2, 3, 4, 5)),
    "conv_3d_ceil_pools": (lambda: nn.Sequential(nn.Conv3d(2, 3, 3, padding=1, dilation=1), nn.MaxPool3d(2, ceil_mode=True),
                                                 nn.AvgPool3d(2, padding=1, count_include_pad=False)), (2, 2, 5, 4, 5)),
    # Hugging Face's Conv1D and every x.view(-1, x.size(-1)) before a Linear: the batch merged into the rows
    "flattened_linear": (lambda: FunctionModule(lambda m, x: m.fc(x.reshape(-1, x.shape[-1])).reshape(x.shape[0], x.shape[1], -1),
                                                fc=nn.Linear(4, 6)), (2, 5, 4)),
    # a Reshape to (-1, K) merges the batch into the rows (not a flatten): a softmax over K tells them apart
    "merged_batch_softmax": (lambda: FunctionModule(lambda m, x: torch.softmax(m.fc(x).reshape(-1, 3), -1).reshape(x.shape[0], -1),
                                                    fc=nn.Linear(4, 6)), (2, 4)),
    "bidirectional_gru": (lambda: FunctionModule(lambda m, x: m.gru(x)[0], gru=nn.GRU(4, 5, bidirectional=True,
                                                                                        batch_first=True)), (2, 6, 4)),
}


@pytest.mark.parametrize("case", list(BEYOND_LAYERS))
def test_ops_beyond_the_layers_compute_what_onnxruntime_computes(case, tmp_path):
    torch.manual_seed(0)
    factory, shape = BEYOND_LAYERS[case]
    module = _randomized(factory())
    onnx_model = _export(module, shape, 17, tmp_path)
    x = (np.random.default_rng(3).standard_normal(shape) * 3).astype(np.float32)
    model = _to_keras(onnx_model, tmp_path)
    expected = _onnxruntime(onnx_model, {"x": x})[0]
    np.testing.assert_allclose(np.asarray(model([x], training=False)), expected, rtol=1e-4,
                               atol=1e-5 * max(1.0, np.abs(expected).max()))
    trainable = sum(int(np.prod(w.shape)) for w in model.trainable_weights)
    assert trainable == sum(p.numel() for p in module.parameters())  # GroupNorm's, GRU's weights stay weights


@pytest.mark.parametrize("case", list(UNSUPPORTED))
def test_unsupported_attribute_is_a_clear_error_naming_the_op(case, tmp_path):
    from rosetta.convert.onnx.to_keras import onnx_to_keras_model
    from rosetta.frameworks.keras import import_keras

    factory, shape, message = UNSUPPORTED[case]
    onnx_model = _export(factory().eval(), shape, 17, tmp_path)
    with pytest.raises(RosettaError, match=message):
        onnx_to_keras_model(onnx_model, import_keras())


@pytest.mark.parametrize("nodes, opset, message", [
    ([helper.make_node("Dropout", ["x", "ratio", "on"], ["y"])], 13, "Dropout with training_mode true"),
    ([helper.make_node("Shape", ["x"], ["y"])], 17,
     "output 'y' is computed from the run-time batch size"),  # the shape itself (zeros of it convert now)
])
def test_what_keras_cannot_compute_is_refused_naming_it(nodes, opset, message):
    from rosetta.convert.onnx.to_keras import onnx_to_keras_model
    from rosetta.frameworks.keras import import_keras

    initializers = [helper.make_tensor("scale", TensorProto.FLOAT, [5], [1.0] * 5),
                    helper.make_tensor("scales", TensorProto.FLOAT, [4], [1, 1, 2, 2]),
                    helper.make_tensor("ratio", TensorProto.FLOAT, [], [0.5]),
                    helper.make_tensor("on", TensorProto.BOOL, [], [True])]
    with pytest.raises(RosettaError, match=message):
        onnx_to_keras_model(_node_graph(nodes, ["N", 3, 4, 5], opset, initializers), import_keras())


# ---- shapes computed at run time, LSTM, linear Resize with align_corners, the embedding index wrap ---------

def _onnxruntime(onnx_model, feeds: dict) -> list:
    import onnxruntime

    session = onnxruntime.InferenceSession(onnx_model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


class Attention(nn.Module):
    """torch's MultiheadAttention: its export reshapes with shapes read at run time, merging batch and heads."""

    def __init__(self):
        super().__init__()
        self.attention = nn.MultiheadAttention(8, 2)
        self.norm = nn.LayerNorm(8)

    def forward(self, x):
        sequence = x.transpose(0, 1)  # (T, N, E), torch's default layout
        attended, _ = self.attention(sequence, sequence, sequence, need_weights=False)
        return self.norm(attended.transpose(0, 1) + x).mean(dim=1)


class StackedBiLstm(nn.Module):
    """Two bidirectional layers, their zero initial states built from Shape(x); the last layer's final states."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(4, 6, num_layers=2, bidirectional=True, batch_first=True)

    def forward(self, x):
        sequence, (h, _) = self.lstm(x)
        return torch.cat([h[-2], h[-1], sequence[:, -1]], dim=1)


class ExpandedMask(nn.Module):
    """Hugging Face's _expand_mask: mask[:, None, None, :].expand(batch, 1, T, T), whose shape torch.onnx writes as
    Where(shape == -1, 1, shape) on a shape holding the run-time batch (issue 45)."""

    def forward(self, x):  # (N, T)
        batch, steps = x.shape
        mask = (x > 0).to(x.dtype)[:, None, None, :].expand(batch, 1, steps, steps)
        return (1.0 - mask) * -1e4 + x[:, None, :, None]


class ClassToken(nn.Module):
    """ViT's and BEiT's class token, a constant expanded to the run-time batch (Filled), then concatenated with the
    patches by a layer op (issue 45)."""

    def __init__(self):
        super().__init__()
        self.token = nn.Parameter(torch.randn(1, 1, 8))
        self.proj = nn.Linear(8, 8)

    def forward(self, x):  # (N, 5, 8)
        return self.proj(torch.cat([self.token.expand(x.shape[0], -1, -1), x], dim=1))


class ProjectedPositions(nn.Module):
    """ConViT's gated positional attention: constant relative positions expanded to the run-time batch, projected
    by a Linear (a MatMul and an Add the mapper fuses) and a softmax before they meet the input (issue 45): each
    sample computed alone, so the mapper evaluates them once, at conversion."""

    def __init__(self):
        super().__init__()
        self.register_buffer("positions", torch.randn(1, 5, 5, 3))
        self.proj = nn.Linear(3, 2)

    def forward(self, x):  # (N, 2, 5, 5)
        positions = self.proj(self.positions.expand(x.shape[0], -1, -1, -1)).permute(0, 3, 1, 2)
        return x * positions.softmax(dim=-1)


@pytest.mark.parametrize("case, factory, shape", [
    ("attention_with_run_time_shapes", Attention, (2, 5, 8)),
    ("positions_expanded_to_the_run_time_batch_then_projected", ProjectedPositions, (2, 2, 5, 5)),
    ("class_token_expanded_to_the_run_time_batch", ClassToken, (2, 5, 8)),
    ("mask_expanded_to_the_run_time_batch", ExpandedMask, (2, 6)),
    ("stacked_bidirectional_lstm", StackedBiLstm, (2, 7, 4)),
    ("forward_lstm_sequence", lambda: nn.LSTM(4, 5, batch_first=True), (2, 6, 4)),
    ("resize_bilinear_align_corners", lambda: nn.Sequential(nn.Conv2d(3, 4, 1), nn.Upsample(
        scale_factor=2, mode="bilinear", align_corners=True)), (2, 3, 4, 5)),
    ("resize_linear_1d_align_corners", lambda: nn.Upsample(size=7, mode="linear", align_corners=True), (2, 3, 4)),
])
def test_run_time_shapes_lstm_and_resize_compute_what_onnxruntime_computes(case, factory, shape, tmp_path):
    torch.manual_seed(0)
    module = factory().eval()
    if isinstance(module, nn.LSTM):
        module = FunctionModule(lambda m, x: m.lstm(x)[0], lstm=module).eval()
    onnx_model = _export(module, shape, 17, tmp_path)
    model = _to_keras(onnx_model, tmp_path)
    for batch in (shape[0], 3):  # another batch size than the exported one: the batch stays dynamic
        x = np.random.default_rng(batch).standard_normal((batch,) + shape[1:]).astype(np.float32)
        expected = _onnxruntime(onnx_model, {"x": x})[0]
        got = np.asarray(model([x], training=False))
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
    lstm_weights = [w for w in model.trainable_weights if "lstm" in w.path]
    assert bool(lstm_weights) == ("lstm" in case)  # a real (trainable) Keras LSTM, not an unrolled graph


class PositionsSummedOverTheBatch(ProjectedPositions):
    """The same positions summed over the batch: the sum grows with the batch size, so it is no constant."""

    def forward(self, x):
        return x + self.positions.expand(x.shape[0], -1, -1, -1).sum(dim=0, keepdim=True)[..., :1].permute(0, 3, 1, 2)


def test_a_constant_expanded_to_the_batch_then_mixed_across_it_is_computed_at_run_time(tmp_path):
    """Evaluated at batches of 1 and 2, a node that mixes samples gives different values: no constant is folded in
    its place (which would be right at one batch size only); the expanded constant is made a tensor of the
    run-time batch instead, and the sum over it is right at every batch size."""
    module = PositionsSummedOverTheBatch().eval()
    onnx_model = _export(module, (2, 1, 5, 5), 17, tmp_path)
    assert "ReduceSum" in {node.op_type for node in onnx_model.graph.node}
    model = _to_keras(onnx_model, tmp_path)
    for batch in (1, 3):
        x = torch.randn(batch, 1, 5, 5)
        with torch.no_grad():
            expected = module(x).numpy()
        np.testing.assert_allclose(np.asarray(model([x.numpy()], training=False)), expected, rtol=1e-5, atol=1e-5)


def _lstm_graph(direction: str, initial_state: str):
    """A hand-built LSTM over x (N, 5, 3) read as (T, N, I), both biases, its initial state built from Shape(x)."""
    rng = np.random.default_rng(0)
    directions, hidden = (2 if direction == "bidirectional" else 1), 4
    weights = [helper.make_tensor(name, TensorProto.FLOAT, dims, rng.standard_normal(dims).astype(np.float32).ravel())
               for name, dims in (("W", [directions, 4 * hidden, 3]), ("R", [directions, 4 * hidden, hidden]),
                                  ("B", [directions, 8 * hidden]))]
    weights += [_int64s("batch_axis", [0]), _int64s("sizes", [hidden]), _int64s("flat", [0, -1]),
                helper.make_tensor("directions", TensorProto.INT64, [1], [directions])]
    fill = helper.make_tensor("value", TensorProto.FLOAT, [1], [0.0 if initial_state == "zeros" else 0.5])
    nodes = [helper.make_node("Transpose", ["x"], ["sequence"], perm=[1, 0, 2]),
             helper.make_node("Shape", ["x"], ["shape"]),
             helper.make_node("Gather", ["shape", "batch_axis"], ["batch"], axis=0),
             helper.make_node("Concat", ["directions", "batch", "sizes"], ["state_shape"], axis=0),
             helper.make_node("ConstantOfShape", ["state_shape"], ["state"], value=fill),
             helper.make_node("LSTM", ["sequence", "W", "R", "B", "", "state", "state"], ["Y", "Y_h", "Y_c"],
                              hidden_size=hidden, direction=direction),
             helper.make_node("Transpose", ["Y"], ["Y_t"], perm=[2, 0, 1, 3]),
             helper.make_node("Reshape", ["Y_t", "flat"], ["y"])]
    return _node_graph(nodes, ["N", 5, 3], 17, weights)


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_lstm_of_each_direction_computes_what_onnxruntime_computes(direction, tmp_path):
    onnx_model = _lstm_graph(direction, "zeros")
    x = np.random.default_rng(1).standard_normal((2, 5, 3)).astype(np.float32)
    expected = _onnxruntime(onnx_model, {"x": x})[0]
    got = np.asarray(_to_keras(onnx_model, tmp_path)([x], training=False))
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_lstm_with_a_non_zero_initial_state_starts_from_it(tmp_path):
    onnx_model = _lstm_graph("forward", "halves")
    x = np.random.default_rng(1).standard_normal((2, 5, 3)).astype(np.float32)
    expected = _onnxruntime(onnx_model, {"x": x})[0]
    np.testing.assert_allclose(np.asarray(_to_keras(onnx_model, tmp_path)([x], training=False)), expected, rtol=1e-4,
                               atol=1e-5)


def test_embedding_index_wrap_of_tf2onnx_computes_what_onnxruntime_computes(tmp_path):
    """tf2onnx's Embedding: where(i < 0, i + n, i) spelled with Cast, Less, Not, Mul and Add, then Gather."""
    table = np.random.default_rng(0).standard_normal((10, 4)).astype(np.float32)
    nodes = [helper.make_node("Add", ["x", "n"], ["shifted"]),
             helper.make_node("Cast", ["x"], ["x_float"], to=TensorProto.FLOAT),
             helper.make_node("Less", ["x_float", "zero"], ["negative"]),
             helper.make_node("Cast", ["negative"], ["negative_int"], to=TensorProto.INT64),
             helper.make_node("Mul", ["negative_int", "shifted"], ["from_negative"]),
             helper.make_node("Not", ["negative"], ["positive"]),
             helper.make_node("Cast", ["positive"], ["positive_int"], to=TensorProto.INT64),
             helper.make_node("Mul", ["x", "positive_int"], ["from_positive"]),
             helper.make_node("Add", ["from_negative", "from_positive"], ["wrapped"]),
             helper.make_node("Gather", ["table", "wrapped"], ["y"], axis=0)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.INT64, ["N", 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [helper.make_tensor("table", TensorProto.FLOAT, [10, 4], table.ravel()),
                               helper.make_tensor("n", TensorProto.INT64, [], [10]),
                               helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0])])
    onnx_model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    x = np.array([[0, 3, 9, -1, -10, 5], [-3, 2, 0, 7, -9, 1]], dtype=np.int64)
    expected = _onnxruntime(onnx_model, {"x": x})[0]
    model = _to_keras(onnx_model, tmp_path)
    np.testing.assert_allclose(np.asarray(model([x], training=False)), expected, rtol=0, atol=0)
    assert [type(layer).__name__ for layer in model.layers] == ["InputLayer", "Embedding"]


# ---- the registry: every op the mapper registers has a case ---------------------------------------------------

# A case of ONNX's backend suite for every op the mapper registers (in the initializers mode where the case has
# parameters, as real models give them), converted and compared with the suite's expected outputs; the nodes the
# mapper fuses itself (registry.FUSED) have their cases above; ConstantOfShape is registered to name what it
# refuses (test_what_keras_cannot_compute_is_refused_naming_it).
REGISTRY_CASES = {
    "Abs": ("test_abs", "plain"), "Acos": ("test_acos_example", "plain"), "Acosh": ("test_acosh_example", "plain"),
    "Add": ("test_add", "initializers"), "And": ("test_and2d", "plain"),
    "ArgMax": ("test_argmax_no_keepdims_example", "plain"), "ArgMin": ("test_argmin_no_keepdims_example", "plain"),
    "Asin": ("test_asin_example", "plain"), "Asinh": ("test_asinh_example", "plain"),
    "Atan": ("test_atan_example", "plain"), "Atanh": ("test_atanh_example", "plain"),
    "AveragePool": ("test_averagepool_2d_precomputed_pads", "plain"),
    "BatchNormalization": ("test_batchnorm_example", "initializers"),
    "BitwiseAnd": ("test_bitwise_and_i32_2d", "plain"), "BitwiseNot": ("test_bitwise_not_2d", "plain"),
    "BitwiseOr": ("test_bitwise_or_i32_2d", "plain"), "BitwiseXor": ("test_bitwise_xor_i32_2d", "plain"),
    "Cast": ("test_cast_FLOAT_to_FLOAT16", "plain"), "CastLike": ("test_castlike_FLOAT_to_FLOAT16", "plain"),
    "Ceil": ("test_ceil_example", "plain"), "Celu": ("test_celu", "plain"),
    "Clip": ("test_clip_example", "initializers"), "Concat": ("test_concat_1d_axis_0", "plain"),
    "Conv": ("test_basic_conv_with_padding", "initializers"),
    "ConvTranspose": ("test_convtranspose", "initializers"), "Cos": ("test_cos_example", "plain"),
    "Cosh": ("test_cosh_example", "plain"), "CumSum": ("test_cumsum_1d", "initializers"),
    "Div": ("test_div_example", "initializers"), "Dropout": ("test_dropout_default_ratio", "initializers"),
    "Einsum": ("test_einsum_transpose", "plain"), "Elu": ("test_elu_example", "plain"),
    "Equal": ("test_equal", "plain"), "Erf": ("test_erf", "plain"), "Exp": ("test_exp_example", "plain"),
    "Expand": ("test_expand_dim_changed", "initializers"), "Flatten": ("test_flatten_axis0", "plain"),
    "Floor": ("test_floor_example", "plain"), "GRU": ("test_gru_bidirectional", "initializers"),
    "Gather": ("test_gather_0", "plain"), "GatherElements": ("test_gather_elements_negative_indices", "plain"),
    "GatherND": ("test_gathernd_example_float32", "plain"),
    "Gelu": ("test_gelu_tanh_1", "plain"),
    "Gemm": ("test_gemm_default_no_bias", "initializers"), "GlobalAveragePool": ("test_globalaveragepool", "plain"),
    "GlobalMaxPool": ("test_globalmaxpool", "plain"), "Greater": ("test_greater", "plain"),
    "GreaterOrEqual": ("test_greater_equal", "plain"),
    "GroupNormalization": ("test_group_normalization_example", "initializers"),
    "HardSigmoid": ("test_hardsigmoid_example", "plain"), "HardSwish": ("test_hardswish", "plain"),
    "Hardmax": ("test_hardmax_axis_0", "plain"), "Identity": ("test_identity", "plain"),
    "InstanceNormalization": ("test_instancenorm_example", "initializers"), "IsInf": ("test_isinf", "plain"),
    "IsNaN": ("test_isnan", "plain"), "LSTM": ("test_lstm_bidirectional", "initializers"),
    "LayerNormalization": ("test_layer_normalization_4d_axis0", "initializers"), "LRN": ("test_lrn", "plain"),
    "LeakyRelu": ("test_leakyrelu_example", "plain"), "Less": ("test_less", "plain"),
    "LessOrEqual": ("test_less_equal", "plain"), "Log": ("test_log_example", "plain"),
    "LogSoftmax": ("test_logsoftmax_example_1", "plain"),
    "LpNormalization": ("test_l2normalization_axis_0", "plain"), "MatMul": ("test_matmul_2d", "initializers"),
    "Max": ("test_max_example", "plain"), "MaxPool": ("test_maxpool_2d_precomputed_pads", "plain"),
    "Mean": ("test_mean_example", "plain"), "MeanVarianceNormalization": ("test_mvn", "plain"),
    "Min": ("test_min_example", "plain"), "Mish": ("test_mish", "plain"),
    "Mod": ("test_mod_mixed_sign_float64", "plain"), "Mul": ("test_mul_example", "initializers"),
    "Neg": ("test_neg_example", "plain"), "Not": ("test_not_2d", "plain"), "Or": ("test_or2d", "plain"),
    "OneHot": ("test_onehot_negative_indices", "initializers"),
    "PRelu": ("test_prelu_example", "initializers"), "Pad": ("test_constant_pad", "initializers"),
    "Pow": ("test_pow_example", "initializers"), "RNN": ("test_simple_rnn_bidirectional", "initializers"),
    "Reciprocal": ("test_reciprocal_example", "plain"),
    "ReduceL1": ("test_reduce_l1_do_not_keepdims_example", "initializers"),
    "ReduceL2": ("test_reduce_l2_do_not_keepdims_example", "initializers"),
    "ReduceLogSum": ("test_reduce_log_sum_desc_axes", "initializers"),
    "ReduceLogSumExp": ("test_reduce_log_sum_exp_do_not_keepdims_example", "initializers"),
    "ReduceMax": ("test_reduce_max_do_not_keepdims_example", "initializers"),
    "ReduceMean": ("test_reduce_mean_do_not_keepdims_example", "initializers"),
    "ReduceMin": ("test_reduce_min_do_not_keepdims_example", "initializers"),
    "ReduceProd": ("test_reduce_prod_do_not_keepdims_example", "initializers"),
    "ReduceSum": ("test_reduce_sum_do_not_keepdims_example", "initializers"),
    "ReduceSumSquare": ("test_reduce_sum_square_do_not_keepdims_example", "initializers"),
    "Relu": ("test_relu", "plain"), "Reshape": ("test_reshape_reordered_all_dims", "initializers"),
    "Resize": ("test_resize_upsample_scales_nearest", "initializers"), "Round": ("test_round", "plain"),
    "ScatterElements": ("test_scatter_elements_with_negative_indices", "plain"),
    "ScatterND": ("test_scatternd", "plain"),
    "Selu": ("test_selu_example", "plain"), "Shape": ("test_shape_example", "plain"),
    "Sigmoid": ("test_sigmoid_example", "plain"), "Sign": ("test_sign", "plain"),
    "Sin": ("test_sin_example", "plain"), "Sinh": ("test_sinh_example", "plain"),
    "Size": ("test_size_example", "plain"), "Slice": ("test_slice", "initializers"),
    "Softmax": ("test_softmax_example", "plain"), "Softplus": ("test_softplus_example", "plain"),
    "Softsign": ("test_softsign_example", "plain"),
    "Split": ("test_split_variable_parts_1d_opset13", "initializers"), "Sqrt": ("test_sqrt_example", "plain"),
    "Squeeze": ("test_squeeze", "initializers"), "Sub": ("test_sub_example", "initializers"),
    "Sum": ("test_sum_example", "plain"), "Tan": ("test_tan_example", "plain"),
    "Tanh": ("test_tanh_example", "plain"), "ThresholdedRelu": ("test_thresholdedrelu_example", "plain"),
    "Tile": ("test_tile", "initializers"), "TopK": ("test_top_k_smallest", "initializers"),
    "Transpose": ("test_transpose_default", "plain"),
    "Trilu": ("test_triu_neg", "initializers"), "Unsqueeze": ("test_unsqueeze_axis_0", "initializers"),
    "Upsample": ("test_upsample_nearest", "initializers"), "Where": ("test_where_example", "initializers"),
    "Xor": ("test_xor2d", "plain")
}
FUSED_CASES = {"GroupNormalization": "group_norm_silu", "LayerNormalization": "layernorm_decomposed_below_opset_17",
               "Gelu": "layernorm_and_gelu_by_hand", "MatMul": "layernorm_gelu_mlp"}
REFUSALS_ONLY = {"ConstantOfShape"}
# ops rosetta's rewrites write, with their tests in test_onnx_rewrites.py (a Range over the run-time batch)
REWRITTEN_ONLY = {"RosettaAxisRange"}


def test_every_registered_op_has_a_case():
    from rosetta.convert.onnx.to_keras.registry import FUSED, registered

    assert set(registered()) == set(REGISTRY_CASES) | REFUSALS_ONLY | REWRITTEN_ONLY
    assert set(registered(FUSED)) == set(FUSED_CASES)
    assert all(case in CASES or case in BEYOND_LAYERS for case in FUSED_CASES.values())


@pytest.mark.parametrize("op", sorted(REGISTRY_CASES))
def test_each_registered_op_computes_its_suite_case(op, tmp_path):
    from rosetta.convert.onnx.to_keras import onnx_to_keras_model
    from rosetta.frameworks.keras import import_keras
    from rosetta.verify.conformance import collect_cases

    name, mode = REGISTRY_CASES[op]
    case = collect_cases(tmp_path, ("node",), cases=[name], modes=(mode,))[-1]
    assert case.mode == mode and op in case.ops
    import onnx

    model = onnx_to_keras_model(onnx.load(f"{case.folder}/model.onnx"), import_keras())
    with np.load(f"{case.folder}/inputs.npz") as inputs, np.load(f"{case.folder}/expected.npz") as expected:
        got = model([inputs[name] for name in inputs.files], training=False)
        got = got if isinstance(got, (list, tuple)) else [got]
        for value, wanted in zip(got, [expected[name] for name in expected.files]):
            np.testing.assert_allclose(np.asarray(value).astype(np.float64), wanted.astype(np.float64),
                                       rtol=case.rtol, atol=case.atol)


def test_lrn_of_an_even_size_computes_the_spec_formula(tmp_path):
    """An even size: channel c's window runs from c - floor(3/2) = c - 1 to c + ceil(3/2) = c + 2, clipped to the
    channels. ONNX Runtime refuses even sizes and ONNX's reference evaluator (onnx 1.23) loops over the batch where
    the spec says channels, so the formula is written here from the spec."""
    onnx_model = _node_graph([helper.make_node("LRN", ["x"], ["y"], size=4, alpha=0.01, beta=0.5, bias=2.0)],
                             ["N", 3, 4, 5], 13, ())
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 5)).astype(np.float64)
    square_sum = np.stack([np.sum(x[:, max(0, c - 1):min(3, c + 3)] ** 2, axis=1) for c in range(3)], axis=1)
    expected = x / (2.0 + 0.01 / 4 * square_sum) ** 0.5
    got = np.asarray(_to_keras(onnx_model, tmp_path)([x.astype(np.float32)], training=False))
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
