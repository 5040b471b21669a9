from __future__ import annotations

import json

import numpy as np
import onnx
import onnx.numpy_helper
import pytest

from rosetta.convert.store import run_conversion, torch_source
from rosetta.convert.targets import get_target
from rosetta.errors import RosettaError
from rosetta.frameworks import load_runner
from rosetta.manifest import Manifest, sha256_of
from rosetta.models import get_model, list_models
from rosetta.models.inputs import generate_inputs
from tests.shared import fixed_subset

ONNX = get_target("onnxruntime").chain


@pytest.mark.parametrize("name", list_models())
def test_export_passes_the_checker_and_writes_a_manifest(store, name):
    spec = get_model(name)
    folder = store.get(spec, 0, ONNX)
    manifest = Manifest.read(folder)
    model = onnx.load(str(folder / manifest.artifact))
    onnx.checker.check_model(model, full_check=True)
    assert manifest.format == "onnx" and manifest.opset == 17
    assert manifest.source == {"model": name, "seed": 0}
    assert manifest.converter["name"] == "torch.onnx.export[torchscript]"
    assert manifest.converter["version"].startswith("2.")
    assert manifest.sha256 == sha256_of(folder / manifest.artifact)
    assert [i["name"] for i in manifest.inputs] == [t.name for t in spec.inputs]
    assert [o["name"] for o in manifest.outputs] == [t.name for t in spec.outputs]
    assert manifest.inputs[0]["dtype"] == spec.inputs[0].dtype
    assert manifest.inputs[0]["shape"][0] == "batch"  # dynamic batch axis
    assert manifest.inputs[0]["shape"][1:] == list(spec.inputs[0].shape[1:])
    manifest.check_integrity(folder)


@pytest.mark.parametrize("name", fixed_subset(list_models(), lambda name: name != "resnet50"))  # its: test-all
def test_dynamic_batch_runs_other_batch_sizes(store, name):
    spec = get_model(name)
    runner = load_runner("onnxruntime", store.get(spec, 0, ONNX))
    for batch in (1, 3):
        out = runner.predict(generate_inputs(spec.inputs, batch, 0))
        assert out[spec.outputs[0].name].shape == spec.outputs[0].concrete_shape(batch)


def test_eval_export_folds_batchnorm_and_preserve_keeps_it(store):
    spec = get_model("resnet50")
    folded = onnx.load(str(store.get(spec, 0, ONNX) / "model.onnx"))
    kept = onnx.load(str(store.get(spec, 0, ONNX, {"training": "preserve"}) / "model.onnx"))
    assert "BatchNormalization" not in {n.op_type for n in folded.graph.node}
    assert sum(n.op_type == "BatchNormalization" for n in kept.graph.node) == 53


def test_preserve_keeps_every_dropout_with_its_rate_and_leaves_the_exporter_as_it_was(tmp_path):
    """A graph exported to be trained keeps each Dropout as ONNX Dropout(x, ratio), identity at inference
    (ORT gives the module's eval output); an eval export made after it still drops them (the custom symbolic
    is gone); a dropout the module keeps on at inference (F.dropout(training=True)) stays on."""
    import torch

    spec = get_model("cnn")
    module = spec.build(0).eval()
    run_conversion(torch_source(spec, 0, module=module), ONNX, tmp_path / "kept", {"training": "preserve"})
    graph = onnx.load(str(tmp_path / "kept" / "model.onnx")).graph
    constants = {n.output[0]: onnx.numpy_helper.to_array(n.attribute[0].t) for n in graph.node if n.op_type == "Constant"}
    dropouts = [n for n in graph.node if n.op_type == "Dropout"]
    assert [float(constants[n.input[1]]) for n in dropouts] == [0.25, 0.25, 0.5]
    assert all(len(n.input) == 2 for n in dropouts)  # no training_mode: off at inference
    feeds = generate_inputs(spec.inputs, 3, 0)
    out = load_runner("onnxruntime", tmp_path / "kept").predict(feeds)
    with torch.no_grad():
        expected = module(torch.from_numpy(feeds[spec.inputs[0].name])).numpy()
    np.testing.assert_allclose(out["logits"], expected, rtol=1e-5, atol=1e-6)
    run_conversion(torch_source(spec, 0, module=module), ONNX, tmp_path / "eval", {"training": "eval"})
    assert "Dropout" not in {n.op_type for n in onnx.load(str(tmp_path / "eval" / "model.onnx")).graph.node}

    class AlwaysOn(torch.nn.Module):  # Monte-Carlo dropout: on at inference too
        def forward(self, x):
            return torch.nn.functional.dropout(x.flatten(1)[:, :10], 0.3, training=True)

    run_conversion(torch_source(spec, 0, module=AlwaysOn()), ONNX, tmp_path / "on", {"training": "preserve"})
    node = next(n for n in onnx.load(str(tmp_path / "on" / "model.onnx")).graph.node if n.op_type == "Dropout")
    assert len(node.input) == 3  # training_mode true


