"""Deliberately wrong artifacts, registered like models and targets, so that every check rosetta makes is shown
to say FAIL when it should. Tests iterate over this registry; scripts/calibrate_tolerance.py measures how far
each fault sits above the tolerance. A fault builds an artifact folder for its (model, target) that a correct
conversion would have produced, but with one specific mistake in it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from rosetta.convert.store import ArtifactStore
from rosetta.convert.targets import get_target
from rosetta.models import get_model
from rosetta.registry import Registry
from rosetta.models.variants import build_cnn_nhwc_flatten, perturb_parameter

PERTURBED_TENSOR = "layer3.2.conv2.weight"
PERTURBATION = 1e-4


@dataclass(frozen=True)
class Fault:
    name: str
    model: str
    target: str
    description: str
    build: Callable[[ArtifactStore, int, dict], Path]  # (store, seed, export options) -> artifact folder
    route: str = "onnx"


FAULTS: Registry[Fault] = Registry("fault", key=lambda fault: fault.name)
register_fault = FAULTS.register


def list_faults() -> list[Fault]:
    return list(FAULTS)


def get_fault(name: str) -> Fault:
    return FAULTS.get(name)


def _chain(fault_model: str, target: str, route: str = "onnx") -> tuple:
    return get_target(target, route).chain


def _dropout_active(store: ArtifactStore, seed: int, options: dict) -> Path:
    spec = get_model("cnn")
    return store.get(spec, seed, _chain("cnn", "onnxruntime"), {**options, "training": "train"})


def _perturbed_weight(store: ArtifactStore, seed: int, options: dict) -> Path:
    spec = get_model("resnet50")
    module = perturb_parameter(spec.build(seed), PERTURBED_TENSOR, PERTURBATION, seed)
    return store.get(spec, seed, _chain("resnet50", "onnxruntime"), options, module=module,
                     tag=f"perturbed-{PERTURBATION:g}")


def _nhwc_flatten(store: ArtifactStore, seed: int, options: dict) -> Path:
    spec = get_model("cnn")
    return store.get(spec, seed, _chain("cnn", "onnxruntime"), options, module=build_cnn_nhwc_flatten(seed),
                     tag="nhwc-flatten")


register_fault(Fault("cnn-dropout-active", "cnn", "onnxruntime",
                     "exported as a training-mode graph: Dropout stays active at inference", _dropout_active))
register_fault(Fault("resnet50-weight-perturbed", "resnet50", "onnxruntime",
                     f"one weight tensor ({PERTURBED_TENSOR}) perturbed by {PERTURBATION:g} relative",
                     _perturbed_weight))
register_fault(Fault("cnn-nhwc-flatten", "cnn", "onnxruntime",
                     "flattened in NHWC order before the first dense layer", _nhwc_flatten))
