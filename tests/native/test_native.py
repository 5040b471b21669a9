"""Native baselines: every registered hand-written model builds, runs in its framework's runner with the
reference's inputs and output shape, and, where it carries the reference's weights, is verified against the
reference by rosetta's own verdict, which says FAIL when a weight is mapped wrongly."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rosetta.execution import run_job
from rosetta.frameworks import isolation, load_runner
from rosetta.manifest import Manifest
from rosetta.models import get_model
from rosetta.models.inputs import generate_inputs
from rosetta.native import NATIVE, REFERENCE_WEIGHTS, native_folder
from rosetta.verify.cells import VerifyCell, run_cell
from rosetta.verify.faults import _keras_flatten_order_dropped, _keras_gru_gates_swapped


def build(store, model: str, framework: str) -> dict:
    argument = {"root": str(store.root), "model": model, "framework": framework, "seed": 0}
    return run_job("rosetta.bench.run:native_job", argument, isolation(framework), f"native {framework} {model}")


@pytest.mark.parametrize("native", list(NATIVE), ids=lambda native: f"{native.model}-{native.framework}")
def test_native_model_runs_and_matches_the_reference_where_it_has_its_weights(native, store):
    built = build(store, native.model, native.framework)
    assert "error" not in built, built
    folder = Path(built["folder"])
    assert folder == native_folder(store.root, native)
    manifest = Manifest.read(folder)
    assert manifest.source == {"model": native.model, "seed": 0, "native": native.framework}
    assert manifest.sha256 == manifest.digest(folder)
    spec = get_model(native.model)
    outputs = load_runner(native.framework, folder).predict(generate_inputs(spec.inputs, 2, 1))
    (value,) = outputs.values()
    assert value.shape == (2, *spec.outputs[0].shape[1:]) and np.isfinite(value).all()
    if native.weights == REFERENCE_WEIGHTS:
        assert built["verified"]["verdict"] == "PASS", built["verified"]
        assert built["verified"]["error_ratio"] < 10
    else:
        assert built["verified"] is None


@pytest.mark.parametrize("model, fault", [("gru", _keras_gru_gates_swapped), ("cnn", _keras_flatten_order_dropped)],
                         ids=["gru-gates-swapped", "cnn-flatten-order"])
def test_a_native_model_with_a_weight_mapped_wrongly_fails_verification(model, fault, store):
    good = Path(build(store, model, "keras")["folder"])
    wrong = store.derived(good, fault.__name__.strip("_"), fault)
    result = run_cell(VerifyCell(model, "keras"), store=None, artifact=wrong)
    assert result.verdict == "FAIL", result.reason


def test_naming_a_native_model_imports_no_framework():
    """bench names native folders in its parent process, which must not import TensorFlow or MXNet."""
    import subprocess
    import sys

    code = ("import sys; from rosetta.native import NATIVE, native_folder; [native_folder('/tmp', n) for n in NATIVE]; "
            "print(sorted(m for m in ('tensorflow', 'mxnet', 'keras', 'jax') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
