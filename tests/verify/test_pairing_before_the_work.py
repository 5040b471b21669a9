"""Every pairing question is answered before any model runs (issue 46): outputs are paired from the models'
signatures at the same point as inputs, a model compared with itself always pairs, and --pair and --layer-map
are checked when read. What cannot be paired is one line, exit 2, with the candidates and the --pair to give;
what can is compared, a missing output a FAIL, an extra one said and left out."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tests.test_cli import run_here

RNG = np.random.default_rng(0)
W = RNG.standard_normal((4, 6)).astype(np.float32)
B = RNG.standard_normal(4).astype(np.float32)

NETS = '''
import torch
from torch import nn


class Two(nn.Module):
    """Two outputs of one shape: a linear layer and its tanh."""
    def __init__(self, swap=False):
        super().__init__()
        torch.manual_seed(0)
        self.fc, self.swap = nn.Linear(6, 4), swap

    def forward(self, x):
        a = self.fc(x)
        return (torch.tanh(a), a) if self.swap else (a, torch.tanh(a))


def two():
    return Two()


def swapped():
    return Two(swap=True)
'''


def onnx_model(path: Path, outputs: dict[str, tuple[str, list]]) -> Path:
    """x (N, 6) -> Gemm -> "gemm"; each output NAME: (op on gemm, shape)."""
    nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["gemm"], transB=1)]
    for name, (op, _) in outputs.items():
        nodes.append(helper.make_node(op, ["gemm"], [name]))
    graph = helper.make_graph(nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 6])],
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n, (_, shape) in
                               outputs.items()],
                              [numpy_helper.from_array(W, "w"), numpy_helper.from_array(B, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, str(path))
    return path


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("pairing")
    (folder / "nets.py").write_text(textwrap.dedent(NETS))
    onnx_model(folder / "ref.onnx", {"y": ("Identity", ["N", 4])})
    onnx_model(folder / "two.onnx", {"y": ("Identity", ["N", 4]), "t": ("Tanh", ["N", 4])})
    onnx_model(folder / "extra.onnx", {"first": ("Identity", ["N", 4]), "second": ("Tanh", ["N", 4])})
    onnx_model(folder / "renamed.onnx", {"logits": ("Identity", ["N", 4])})
    onnx_model(folder / "tanh-first.onnx", {"t": ("Tanh", ["N", 4]), "y": ("Identity", ["N", 4])})
    return folder


@pytest.fixture
def nothing_runs(monkeypatch):
    """Any model run (the reference's or a compared one's) fails the test: what is refused, is refused before."""
    import rosetta.verify.artifacts as artifacts

    def ran(*args, **kwargs):
        raise AssertionError("a model ran before the pairing was refused")

    monkeypatch.setattr(artifacts, "reference_outputs", ran)
    monkeypatch.setattr(artifacts, "run_artifact_cells", ran)


def verify(tmp_path: Path, *argv) -> tuple[int, list[dict], str]:
    result = tmp_path / "r.json"
    out = run_here("verify", *map(str, argv), "--no-progress", "--json", str(result))
    rows = json.loads(result.read_text())["results"] if out.returncode in (0, 1) else []
    return out.returncode, rows, out.stderr


def test_a_model_with_two_outputs_of_one_shape_pairs_with_itself(models, tmp_path):
    nets = models / "nets.py"
    code, rows, err = verify(tmp_path, f"{nets}:two", f"{nets}:two", "--trust-code", "--input", "x:Nx6:float32")
    assert code == 0 and rows[0]["verdict"] == "PASS", err  # was ERROR: "output_0 pairs ... in more than one way"
    code, rows, err = verify(tmp_path, models / "two.onnx", models / "two.onnx")
    assert code == 0 and rows[0]["verdict"] == "PASS", err


def test_outputs_in_another_order_are_compared_in_it_and_fail(models, tmp_path):
    nets = models / "nets.py"
    code, rows, err = verify(tmp_path, f"{nets}:two", f"{nets}:swapped", "--trust-code", "--input", "x:Nx6:float32")
    assert code == 1 and rows[0]["verdict"] == "FAIL", err
    code, rows, err = verify(tmp_path, f"{nets}:two", f"{nets}:swapped", "--trust-code", "--input", "x:Nx6:float32",
                             "--pair", "output_0=output_1", "--pair", "output_1=output_0")
    assert code == 0 and rows[0]["verdict"] == "PASS", err
    code, rows, err = verify(tmp_path, models / "two.onnx", models / "tanh-first.onnx")  # by name, in any order
    assert code == 0 and rows[0]["verdict"] == "PASS", err


@pytest.mark.parametrize("other, says", [
    ("extra.onnx", "output y pairs with"),  # an extra output of the same shape: which one is y?
])
def test_an_ambiguous_output_pairing_is_one_line_before_any_model_runs(models, tmp_path, nothing_runs, other, says):
    code, _, err = verify(tmp_path, models / "ref.onnx", models / other)
    assert code == 2 and says in err and "--pair" in err and len(err.strip().splitlines()) == 1, err
    assert "first" in err and "second" in err  # the candidates


def test_an_extra_output_is_said_and_a_missing_one_fails(models, tmp_path):
    code, rows, err = verify(tmp_path, models / "ref.onnx", models / "extra.onnx", "--pair", "y=first")
    assert code == 0 and rows[0]["verdict"] == "PASS", err
    assert "second has no counterpart in the reference: not compared" in rows[0]["reason"]
    code, rows, err = verify(tmp_path, models / "two.onnx", models / "renamed.onnx", "--pair", "y=logits")
    assert code == 1 and rows[0]["verdict"] == "FAIL", err
    assert "t: the target has no output of this name" in rows[0]["reason"]


def test_one_output_fewer_that_could_be_either_is_refused_before_any_model_runs(models, tmp_path, nothing_runs):
    code, _, err = verify(tmp_path, models / "extra.onnx", models / "renamed.onnx")
    assert code == 2 and "gives 1 output and the reference 2" in err and "--pair" in err, err


@pytest.mark.parametrize("pair, says", [
    ("y=first:1,0,2", "y has 2 axes, the permutation 3"),
    ("y=nothing", "has no output 'nothing'"),
    ("why=first", "the reference has no input or output 'why'"),
    ("y=first:0,0", "is not a permutation"),
])
def test_a_pair_that_cannot_be_is_refused_when_read(models, tmp_path, nothing_runs, pair, says):
    code, _, err = verify(tmp_path, models / "ref.onnx", models / "extra.onnx", "--pair", pair)
    assert code == 2 and says in err and len(err.strip().splitlines()) == 1, err


def test_a_layer_map_is_read_when_given_and_needs_locate(models, tmp_path, nothing_runs):
    layer_map = tmp_path / "map.txt"
    layer_map.write_text("fc = dense\n")
    code, _, err = verify(tmp_path, models / "ref.onnx", models / "renamed.onnx", "--layer-map", layer_map)
    assert code == 2 and "add --locate" in err, err
    code, _, err = verify(tmp_path, models / "ref.onnx", models / "renamed.onnx", "--locate",
                          "--layer-map", tmp_path / "missing.txt")
    assert code == 2 and "missing.txt" in err, err
    layer_map.write_text("fc dense\n")
    code, _, err = verify(tmp_path, models / "ref.onnx", models / "renamed.onnx", "--locate", "--layer-map", layer_map)
    assert code == 2 and "expected REFERENCE_LAYER = PORT_LAYER" in err, err