def _conv_batchnorm(seed: int = 0):
    """A module shaped like the cnn (image in, 10 logits out) with BatchNorm whose statistics are not the
    identity, so a wrongly folded or skipped BatchNorm changes the numbers."""
    import torch

    torch.manual_seed(seed)
    module = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
                                 torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(4, 10))
    module[1].running_mean.uniform_(-1, 1)
    module[1].running_var.uniform_(0.5, 2)
    return module.eval()


@pytest.mark.parametrize("module,training", [("cnn", "eval"), ("conv-batchnorm", "eval"), ("conv-batchnorm", "preserve")])
def test_dynamo_exporter_computes_what_the_module_computes(tmp_path, module, training):
    """The dynamo export run in ONNX Runtime against the torch module itself: with eval its optimiser folds
    BatchNorm into the convolution; with preserve BatchNorm stays a node of its own."""
    import torch

    spec = get_model("cnn")
    module = spec.build(0).eval() if module == "cnn" else _conv_batchnorm()
    manifest = run_conversion(torch_source(spec, 0, module=module), ONNX, tmp_path / "out",
                              {"exporter": "dynamo", "opset": 18, "training": training})
    assert manifest.converter["name"] == "torch.onnx.export[dynamo]"
    graph = onnx.load(str(tmp_path / "out" / "model.onnx"))
    kept = sum(n.op_type == "BatchNormalization" for n in graph.graph.node)
    assert kept == (training == "preserve") * sum(isinstance(m, torch.nn.BatchNorm2d) for m in module.modules())
    feeds = generate_inputs(spec.inputs, 3, 0)
    out = load_runner("onnxruntime", tmp_path / "out").predict(feeds)
    with torch.no_grad():
        expected = module(torch.from_numpy(feeds[spec.inputs[0].name])).numpy()
    assert out["logits"].shape == expected.shape == (3, 10)
    np.testing.assert_allclose(out["logits"], expected, rtol=1e-5, atol=1e-6)


def test_dynamo_exporter_refuses_training_mode_saying_what_to_pass(tmp_path):
    """The library names the parameters (exporter=, training=); the command line says them as its flags."""
    from rosetta.cli.flags import as_flags

    with pytest.raises(RosettaError, match="no training-mode graph; pass exporter='torchscript'") as refused:
        run_conversion(torch_source(get_model("cnn"), 0), ONNX, tmp_path / "out", {"exporter": "dynamo",
                                                                                    "training": "train"})
    assert as_flags(str(refused.value)) == ("the dynamo exporter has no training-mode graph; pass --exporter "
                                            "torchscript (or --training eval or --training preserve with dynamo)")


def test_a_graph_with_batchnorm_folded_is_refused_for_training(tmp_path):
    from rosetta.convert.onnx.from_torch import check_batchnorm_kept

    module = _conv_batchnorm()
    run_conversion(torch_source(get_model("cnn"), 0, module=module), ONNX, tmp_path / "out")  # eval: folded
    folded = onnx.load(str(tmp_path / "out" / "model.onnx"))
    with pytest.raises(RosettaError, match="keeps 0 of the module's 1 BatchNorm layers"):
        check_batchnorm_kept(module, folded)


