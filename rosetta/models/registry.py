"""ModelSpec and the registry of reference models: code and tests iterate over it instead of naming models."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Callable

from rosetta.errors import RosettaError
from rosetta.registry import Registry
from rosetta.settings import listed


@dataclass(frozen=True)
class TensorSpec:
    """One input or output: name, shape with None for the (dynamic) batch axis, dtype, and input value range."""

    name: str
    shape: tuple[int | None, ...]
    dtype: str
    low: float | None = None
    high: float | None = None

    def concrete_shape(self, batch: int) -> tuple[int, ...]:
        return tuple(batch if d is None else d for d in self.shape)

    def to_json(self) -> dict:
        return asdict(self)


def signature_of(specs) -> list[dict]:
    """TensorSpecs -> the manifest's signature entries (None for the batch axis)."""
    return [{"name": spec.name, "shape": list(spec.shape), "dtype": spec.dtype} for spec in specs]


@dataclass(frozen=True)
class TrainingSpec:
    """The DLF benchmark's training hyper-parameters for a model (../shared/reference/dlf-benchmarks.md)."""

    epochs: int
    batch: int
    optimizer: str
    optimizer_settings: dict = field(default_factory=dict)
    loss: str = "cross_entropy"
    dlf: bool = True  # False: not a DLF training workload, used by the training-equivalence check only


@dataclass(frozen=True)
class ModelSpec:
    """A reference model: how to build it (seeded), what it takes and returns, and how DLF trains it."""

    name: str
    description: str
    factory: Callable[..., object]  # factory(seed) -> torch.nn.Module in eval mode
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    parameter_count: int
    training: TrainingSpec | None = None

    def build(self, seed: int = 0):
        """The model with seeded weights, in eval mode: same seed, bit-identical weights."""
        return self.factory(seed)

    def to_json(self) -> dict:
        return {"name": self.name, "description": self.description, "parameter_count": self.parameter_count,
                "inputs": [t.to_json() for t in self.inputs], "outputs": [t.to_json() for t in self.outputs],
                "training": asdict(self.training) if self.training else None}


MODELS: Registry[ModelSpec] = Registry("model", key=lambda spec: spec.name, hint="(see `rosetta models`)")
register_model = MODELS.register
REFERENCE_MODULES = ("rosetta.models.cnn", "rosetta.models.gru", "rosetta.models.resnet50")  # register on import


def _registered() -> Registry[ModelSpec]:
    import importlib

    for module in REFERENCE_MODULES:
        importlib.import_module(module)
    return MODELS


def list_models() -> list[str]:
    return _registered().keys()


def get_model(name: str) -> ModelSpec:
    return _registered().get(name)


def parse_model_list(text: str | Sequence[str]) -> list[ModelSpec]:
    """'cnn,gru', ['cnn', 'gru'] or 'all' -> specs, with a clear error for an unknown name."""
    names = list_models() if listed(text) == ["all"] else listed(text)
    if not names:
        raise RosettaError("no model given; pass models=NAME[,NAME...] or models=all")
    return [get_model(n) for n in names]
