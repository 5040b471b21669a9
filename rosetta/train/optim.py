"""What an optimiser and a loss compute, independent of any framework, and the data they train on.

Conventions that differ between frameworks and are bridged by the trainers:
- SGD momentum. PyTorch: v = m*v + g, w -= lr*v. Keras and MXNet: v = m*v - lr*g, w += v. Identical for a
  constant learning rate ("plain" momentum); neither is "unit gain" (v = m*v + (1-m)*g) nor Nesterov.
- Adam epsilon. PyTorch adds eps to the bias-corrected sqrt(v_hat); Keras and MXNet add it to sqrt(v)
  before the bias correction ("epsilon hat"), so their eps=1e-8 is PyTorch's eps*sqrt(1-beta2^t), ~3e-7 at
  step 1. `epsilon="torch"` asks for PyTorch's placement everywhere (Keras and MXNet get a small optimiser
  subclass); `epsilon="hat"` is the other placement, kept as a seeded mismatch.
- BatchNorm momentum. PyTorch 0.1 means running = 0.9*running + 0.1*batch; ONNX, Keras and MXNet write the
  same rule as momentum 0.9. The conversions carry ONNX's value, so no optimiser setting is involved.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

import numpy as np

from rosetta.errors import RosettaError
from rosetta.models.inputs import generate_inputs

LOSSES = ("cross_entropy", "mse")  # cross entropy on logits with integer labels; mean squared error
EPSILON_PLACEMENTS = ("torch", "hat")


@dataclass(frozen=True)
class OptimizerSpec:
    name: str  # "sgd" or "adam"
    lr: float
    momentum: float = 0.0
    nesterov: bool = False
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    epsilon: str = "torch"  # where Adam's eps goes: see the module docstring

    def __post_init__(self) -> None:
        if self.name not in ("sgd", "adam"):
            raise RosettaError(f"unknown optimizer {self.name!r}; rosetta maps 'sgd' and 'adam'")
        if self.epsilon not in EPSILON_PLACEMENTS:
            raise RosettaError(f"unknown epsilon placement {self.epsilon!r}; choose from {EPSILON_PLACEMENTS}")

    @classmethod
    def from_training(cls, training) -> "OptimizerSpec":
        settings = dict(training.optimizer_settings)
        if "betas" in settings:
            settings["betas"] = tuple(settings["betas"])
        return cls(name=training.optimizer, **settings)

    def with_changes(self, **changes) -> "OptimizerSpec":
        return replace(self, **changes)

    def to_json(self) -> dict:
        return {**asdict(self), "betas": list(self.betas)}

    @classmethod
    def from_json(cls, data: dict) -> "OptimizerSpec":
        return cls(**{**data, "betas": tuple(data.get("betas", (0.9, 0.999)))})


def training_options(spec, precision: str = "float32", threads: int = 0, device: str = "cpu",
                     changes: tuple = ()) -> dict:
    """A trainer's options for a reference model: its DLF optimiser (with `changes`, for seeded mismatches),
    loss, precision, threads and device, as JSON-able values (they cross to worker processes)."""
    optimizer = OptimizerSpec.from_training(spec.training).with_changes(**dict(changes))
    return {"optimizer": optimizer.to_json(), "loss": spec.training.loss, "precision": precision,
            "threads": threads, "device": device}


def label_spec(spec) -> tuple[str, tuple[int, ...]]:
    """What the loss compares the model's (single) output with: ('classes', (n,)) or ('targets', shape)."""
    output = spec.outputs[0]
    if spec.training.loss == "cross_entropy":
        return "classes", (output.shape[-1],)
    return "targets", tuple(d for d in output.shape[1:])


def synthetic_labels(spec, batch: int, seed: int) -> np.ndarray:
    """Seeded labels for one batch: class indices (int64) for cross entropy, float32 targets for mse."""
    rng = np.random.default_rng(10_000 + seed)
    kind, shape = label_spec(spec)
    if kind == "classes":
        return rng.integers(0, shape[0], batch, dtype=np.int64)
    return rng.standard_normal((batch, *shape)).astype(np.float32)


def training_batches(spec, steps: int, batch: int, seed: int) -> list[tuple[dict[str, np.ndarray], np.ndarray]]:
    """`steps` seeded (feeds, labels) batches for the training-equivalence check (different data each step)."""
    return [(generate_inputs(spec.inputs, batch, seed * 1000 + step + 1), synthetic_labels(spec, batch, seed * 1000 + step))
            for step in range(steps)]
