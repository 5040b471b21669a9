"""The trainer interface and the one loop that drives every trainer, in-process or in a worker.

A trainer owns a model in one framework, in train mode, with its optimiser: step(feeds, labels) runs one
optimiser step and returns that step's loss (computed before the update, as every framework reports it);
parameters() returns every trainable value. Parameters are compared as sorted value lists: a conversion
may lay a weight out differently (Keras HWIO kernels, MXNet's fused RNN vector, gates reordered) but must
hold the same values, so the sorted lists agree element for element when the weights agree.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from pathlib import Path
from typing import ClassVar

import numpy as np

from rosetta.errors import RosettaError

REFERENCE = "-"  # the folder argument that means "the PyTorch reference model itself" (model and seed in options)
PRECISIONS = ("float32", "float64")
DEVICES = ("cpu", "cuda")


class Trainer(ABC):
    framework: ClassVar[str]

    @classmethod
    @abstractmethod
    def version(cls) -> str:
        """The version of the framework this trainer drives."""

    @abstractmethod
    def step(self, feeds: dict[str, np.ndarray], labels: np.ndarray) -> float:
        """One optimiser step on one batch; the loss of that batch before the update."""

    @abstractmethod
    def parameters(self) -> np.ndarray:
        """Every trainable value, flattened and concatenated, as float64."""

    def synchronize(self) -> None:
        """Wait for the device (CUDA) so that a clock read after it times finished work."""

    def peak_device_mb(self) -> float | None:
        """Peak device memory in MiB where the framework reports it."""
        return None

    def settings(self) -> dict:
        """The framework settings that shape its speed (threads, autotune, compilation), recorded with results."""
        return {}


def check_options(precision: str, device: str) -> None:
    if precision not in PRECISIONS:
        raise RosettaError(f"precision {precision!r} is not one of {', '.join(PRECISIONS)}")
    if device not in DEVICES:
        raise RosettaError(f"device {device!r} is not one of {', '.join(DEVICES)}")


def batches_to_arrays(batches: list[tuple[dict[str, np.ndarray], np.ndarray]]) -> dict[str, np.ndarray]:
    """A list of (feeds, labels) as one flat dict of arrays, for an .npz file: 'STEP:NAME' and 'STEP:'."""
    arrays = {}
    for step, (feeds, labels) in enumerate(batches):
        arrays.update({f"{step}:{name}": value for name, value in feeds.items()})
        arrays[f"{step}:"] = labels
    return arrays


def arrays_to_batches(arrays: dict[str, np.ndarray]) -> list[tuple[dict[str, np.ndarray], np.ndarray]]:
    steps = sorted({int(key.partition(":")[0]) for key in arrays})
    return [({key.partition(":")[2]: value for key, value in arrays.items()
              if key.startswith(f"{step}:") and key != f"{step}:"}, arrays[f"{step}:"]) for step in steps]


def build_trainer(framework: str, folder: str | Path, options: dict) -> Trainer:
    """The trainer for an artifact folder, or for the PyTorch reference model when folder is REFERENCE."""
    options = dict(options)
    if str(folder) == REFERENCE:
        from rosetta.models import get_model
        from rosetta.train.torch import TorchTrainer

        spec = get_model(options.pop("model"))
        return TorchTrainer(spec.build(options.pop("seed", 0)), [t.name for t in spec.inputs], **options)
    from rosetta.convert.manifest import Manifest
    from rosetta.frameworks import trainer_class

    return trainer_class(framework)(Path(folder), Manifest.read(folder), **options)


def run_training(framework: str, folder: str | Path, batches: list, options: dict, warmup: int = 0,
                 keep_parameters: bool = True, isolated: bool | None = None) -> dict:
    """Train on `batches` (the first `warmup` untimed), each step timed between device synchronisations.

    Returns losses and step times of the timed steps, the final parameters (keep_parameters), the framework
    version and settings, and peak memory. Runs in a worker process when the framework is isolated, or when
    `isolated` is True (benchmarks: every framework's peak memory is then its own)."""
    from rosetta.frameworks import FRAMEWORKS
    from rosetta.worker import IN_WORKER, train_in_worker

    if isolated is None:
        isolated = FRAMEWORKS.get(framework, label=f"{framework!r}").isolated
    if isolated and not os.environ.get(IN_WORKER):
        return train_in_worker(framework, folder, batches, {**options, "warmup": warmup,
                                                            "keep_parameters": keep_parameters})
    from rosetta.bench.timing import time_steps

    if len(batches) <= warmup:
        raise RosettaError(f"{len(batches)} batches leave no timed step after {warmup} warm-up steps")
    trainer = build_trainer(framework, folder, options)
    timing, losses = time_steps(lambda index: trainer.step(*batches[index]), len(batches) - warmup, warmup,
                                trainer.synchronize)
    result = {"losses": np.asarray(losses, dtype=np.float64), "step_seconds": timing.to_json(),
              "version": trainer.version(), "settings": trainer.settings(),
              "peak_device_mb": trainer.peak_device_mb()}
    if keep_parameters:
        result["parameters"] = trainer.parameters()
    return result