def _auxiliary_head():
    """GoogLeNet's and Inception-v3's shape: an auxiliary head with its own BatchNorm that only training runs."""
    import torch

    class AuxiliaryHead(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.main = _conv_batchnorm()
            self.aux = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 1), torch.nn.BatchNorm2d(4))

        def forward(self, x):
            if self.training:
                return self.main(x) + self.aux(x).mean((1, 2, 3))[:, None]
            return self.main(x)

    return AuxiliaryHead().eval()


def test_a_batchnorm_the_forward_does_not_run_is_not_asked_of_a_graph_kept_for_training(tmp_path):
    """Issue 45's sweep: torchvision's GoogLeNet and Inception-v3 were refused for every trainable target
    ("keeps 57 of the module's 59 BatchNorm layers"): the two missing were their auxiliary heads', which an
    eval-mode forward never runs. What the forward calls is counted; a folded one is still refused."""
    from rosetta.convert.onnx.from_torch import check_batchnorm_kept, example_inputs

    module = _auxiliary_head()
    source = torch_source(get_model("cnn"), 0, module=module)
    run_conversion(source, ONNX, tmp_path / "kept", {"training": "preserve"})
    kept = onnx.load(str(tmp_path / "kept" / "model.onnx"))
    assert sum(n.op_type == "BatchNormalization" for n in kept.graph.node) == 1
    run_conversion(source, ONNX, tmp_path / "folded")  # eval: the one the forward runs is folded
    folded = onnx.load(str(tmp_path / "folded" / "model.onnx"))
    with pytest.raises(RosettaError, match="keeps 0 of the 1 BatchNorm calls of its forward"):
        check_batchnorm_kept(module, folded, example_inputs(source))


def test_failed_conversion_leaves_nothing_behind(tmp_path):
    class Broken(get_model("cnn").build(0).__class__):
        def forward(self, x):
            raise RuntimeError("deliberately broken forward")

    with pytest.raises(RosettaError, match="torch.onnx.export .* failed: .*deliberately broken"):
        run_conversion(torch_source(get_model("cnn"), 0, module=Broken()), ONNX, tmp_path / "out")
    assert list(tmp_path.iterdir()) == []


def test_existing_non_empty_output_is_refused_unless_forced(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("user data")
    with pytest.raises(RosettaError, match="exists and is not empty.*force="):
        run_conversion(torch_source(get_model("cnn"), 0), ONNX, out)
    assert (out / "keep.txt").read_text() == "user data"
    run_conversion(torch_source(get_model("cnn"), 0), ONNX, out, force=True)
    assert not (out / "keep.txt").exists() and (out / "model.onnx").is_file()
    assert json.loads((out / "manifest.json").read_text())["chain"] == ["torch", "onnx"]


def test_tampered_artifact_fails_integrity_check(tmp_path):
    manifest = run_conversion(torch_source(get_model("cnn"), 0), ONNX, tmp_path / "out")
    with open(tmp_path / "out" / "model.onnx", "ab") as handle:
        handle.write(b"\0")
    with pytest.raises(RosettaError, match="does not match its manifest's sha256"):
        manifest.check_integrity(tmp_path / "out")


def test_same_seed_exports_identical_weights(tmp_path):
    spec = get_model("gru")
    paths = [tmp_path / "a", tmp_path / "b"]
    for path in paths:
        run_conversion(torch_source(spec, 5), ONNX, path)
    a, b = (onnx.load(str(p / "model.onnx")) for p in paths)
    for x, y in zip(a.graph.initializer, b.graph.initializer):
        assert np.array_equal(onnx.numpy_helper.to_array(x), onnx.numpy_helper.to_array(y))


def test_batchnorm_exported_in_training_mode_is_flagged(tmp_path):
    """The lint's BatchNormalization branch, fed a real training-mode export (the cnn has no BatchNorm, so
    the CLI's training-mode test reaches only the Dropout branch) and a graph that says training_mode=0."""
    from onnx import TensorProto, helper

    from rosetta.frameworks.onnx_graph import training_mode_nodes
    from rosetta.verify.lint import artifact_problems

    run_conversion(torch_source(get_model("cnn"), 0, module=_conv_batchnorm()), ONNX, tmp_path / "train",
                   {"training": "train"})
    assert [p for p in artifact_problems(tmp_path / "train") if "BatchNormalization" in p and "training_mode=1" in p]

    def batchnorm(training_mode: int):
        values = [helper.make_tensor(n, TensorProto.FLOAT, [2], [1.0, 1.0]) for n in ("scale", "bias", "mean", "var")]
        node = helper.make_node("BatchNormalization", ["x", "scale", "bias", "mean", "var"], ["y"], name="bn",
                                training_mode=training_mode)
        graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 3])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], values)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 15)])

    assert training_mode_nodes(batchnorm(1)) == ["BatchNormalization 'bn' with training_mode=1"]
    assert training_mode_nodes(batchnorm(0)) == []


