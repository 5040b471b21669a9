"""Porting bugs, named: a small registry of diagnoses, one module per bug class, each reading the first
diverging pair of layers (verify.port_locate) in their canonical form (frameworks.layers) and saying what differs
in plain words ("epsilon 1e-3 here, 1e-5 in the reference"), or nothing. A class is added as a file here, with
its test in tests/verify/test_diagnoses.py.

Where the two models' layers do not line up one to one, the pair is the end of a *segment*: the layers between
two matched tensors, context["segment"] = (reference layers, port layers) in execution order (conv+bn+relu
modules against one Conv2D with the BatchNorm folded in, a transformer block's modules against one Keras layer).
`segment()` gives both sides, the end pair alone where a caller gives none."""

from __future__ import annotations

import importlib
from typing import Callable

DIAGNOSES: list[tuple[str, Callable]] = []  # (name, function(reference, port, context) -> str | None), in order
MODULES = ("stride_placement", "folded_batchnorm", "attention", "rotary", "causal_mask", "flatten_order",
           "kernel_layout", "average_padding", "padding", "group_count", "epsilon", "bidirectional", "gru_gates",
           "lstm_bias", "momentum", "activation", "parameters", "unmatched_tensors")
# the specific classes first; `parameters` says which tensor of the end pair differs, `unmatched_tensors` which
# tensor of the segment matches none of the reference's (diagnoses.matching), with figures
CONTAINERS = ("block", "other")  # the kinds of a layer that may hold others (a Keras block, a PyTorch module)


def diagnosis(name: str):
    def register(function: Callable) -> Callable:
        DIAGNOSES.append((name, function))
        return function
    return register


def diagnose(reference, port, context: dict) -> str:
    """What the first diagnosis that recognises the pair says ("" where none does)."""
    for module in MODULES:  # every one (imported once): a helper may have imported some of them already
        importlib.import_module(f"rosetta.verify.diagnoses.{module}")
    module_of = lambda function: function.__module__.rsplit(".", 1)[-1]  # noqa: E731
    rank = lambda entry: MODULES.index(module_of(entry[1])) if module_of(entry[1]) in MODULES else len(MODULES)  # noqa: E731
    for _, function in sorted(DIAGNOSES, key=rank):  # in MODULES' order, whichever was imported first
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


def segment(reference, port, context: dict) -> tuple[list, list]:
    """(reference layers, port layers) of the diverging segment, the end pair alone for callers that give none."""
    found = context.get("segment")
    if not found:
        return [reference], [port]
    return list(found[0]) or [reference], list(found[1]) or [port]


def innermost(layers: list) -> list:
    """The layers that hold no other layer of the list: a block ("block_0", or PyTorch's "blocks.0") traced next
    to its sublayers ("block_0/norm1") is read through them, so nothing is counted twice. A Conv2D's fused
    activation ("conv2/activation") does not make the conv a container: only a block's or unknown layer's kind
    does."""
    names = [layer.name for layer in layers]
    return [layer for layer in layers
            if layer.kind not in CONTAINERS
            or not any(other.startswith((layer.name + "/", layer.name + ".")) for other in names)]


def found_in(config, wanted: Callable[[str], bool], path: str = "") -> list[tuple[str, object]]:
    """(key path, value) of every setting whose key `wanted` accepts, anywhere in nested dicts and lists (a block's
    get_config holds its sublayers' settings under its own names: layer_norm_epsilon, norm_epsilon, ...)."""
    found = []
    if isinstance(config, dict):
        for key, value in config.items():
            where = f"{path}.{key}" if path else str(key)
            if wanted(str(key)) and not isinstance(value, (dict, list, tuple)):
                found.append((where, value))
            else:
                found.extend(found_in(value, wanted, where))
    elif isinstance(config, (list, tuple)):
        for index, value in enumerate(config):
            found.extend(found_in(value, wanted, f"{path}[{index}]"))
    return found
