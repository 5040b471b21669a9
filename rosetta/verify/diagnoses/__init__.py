"""Porting bugs, named: a small registry of diagnoses, one module per bug class, each reading the first
diverging pair of layers (verify.port_locate) in their canonical form (frameworks.layers) and saying what differs
in plain words ("epsilon 1e-3 here, 1e-5 in the reference"), or nothing. A class is added as a file here, with
its test in tests/verify/test_diagnoses.py."""

from __future__ import annotations

import importlib
from typing import Callable

DIAGNOSES: list[tuple[str, Callable]] = []  # (name, function(reference, port, context) -> str | None), in order
MODULES = ("flatten_order", "kernel_layout", "padding", "epsilon", "gru_gates", "lstm_bias", "momentum", "activation",
           "parameters")  # the specific classes first; `parameters` says which tensor differs, with figures


def diagnosis(name: str):
    def register(function: Callable) -> Callable:
        DIAGNOSES.append((name, function))
        return function
    return register


def diagnose(reference, port, context: dict) -> str:
    """What the first diagnosis that recognises the pair says ("" where none does)."""
    if not DIAGNOSES:
        for module in MODULES:
            importlib.import_module(f"rosetta.verify.diagnoses.{module}")
    for _, function in DIAGNOSES:
        found = function(reference, port, context)
        if found:
            return found
    return ""


def close(a, b, rtol: float = 1e-5) -> bool:
    """Two parameter tensors equal as float32 copies are (shapes first)."""
    import numpy as np

    if a is None or b is None or np.shape(a) != np.shape(b):
        return False
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return bool(np.allclose(a, b, rtol=rtol, atol=rtol * max(float(np.max(np.abs(a), initial=0.0)), 1e-12)))