@pytest.mark.parametrize("size,out", [((4,), (3,)), ((2, 5), (7, 3)), ((1, 1), (6, 6)), ((3, 4, 5), (2, 3, 4))])
def test_the_averaging_matrices_compute_torchs_adaptive_average(size, out):
    """The kernel `adaptive_average_as_matmul` writes (the Kronecker product of one averaging matrix per axis)
    applied to the flattened spatial axes is torch's adaptive average pooling, windows overlapping or not."""
    import torch

    from rosetta.convert.onnx.from_torch import averaging_matrix

    x = torch.rand(2, 3, *size, dtype=torch.float64)
    kernel = np.ones((1, 1))
    for s, o in zip(size, out):
        kernel = np.kron(kernel, averaging_matrix(s, o))
    pooled = (x.reshape(2, 3, -1).numpy() @ kernel.T).reshape(2, 3, *out)
    expected = getattr(torch.nn.functional, f"adaptive_avg_pool{len(size)}d")(x, out).numpy()
    np.testing.assert_allclose(pooled, expected, rtol=1e-12, atol=1e-12)


class _Pooled:
    """A convolution, an adaptive average pooling to `out` and a classifier: AlexNet's and VGG's head."""

    @staticmethod
    def build(out):
        import torch

        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.ReLU(),
                                   torch.nn.AdaptiveAvgPool2d(out), torch.nn.Flatten(),
                                   torch.nn.Linear(4 * out[0] * out[1], 5)).eval()


def test_an_uneven_adaptive_average_is_exported_by_torchscript_as_a_matmul_and_passes_where_it_was_refused(tmp_path):
    """A 4x4 map pooled to 3x3 (AlexNet and VGG at 64x64): the TorchScript exporter's own symbolic refuses it and
    the dynamo exporter's GatherND and ReduceMean over run-time axes were refused by the Keras mapper, MXNet and
    onnx2torch; written as the MatMul it is, those targets PASS (onnx2tf took either graph). A pooling that divides
    its input keeps the exporter's AveragePool."""
    import rosetta

    conversion = rosetta.convert(_Pooled.build((3, 3)), "onnx,keras,torch,mxnet", inputs=["x:Nx3x4x4:float32"],
                                 batch=2, output_dir=tmp_path / "uneven")
    assert {row.target: row.verdict for row in conversion.report} == dict.fromkeys(
        ("onnx", "keras", "torch", "mxnet"), "PASS"), conversion.report
    manifest = Manifest.read(tmp_path / "uneven" / "onnx")
    assert manifest.converter["name"] == "torch.onnx.export[torchscript]" and "way_in" not in manifest.converter
    ops = [node.op_type for node in onnx.load(str(tmp_path / "uneven" / "onnx" / manifest.artifact)).graph.node]
    assert "MatMul" in ops and "AveragePool" not in ops and "GatherND" not in ops
    even = rosetta.convert(_Pooled.build((2, 2)), "onnx", inputs=["x:Nx3x4x4:float32"], batch=2,
                           output_dir=tmp_path / "even")
    assert [row.verdict for row in even.report] == ["PASS"]
    ops = [node.op_type for node in onnx.load(str(tmp_path / "even" / "onnx" / "model.onnx")).graph.node]
    assert "AveragePool" in ops and "MatMul" not in ops


