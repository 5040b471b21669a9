"""`via` takes several routes as the README's `make demo` gives them ("onnx,mmdnn"), as `targets` does:
the settings change once passed the whole string on as one route ("unknown route 'onnx,mmdnn'", make demo exit 2)."""

from __future__ import annotations

import importlib

import pytest

import rosetta

matrix = importlib.import_module("rosetta.verify.matrix")  # rosetta.verify is the public function


class Planned(Exception):
    """Raised in place of the work: the routes and targets the API planned."""


@pytest.mark.parametrize("via, routes", [("onnx,mmdnn", ["onnx", "mmdnn"]), ("mmdnn,onnx", ["mmdnn", "onnx"]),
                                         ("mmdnn", ["mmdnn"])])
def test_via_is_split_into_routes_like_targets(monkeypatch, via, routes):
    def planned(models, targets, given_routes, *args, **kwargs):
        raise Planned(list(targets), list(given_routes))

    monkeypatch.setattr(matrix, "verify_reference_models", planned)
    with pytest.raises(Planned) as raised:
        rosetta.verify("cnn", targets="onnxruntime,torch", via=via)
    assert raised.value.args == (["onnxruntime", "torch"], routes)
