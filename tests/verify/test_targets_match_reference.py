"""Every (model, target) pair of the registries PASSes at the default tolerance: over several seeds for the
targets that run in-process, over one for the worker-process targets (each conversion there costs seconds to
minutes, e.g. ResNet-50 through onnx2tf).

`make test` runs the fixed subset: every model on every route and target at seed 0, but ResNet-50 only into ONNX
Runtime by each route; the other seeds and ResNet-50's other targets (minutes each, and `make demo` verifies
ResNet-50 in every target) run in the whole suite (`make test-all`)."""

from __future__ import annotations

import pytest

from rosetta.convert.targets import get_target, list_routes, list_targets
from rosetta.frameworks import FRAMEWORKS
from rosetta.models import get_model, list_models
from rosetta.verify.cells import VerifyCell, run_cell
from tests.shared import fixed_subset


def seeds_for(target: str, route: str) -> tuple:
    return (0,) if FRAMEWORKS.get(get_target(target, route).runner).isolation or len(get_target(target, route).chain) > 2 \
        else (0, 1, 2)


CASES = [(m, r, t, s) for r in list_routes() for t in list_targets(r) for m in list_models() for s in seeds_for(t, r)]
# What a route is known not to convert: these must be CANNOT rows whose reason says why, in every target
CANNOT = {("mmdnn", "gru"): "MMdnn cannot convert GRU: MMdnn's PyTorch parser has no converter for onnx::GRU"}


def in_subset(model: str, route: str, target: str, seed: int) -> bool:
    return seed == 0 and (model != "resnet50" or target == "onnxruntime")


@pytest.mark.parametrize("model,route,target,seed", fixed_subset(CASES, in_subset, lambda m, r, t, s: f"{m}-{r}-{t}-seed{s}"))
def test_converted_model_passes(store, references, model, route, target, seed):
    result = run_cell(VerifyCell(model, target, route, seed=seed), store, references)
    if (route, model) in CANNOT:
        assert result.verdict == "CANNOT" and CANNOT[route, model] in result.reason, result.reason
        return
    assert result.verdict == "PASS", result.reason
    for output in result.outputs:
        assert output.within_tolerance == 1.0
        assert output.cosine > 0.999999
        assert output.error_ratio < result.tolerance["multiple"]


@pytest.mark.parametrize("model", list_models())
def test_keras_artifact_has_the_reference_trainable_parameter_count(store, model):
    from rosetta.manifest import Manifest

    target = get_target("keras")
    folder = store.get(get_model(model), 0, target.chain, target.export_options())
    assert Manifest.read(folder).converter["trainable_parameters"] == get_model(model).parameter_count
