"""Deliberately wrong artifacts, registered like models and targets, so that every check rosetta makes is shown
to say FAIL when it should. Tests iterate over this registry; scripts/calibrate_tolerance.py measures how far
each fault sits above the tolerance. A fault builds an artifact folder for its (model, target) that a correct
conversion would have produced, but with one specific mistake in it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from rosetta.convert.store import ArtifactStore
from rosetta.convert.targets import Target, list_targets
from rosetta.models import get_model
from rosetta.registry import Registry
from rosetta.models.variants import (build_cnn_nhwc_flatten, perturb_parameter, swap_gru_gates,
                                     transpose_gru_recurrent_kernels)

PERTURBED_TENSOR = "layer3.2.conv2.weight"
PERTURBATION = 1e-4


@dataclass(frozen=True)
class Fault:
    name: str
    model: str
    description: str
    # (store, seed, target, export options) -> artifact folder for that target
    build: Callable[[ArtifactStore, int, Target, dict], Path]
    targets: tuple = ()  # target names it applies to; empty: every target of the route
    route: str = "onnx"

    def applies_to(self) -> list[str]:
        return list(self.targets) or list_targets(self.route)


FAULTS: Registry[Fault] = Registry("fault", key=lambda fault: fault.name)
register_fault = FAULTS.register


def list_faults() -> list[Fault]:
    return list(FAULTS)


def get_fault(name: str) -> Fault:
    return FAULTS.get(name)


def fault_cases(route: str = "onnx") -> list[tuple[Fault, str]]:
    """Every (fault, target) pair to test: each target gets at least one wrong model through its converter."""
    return [(fault, target) for fault in FAULTS if fault.route == route for target in fault.applies_to()]


def _variant(model: str, name: str, make: Callable):
    """A fault that is a wrong variant of a reference model, carried through the target's own converters."""
    def build(store: ArtifactStore, seed: int, target: Target, options: dict) -> Path:
        spec = get_model(model)
        return store.get(spec, seed, target.chain, target.export_options(options), module=make(seed), tag=name)
    return build


def _dropout_active(store: ArtifactStore, seed: int, target: Target, options: dict) -> Path:
    return store.get(get_model("cnn"), seed, target.chain, {**target.export_options(options), "training": "train"})


register_fault(Fault("cnn-dropout-active", "cnn",
                     "exported as a training-mode graph: Dropout stays active at inference", _dropout_active,
                     targets=("onnxruntime",)))
register_fault(Fault("resnet50-weight-perturbed", "resnet50",
                     f"one weight tensor ({PERTURBED_TENSOR}) perturbed by {PERTURBATION:g} relative",
                     _variant("resnet50", "weight-perturbed", lambda seed: perturb_parameter(
                         get_model("resnet50").build(seed), PERTURBED_TENSOR, PERTURBATION, seed)),
                     targets=("onnxruntime",)))
register_fault(Fault("cnn-nhwc-flatten", "cnn", "flattened in NHWC order before the first dense layer",
                     _variant("cnn", "nhwc-flatten", build_cnn_nhwc_flatten)))
register_fault(Fault("gru-gates-swapped", "gru", "GRU reset and update gates swapped (gate order mix-up)",
                     _variant("gru", "gates-swapped", lambda seed: swap_gru_gates(get_model("gru").build(seed)))))
register_fault(Fault("gru-recurrent-transposed", "gru", "GRU recurrent kernels transposed (in/out layout mix-up)",
                     _variant("gru", "recurrent-transposed",
                              lambda seed: transpose_gru_recurrent_kernels(get_model("gru").build(seed)))))
