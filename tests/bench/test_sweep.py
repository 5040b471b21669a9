"""scripts/sweep.py (issue 45's whole-library sweep) on a fixed, seeded sample of three tiny models: the JSON and
the markdown are written, rows are counted per target, library and family, every cell that does not PASS is
grouped by cause, a model that cannot be built has no cells, and --resume runs only what is missing."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "sweep.py"


@pytest.fixture(scope="module")
def sweep():
    spec = importlib.util.spec_from_file_location("rosetta_sweep", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


def _mlp():
    import torch

    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3)).eval(), ["x:Nx6:float32"]


def _shrinking():
    """An ONNX model of one Shrink, which onnx2torch has no converter for: its torch cell is CANNOT."""
    from onnx import TensorProto, helper

    node = helper.make_node("Shrink", ["x"], ["y"], lambd=0.1)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 6])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model, None


def _unbuildable():
    raise RuntimeError("needs weights this machine does not have")


def _sample(sweep):
    return [sweep.Entry("plain", "mlp", "mlp", _mlp), sweep.Entry("plain", "shrink", "shrinking", _shrinking),
            sweep.Entry("other", "broken", "unbuildable", _unbuildable)]


def test_the_sweep_writes_its_rows_grouped_per_target_library_family_and_cause(sweep, tmp_path):
    records = sweep.run(["timm"], "onnx,torch", tmp_path / "s.json", tmp_path / "s.md", entries=_sample(sweep),
                        jobs=1)
    assert [r["model"] for r in records] == ["mlp", "shrinking", "unbuildable"]
    written = json.loads((tmp_path / "s.json").read_text())
    summary = written["summary"]
    assert (summary["models"], summary["unbuilt"], summary["cells"], summary["passed"]) == (3, 1, 4, 3)
    assert summary["target"] == {"onnx": {"PASS": 2}, "torch": {"PASS": 1, "CANNOT": 1}}
    assert summary["library"] == {"plain": {"PASS": 3, "CANNOT": 1}}
    assert summary["family"]["plain/shrink"] == {"PASS": 1, "CANNOT": 1}
    [cause] = summary["causes"]
    assert cause["count"] == 1 and cause["cells"] == ["shrinking -> torch"]
    assert cause["cause"].startswith("CANNOT: ") and "Shrink" in cause["cause"]
    assert written["models"][2]["unbuilt"] == "RuntimeError: needs weights this machine does not have"
    text = (tmp_path / "s.md").read_text()
    assert text.startswith("# Sweep: 3 models (1 unbuilt), 4 cells, 3 PASS (75 %)")
    for heading in ("## Per target", "## Per library", "## Per family", "## Cells that do not PASS, by cause",
                    "## Not built (no cells)"):
        assert heading in text
    assert "| torch | 1 of 2 (50 %) | 1 | 0 | 1 | 0 | 0 |" in text
    assert "| 1 | CANNOT: " in text and "shrinking -> torch" in text

    def must_not_run():
        raise AssertionError("a finished model ran again")
    kept = [sweep.Entry(e.library, e.family, e.name, must_not_run) for e in _sample(sweep)]
    again = sweep.run(["timm"], "onnx,torch", tmp_path / "s.json", tmp_path / "s.md", resume=True, entries=kept)
    assert again == records
    part = sweep.run(["timm"], "onnx,torch", tmp_path / "s.json", tmp_path / "s.md", resume=True, entries=kept[:1])
    assert sorted(r["model"] for r in part) == sorted(r["model"] for r in records), "a resumed run kept every model"
    assert all(r["code"] for r in part) and "Measured by rosetta at " in (tmp_path / "s.md").read_text()
    ran = []
    again = [sweep.Entry(e.library, e.family, e.name, lambda e=e: ran.append(e.name) or e.build()) for e in _sample(sweep)]
    sweep.run(["timm"], "onnx,torch", tmp_path / "s.json", tmp_path / "s.md", resume=True, entries=again, jobs=1,
              rerun_failing=True)
    assert ran == ["shrinking", "unbuildable"], "only the models with a cell that is not a PASS, or unbuilt, run again"

    def stopped():
        raise KeyboardInterrupt  # the run stopped while a model runs again: its earlier record stays
    halted = [sweep.Entry(e.library, e.family, e.name, stopped if e.name == "unbuildable" else e.build)
              for e in _sample(sweep)]  # shrinking runs again and is written first
    with pytest.raises(KeyboardInterrupt):
        sweep.run(["timm"], "onnx,torch", tmp_path / "s.json", tmp_path / "s.md", resume=True, entries=halted,
                  rerun_failing=True)
    kept_after_stop = json.loads((tmp_path / "s.json").read_text())["models"]
    assert sorted(r["model"] for r in kept_after_stop) == sorted(r["model"] for r in records)


def test_a_family_is_swept_at_its_smallest_variant(sweep):
    assert sweep.smallest(["convnext_base", "convnext_atto", "convnext_tiny"]) == "convnext_atto"
    assert sweep.smallest(["cait_m36_384", "cait_xxs24_224", "cait_s24_224"]) == "cait_xxs24_224"
    assert sweep.smallest(["ConvNeXtBase", "ConvNeXtTiny", "ConvNeXtLarge"]) == "ConvNeXtTiny"
    assert sweep.smallest(["NASNetLarge", "NASNetMobile"]) == "NASNetMobile"
    assert sweep.smallest(["swin_b", "swin_s", "swin_t"]) == "swin_t"


def test_calibrated_batchnorm_makes_a_vanishing_net_depend_on_its_input(sweep):
    """GoogLeNet-style seeding (convolutions at std 0.01) shrinks the signal through depth until the output is
    the same for every input (the sweep's INCONCLUSIVE cells); BatchNorm statistics calibrated on a batch
    rescale each stage, as a trained net's do, and are not the identity (a dropped BatchNorm still shows)."""
    import torch

    torch.manual_seed(0)
    layers = []
    for _ in range(8):
        conv = torch.nn.Conv2d(4, 4, 3, padding=1)
        torch.nn.init.normal_(conv.weight, std=0.01)
        layers += [conv, torch.nn.BatchNorm2d(4), torch.nn.ReLU()]
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 1), *layers, torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
                              torch.nn.Linear(4, 3)).eval()
    inputs = torch.rand(2, 3, 8, 8)

    def spread():
        with torch.no_grad():
            out = net(inputs)
        return float((out[0] - out[1]).abs().max() / out.abs().max())

    assert spread() < 1e-6  # seeded as it is: input-insensitive
    assert sweep._calibrated(net, torch.rand(4, 3, 8, 8)) is net and not net.training
    assert spread() > 1e-3
    norms = [m for m in net.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    assert all(m.momentum == 0.1 for m in norms)  # restored
    assert not any(torch.allclose(m.running_var, torch.ones(4)) or torch.allclose(m.running_mean, torch.zeros(4))
                   for m in norms)


def test_a_model_built_twice_has_the_same_weights_and_statistics(sweep):
    """The seed is set before a model is built (a module draws its weights as it is constructed), so the sweep
    run twice sweeps the same models: once it was set after, and a row could change from run to run (timm's
    Inception-v3 in tensorflow: the Keras mapper's way INCONCLUSIVE in one run, PASS in the next)."""
    import torch

    def factory(size):
        return torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
                                   torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(4, 2))

    first, inputs = sweep._image_model(factory)
    torch.rand(1)  # the global generator moves on between the two builds
    second, again = sweep._image_model(factory)
    assert inputs == again == [f"x:Nx3x{sweep.IMAGE}x{sweep.IMAGE}:float32"]
    for (name, a), (_, b) in zip(first.state_dict().items(), second.state_dict().items()):
        assert torch.equal(a, b), name