def _exported_by_torchscript(module, targets: str, spec: str, batch: int, tmp_path) -> set:
    """`module` converted to `targets`, every row PASS and the ONNX artifact made by the TorchScript exporter (no
    second way in): the op types of that artifact."""
    import rosetta

    conversion = rosetta.convert(module, targets, inputs=[spec], batch=batch, output_dir=tmp_path / "out")
    assert {row.target: row.verdict for row in conversion.report} == dict.fromkeys(targets.split(","), "PASS"), \
        conversion.report
    manifest = Manifest.read(tmp_path / "out" / "onnx")
    assert manifest.converter["name"] == "torch.onnx.export[torchscript]" and "way_in" not in manifest.converter
    return {node.op_type for node in onnx.load(str(tmp_path / "out" / "onnx" / manifest.artifact)).graph.node}


class _Expm1(__import__("torch").nn.Module):
    def forward(self, x):
        return x.expm1()


@pytest.mark.parametrize("norm, ops", [
    (lambda: __import__("torch").nn.RMSNorm(6), {"ReduceMean", "Sqrt", "Div"}),
    (lambda: __import__("torch").nn.RMSNorm([4, 6], eps=1e-3, elementwise_affine=False), {"ReduceMean", "Sqrt", "Div"}),
    (_Expm1, {"Exp", "Sub"})], ids=["rms_norm-weight-default-eps", "rms_norm-two-axes-no-weight", "expm1"])
def test_ops_without_a_torchscript_symbolic_are_exported_as_primitives(norm, ops, tmp_path):
    """torch.nn.RMSNorm (aten::rms_norm: Hugging Face's DiffLlama, timm's RmsNorm) and expm1 (Apertus' xIELU) have
    no TorchScript symbolic at opset 17, and the dynamo exporter, the second way in, failed on both models: written
    as primitives (Mul, ReduceMean, Add, Sqrt, Div, and Mul by the weight; Exp and Sub), they PASS by the
    TorchScript exporter."""
    import torch

    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(6, 6), norm()).eval()
    with torch.no_grad():
        for parameter in module[1].parameters():  # RMSNorm's weight: not all ones
            parameter.uniform_(0.5, 1.5)
    assert ops <= _exported_by_torchscript(module, "onnx", "x:Nx4x6:float32", 2, tmp_path)


