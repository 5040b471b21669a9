"""Every (model, target) pair of the registries, over several seeds, PASSes at the default tolerance."""

from __future__ import annotations

import pytest

from rosetta.convert.targets import list_routes, list_targets
from rosetta.models import list_models
from rosetta.verify.cells import VerifyCell, run_cell

SEEDS = (0, 1, 2)
PAIRS = [(m, r, t) for r in list_routes() for t in list_targets(r) for m in list_models()]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("model,route,target", PAIRS)
def test_converted_model_passes(store, references, model, route, target, seed):
    result = run_cell(VerifyCell(model, target, route, seed=seed), store, references)
    assert result.verdict == "PASS", result.reason
    for output in result.outputs:
        assert output.within_tolerance == 1.0
        assert output.cosine > 0.999999
        assert output.error_ratio < result.tolerance["multiple"]