def test_a_transformers_model_too_large_at_the_sweeps_sizes_is_not_built(sweep):
    """A configuration that keeps sizes the sweep does not set (Apertus 1.5: 7 B parameters) is counted on the meta
    device and listed as unbuilt, instead of being built (one run was killed at 21 GB)."""
    (entry,) = [e for e in sweep.transformers_entries() if e.name == "apertus1p5"]
    with pytest.raises(RuntimeError, match=r"M parameters at the sweep's sizes .* over 50 M"):
        entry.build()


def test_weights_initialised_to_zeros_where_a_checkpoint_has_none_are_drawn(sweep):
    """timm's Hiera zero-initialises its classifier (every output 0 for every input: INCONCLUSIVE, whatever the
    conversion), and a mixture-of-experts router's zero gate ties every expert: such weights are drawn from the
    seed. Zero biases and LayerNorm's scale of ones are left as they are, and the draw is the same each time."""
    import torch

    def build():
        module = torch.nn.Sequential(torch.nn.LayerNorm(4), torch.nn.Linear(4, 3))
        torch.nn.init.zeros_(module[1].weight)
        torch.nn.init.zeros_(module[1].bias)
        return module

    first, second = sweep._untied(build()), sweep._untied(build())
    assert bool((first[1].weight != 0).all()) and torch.equal(first[1].weight, second[1].weight)
    assert bool((first[1].bias == 0).all()) and bool((first[0].weight == 1).all())


def test_a_transformers_type_auto_model_does_not_map_is_built_by_its_own_model_class(sweep):
    """ALIGN's text tower (align_text_model) has a configuration AutoModel refuses ("Unrecognized configuration
    class"); its modeling module's AlignTextModel, declared for that configuration, builds it."""
    from transformers import AlignTextConfig, BertConfig

    assert type(sweep._model_builder(AlignTextConfig(hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                                     intermediate_size=32))()).__name__ == "AlignTextModel"
    assert type(sweep._model_builder(BertConfig(hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                                intermediate_size=32))()).__name__ == "BertModel"