def test_dynamo_preserve_is_optimised_but_keeps_its_batchnorm(tmp_path):
    """Issue 45: with preserve the dynamo export went unoptimised (its optimiser folds BatchNorm), keeping the
    exporter's SplitToSequence, SequenceAt and a Range over static sizes, which no target but ONNX Runtime
    converts (timm's HaloNet: Keras CANNOT). Optimised without the BatchNorm folding: neither, and BatchNorm."""
    import torch

    class SplitAndCount(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv, self.norm = torch.nn.Conv2d(4, 4, 1), torch.nn.BatchNorm2d(4)

        def forward(self, x):
            y = self.norm(self.conv(x))
            first, rest = torch.split(y, [1, 3], dim=1)
            return first.sum(1) + rest.sum(1) + torch.arange(y.shape[2]).float()

    torch.manual_seed(0)
    module = SplitAndCount().eval()
    module.norm.running_mean.uniform_(-1, 1)
    module.norm.running_var.uniform_(0.5, 2)
    from rosetta.convert.onnx.from_torch import TorchSource
    from rosetta.models.registry import TensorSpec

    source = TorchSource(module, (TensorSpec("x", (None, 4, 3, 3), "float32"),), (TensorSpec("y", (None,), "float32"),), {})
    run_conversion(source, ONNX, tmp_path / "out", {"exporter": "dynamo", "opset": 18, "training": "preserve"})
    ops = {n.op_type for n in onnx.load(str(tmp_path / "out" / "model.onnx")).graph.node}
    assert "BatchNormalization" in ops and not ops & {"SplitToSequence", "SequenceAt", "Range"}
    x = np.random.default_rng(0).normal(size=(3, 4, 3, 3)).astype(np.float32)
    with torch.no_grad():
        expected = module(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(load_runner("onnxruntime", tmp_path / "out").predict({"x": x})["y"], expected,
                               rtol=1e-5, atol=1e-5)


class _Interleaved(__import__("torch").nn.Module):
    """Cohere's rotary embedding: frequencies repeated in place along the last axis, and the input's halves
    interleaved by a stack; and a per-element count, which keeps the exporter's own symbolic."""

    def forward(self, x):
        import torch

        doubled = torch.repeat_interleave(x[:, :, :4] * 2, 2, dim=-1)
        rotated = torch.stack([-x[..., 1::2], x[..., ::2]], dim=-1).flatten(-2)
        counted = torch.repeat_interleave(x[:, :2], torch.tensor([1, 2]), dim=1)
        return x * doubled + rotated, counted.sum(dim=1)


def test_repeat_interleave_along_an_axis_is_exported_as_tile_and_reshape(tmp_path):
    """The TorchScript exporter's repeat_interleave symbolic, in a graph whose batch is dynamic, left a stack of
    the same input written at the wrong axis ((N, 5, 2, 4) for (N, 5, 8): Cohere's rotary embedding, ONNX Runtime
    refused the export, every target CANNOT); by a constant count it is exported as Unsqueeze, Tile and Reshape,
    and the model PASSes."""
    assert "Tile" in _exported_by_torchscript(_Interleaved(), "onnx,torch", "x:Nx5x8:float32", 3, tmp_path)


class _Folded(__import__("torch").nn.Module):
    """VOLO's outlook attention, twice: patches unfolded, weighted, and folded back (F.fold, aten::col2im) to an
    output size read from the input's shape; the second fold's from the first's output, through a linear layer."""

    def __init__(self):
        import torch

        super().__init__()
        self.mix = torch.nn.Linear(4, 4)

    def forward(self, x):
        import torch.nn.functional as F

        for _ in range(2):
            batch, channels, height, width = x.shape
            columns = F.unfold(x, 3, padding=1, stride=2)
            columns = columns.reshape(batch, channels * 9, -1) * 0.5
            x = F.fold(columns, output_size=(height, width), kernel_size=3, padding=1, stride=2)
            x = self.mix(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        return x


def test_fold_is_exported_before_opset_18_as_a_transposed_convolution(tmp_path):
    """F.fold has no TorchScript symbolic before opset 18 (Col2Im), and the dynamo exporter's Col2Im (timm's VOLO)
    no target but ONNX Runtime converted: written as a ConvTranspose by one-hot kernels, cut to the output size
    (here 8x8 from 4x4 blocks of stride 2, past the full result's 7: a zero row and column), the model PASSes
    through onnx2torch and the Keras mapper too."""
    ops = _exported_by_torchscript(_Folded(), "onnx,torch,keras", "x:Nx4x8x8:float32", 2, tmp_path)
    assert "ConvTranspose" in ops and "Col2Im" not in ops


class _AntialiasedPositions(__import__("torch").nn.Module):
    """DINOv2 with registers: position embeddings resized (bicubic, antialiased) to the input's patch grid, its
    size computed from the input's shape."""

    def __init__(self, mode: str):
        import torch

        super().__init__()
        self.positions, self.mode = torch.nn.Parameter(torch.randn(1, 3, 7, 7)), mode

    def forward(self, x):
        import torch.nn.functional as F

        height, width = x.shape[2] // 4, x.shape[3] // 4
        positions = F.interpolate(self.positions, size=(height, width), mode=self.mode, antialias=True)
        return F.avg_pool2d(x, 4) + positions


@pytest.mark.parametrize("mode", ["bicubic", "bilinear"])
def test_an_antialiased_resize_is_exported_as_matmuls(mode, tmp_path):
    """aten::_upsample_bicubic2d_aa has no TorchScript symbolic, and the dynamo exporter failed on DINOv2 with
    registers (a data-dependent guard): every target CANNOT. As one MatMul per spatial axis by the matrix torch's
    own kernel makes of the identity, the model PASSes."""
    import torch

    torch.manual_seed(0)
    assert "MatMul" in _exported_by_torchscript(_AntialiasedPositions(mode), "onnx,torch", "x:Nx3x12x20:float32", 2,
                                                tmp_path)
