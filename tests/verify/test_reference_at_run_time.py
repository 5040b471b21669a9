"""A reference is checked at run time before it is believed (issue 46): every model runs on its own copy of the
inputs, so one that changes them in place (`x.mul_(2)`) cannot make its float32 and float64 runs see different
inputs and inflate its own noise floor; and the reference runs twice, so one that is not deterministic is said,
judged without the floor its noise would inflate, and never PASSes a model by noise."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pytest

from rosetta.verify.compare import compare_outputs
from rosetta.verify.tolerance import TolerancePolicy
from tests.test_cli import run_here

NETS = '''
import torch
from torch import nn


def _linear(seed):
    torch.manual_seed(seed)
    return nn.Linear(6, 4)


class Mutates(nn.Module):
    """Doubles its input in place, then a linear layer."""
    def __init__(self, seed=0):
        super().__init__()
        self.fc = _linear(seed)

    def forward(self, x):
        x.mul_(2)
        return self.fc(x)


class Doubles(nn.Module):
    """The same function without the in-place change."""
    def __init__(self, seed=0, bias=0.0):
        super().__init__()
        self.fc = _linear(seed)
        with torch.no_grad():
            self.fc.bias += bias

    def forward(self, x):
        return self.fc(x * 2)


class Noisy(nn.Module):
    """In eval mode, and still not deterministic: noise added to its output."""
    def __init__(self):
        super().__init__()
        self.fc = _linear(0)

    def forward(self, x):
        y = self.fc(x)
        return y + 1e-3 * torch.randn_like(y)


class SeededNoise(nn.Module):
    """The same noise every run, and yet another function in float64: the noise is drawn in the dtype it runs in."""
    def __init__(self):
        super().__init__()
        self.fc = _linear(0)

    def forward(self, x):
        y = self.fc(x)
        return y + 1e-3 * torch.randn(y.shape, generator=torch.Generator().manual_seed(0), dtype=y.dtype)


def seeded_noise():
    return SeededNoise()


def mutates():
    return Mutates()


def doubles():
    return Doubles()


def other_weights():
    return Doubles(seed=1)


def noisy():
    return Noisy()


def plain():
    return _linear(0)


def bias_off():
    model = _linear(0)
    with torch.no_grad():
        model.bias += 3e-3
    return model
'''


@pytest.fixture(scope="module")
def nets(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("nets") / "nets.py"
    path.write_text(textwrap.dedent(NETS))
    return path


def verify(tmp_path: Path, nets: Path, *names: str) -> tuple[int, list[dict]]:
    result = tmp_path / "r.json"
    out = run_here("verify", *(f"{nets}:{name}" for name in names), "--trust-code", "--input", "x:Nx6:float32",
                   "--no-progress", "--json", str(result))
    assert out.returncode in (0, 1), out.stdout + out.stderr
    return out.returncode, json.loads(result.read_text())["results"]


def test_a_reference_that_changes_its_input_fails_a_wrong_model_and_is_said(nets, tmp_path):
    code, rows = verify(tmp_path, nets, "mutates", "other_weights", "doubles")
    wrong, right = rows
    assert code == 1 and wrong["verdict"] == "FAIL", wrong["reason"]  # PASSed at 2.8x an inflated floor of 1.07
    assert right["verdict"] == "PASS", right["reason"]
    assert wrong["reference"]["changes_inputs"] == ["x"]
    assert "changes its input x in place" in wrong["reason"]
    assert wrong["outputs"][0]["noise_floor"] < 1e-5  # float32's own floor, not the two inputs' difference


def test_a_model_compared_that_changes_its_input_does_not_change_what_the_next_one_sees(nets, tmp_path):
    code, rows = verify(tmp_path, nets, "doubles", "mutates", "other_weights")
    assert [row["verdict"] for row in rows] == ["PASS", "FAIL"], rows
    assert "changes its input x in place" in rows[0]["reason"]
    assert "changes its input" not in rows[1]["reason"]


def test_a_reference_that_is_not_deterministic_never_passes_a_model_by_its_noise(nets, tmp_path):
    code, rows = verify(tmp_path, nets, "plain", "bias_off")
    assert rows[0]["verdict"] == "FAIL"  # the bug can be seen against a deterministic reference
    code, rows = verify(tmp_path, nets, "noisy", "bias_off", "plain", "other_weights")
    near, same, wrong = rows
    assert near["verdict"] == "INCONCLUSIVE" and same["verdict"] == "INCONCLUSIVE", (near["reason"], same["reason"])
    assert "not deterministic" in near["reason"] and "no verdict" in near["reason"]
    assert near["reference"]["run_to_run"]["output"] > 1e-3
    assert wrong["verdict"] == "FAIL" and "more than its noise explains" in wrong["reason"]
    assert not near["tolerance"]["float64_reference"]  # its float64 difference holds its noise: not the floor


def test_a_reference_whose_float64_run_draws_other_noise_never_passes_a_model_by_it(nets, tmp_path):
    """Deterministic run to run, so only the float64 run tells: its floor (4.6e-3 of the output's scale) is more
    than float32 explains, and the leaf modules' check cannot vouch for the code of the forward between them."""
    code, rows = verify(tmp_path, nets, "seeded_noise", "bias_off", "plain")
    assert [row["verdict"] for row in rows] == ["INCONCLUSIVE", "INCONCLUSIVE"], [row["reason"] for row in rows]
    assert rows[0]["reference"]["run_to_run"]["output"] == 0.0
    assert "the reference is in doubt" in rows[0]["reason"]


def test_a_deterministic_reference_says_so():
    from rosetta.verify.artifacts import run_to_run

    same = {"y": np.arange(4.0), "n": np.array([np.nan, 1.0]), "i": np.array([1, 2])}
    assert run_to_run(same, {k: v.copy() for k, v in same.items()}) == {"y": 0.0, "n": 0.0, "i": 0.0}
    other = run_to_run(same, {"y": np.arange(4.0) + [0, 0, 0.5, 0], "n": np.array([1.0, 1.0]), "i": np.array([1, 3])})
    assert other == {"y": 0.5, "n": float("inf"), "i": 1.0}


@pytest.mark.parametrize("error, spread, verdict", [
    (0.0, 1e-9, "PASS"),  # noise under the tolerance: the verdict stands
    (0.0, 1e-2, "INCONCLUSIVE"),  # matches one run, but the runs disagree beyond the tolerance
    (3e-3, 1e-3, "INCONCLUSIVE"),  # an error the noise explains
    (1.0, 1e-3, "FAIL"),  # an error far beyond it
])
def test_the_run_to_run_difference_decides_what_the_tolerance_cannot(error, spread, verdict):
    rng = np.random.default_rng(0)
    reference = rng.standard_normal((8, 4)).astype(np.float32)
    target = reference + np.float32(error)
    policy = TolerancePolicy(multiple=40.0, float64_reference=False, run_to_run=(("y", spread),))
    _, found, reason = compare_outputs({"y": target}, {"y": reference}, {"y": reference}, policy)
    assert found == verdict, reason


def test_the_api_checks_the_reference_too(nets):
    import importlib.util

    import rosetta

    spec = importlib.util.spec_from_file_location("rosetta_test_nets", nets)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    report = rosetta.verify(module.mutates(), module.other_weights(), inputs=["x:Nx6:float32"])
    assert [row.verdict for row in report.rows] == ["FAIL"]


def test_a_difference_under_one_ulp_at_scale_keeps_the_calibrated_rule():
    """A reduction summed in another order on a second run cannot inflate the floor by more than float32 resolves:
    the float64 rule stays; beyond it, the reference is treated as not deterministic."""
    from rosetta.verify.artifacts import ReferenceOutputs

    ulp = float(np.finfo(np.float32).eps) * 4.0  # at the output's scale, 4
    outputs = {"y": np.array([[4.0, -1.0]], np.float32)}
    for spread, noisy in ((0.5 * ulp, False), (100 * ulp, True)):
        reference = ReferenceOutputs({}, outputs, {"y": outputs["y"].astype(np.float64)},
                                     about={"run_to_run": {"y": spread}})
        policy = reference.policy(TolerancePolicy(), False)
        assert policy.float64_reference is not noisy and bool(policy.run_to_run) is noisy
