"""The .keras artifacts use built-in layers only, so they run, and verify, on Keras' JAX backend too. `make test`
runs the CNN and the GRU; ResNet-50 (the same layers, more of them, half a minute) runs in `make test-all`."""

from __future__ import annotations

import pytest

from rosetta.models import list_models
from rosetta.verify.cells import VerifyCell, run_cell
from tests.shared import fixed_subset


@pytest.mark.parametrize("model", fixed_subset(list_models(), lambda model: model != "resnet50"))
def test_keras_artifact_passes_on_the_jax_backend(store, references, model, monkeypatch):
    monkeypatch.setenv("KERAS_BACKEND", "jax")  # inherited by the worker that loads and runs the artifact
    result = run_cell(VerifyCell(model, "keras"), store, references)
    assert result.verdict == "PASS", result.reason
    assert result.framework_version.endswith("(jax backend)")
