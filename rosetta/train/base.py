"""The trainer interface and the one loop that drives every trainer, in-process or in a worker.

A trainer owns a model in one framework, in train mode, with its optimiser: step(feeds, labels) runs one
optimiser step and returns that step's loss (computed before the update, as every framework reports it);
parameters() returns every trainable value, statistics() every BatchNorm running mean and variance and
optimizer_state() the optimiser's buffers in PyTorch's convention, dropout_rates() the rate of every Dropout
(which every trainer turns off: masks cannot match). Parameters are compared as sorted value lists: a conversion
may lay a weight out differently (Keras HWIO kernels, MXNet's fused RNN vector, gates reordered) but must
hold the same values, so the sorted lists agree element for element when the weights agree.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import ClassVar

import numpy as np

from rosetta.errors import RosettaError
from rosetta.execution import Job, execute
from rosetta.frameworks import trainer_class
from rosetta.frameworks.speed import Speed
from rosetta.manifest import Manifest
from rosetta.timing import HostClock, time_steps, time_window

REFERENCE = "-"  # the folder argument that means "the PyTorch reference model itself" (model and seed in options)
PRECISIONS = ("float32", "float64")
DEVICES = ("cpu", "cuda")


class Trainer(ABC):
    framework: ClassVar[str]
    speed: Speed = Speed()  # the speed variant it runs (rosetta.frameworks.speed); a trainer sets its own

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

    # how the framework's BatchNorm updates its running variance: with the unbiased batch variance (PyTorch,
    # n/(n-1) x the biased one) or the biased one (Keras, MXNet): a convention of the framework, not the port's
    biased_running_variance = False

    def statistics(self) -> np.ndarray:
        """Every BatchNorm running mean and variance (state that trains without gradients), as float64."""
        return np.zeros(0)

    def optimizer_state(self) -> np.ndarray | None:
        """The optimiser's per-value state in PyTorch's convention (SGD's momentum buffer, Adam's first and
        second moments), flattened as float64; None where the framework does not expose it."""
        return None

    def dropout_rates(self) -> list[float] | None:
        """The drop probability of every Dropout layer the model holds, as the framework means it, read before
        the trainer turns dropout off (its random masks cannot match across frameworks); None where unknown."""
        return None

    def synchronize(self) -> None:
        """Wait for the device (CUDA) so that a clock read after it times finished work."""

    # --resident-data (a trainer that lacks it refuses it when built: Speed.require)
    def stage(self, batches: list):
        """The run's (feeds, labels) batches staged once where the steps read them (on the device)."""
        raise NotImplementedError

    def staged_step(self, staged, index: int):
        """One optimiser step on staged batch `index`; its loss left on the device (see loss_values)."""
        raise NotImplementedError

    def loss_values(self, losses: list) -> list[float]:
        """staged_step's losses read back to the host, once, after the timed steps."""
        raise NotImplementedError

    def clock(self):
        """The clock of a window of staged steps (rosetta.timing.time_window): the host's, unless the device has
        one."""
        return HostClock()

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


def build_trainer(framework: str, folder: str | Path, options: dict) -> Trainer:
    """The trainer for an artifact folder, or for the PyTorch reference model when folder is REFERENCE."""
    options = dict(options)
    if str(folder) == REFERENCE:  # the torch framework's trainer builds the reference model (rosetta.models)
        return trainer_class("torch").reference(options.pop("model"), options.pop("seed", 0), **options)
    return trainer_class(framework)(Path(folder), Manifest.read(folder), **options)


def run_training(framework: str, folder: str | Path, batches: list, options: dict, warmup: int = 0,
                 keep_parameters: bool = True) -> dict:
    """Train on `batches` (the first `warmup` untimed), each step timed between device synchronisations.

    Returns losses and step times of the timed steps, the final parameters, BatchNorm statistics and optimiser
    state (keep_parameters), the framework
    version and settings, and peak memory. Runs where the framework's isolation says (rosetta.execution):
    in its worker, `peak_rss_mb` is the worker's peak during this training (None in this process)."""
    from rosetta.frameworks import isolation

    argument = {"framework": framework, "folder": str(folder), "batches": batches, "options": options,
                "warmup": warmup, "keep_parameters": keep_parameters}
    outcome = execute(Job("rosetta.train.base:train_job", argument, isolation(framework), f"{framework} training",
                          settings={"threads": options.get("threads", 0)}))
    return {**outcome.result, "peak_rss_mb": outcome.peak_rss_mb}


def train_job(argument: dict) -> dict:
    """Job (rosetta.execution): run_training's work, in the process it runs in."""
    framework, folder, batches = argument["framework"], argument["folder"], argument["batches"]
    warmup, options = argument["warmup"], argument["options"]
    if len(batches) <= warmup:
        raise RosettaError(f"{len(batches)} batches leave no timed step after {warmup} warm-up steps")
    trainer = build_trainer(framework, folder, options)
    if trainer.speed.resident_data:  # staged once, steps back to back, the loss read back after them
        staged = trainer.stage(batches)
        timing, losses = time_window(lambda index: trainer.staged_step(staged, index), len(batches) - warmup,
                                     warmup, trainer.synchronize, trainer.clock())
        losses = trainer.loss_values(losses)
    else:
        timing, losses = time_steps(lambda index: trainer.step(*batches[index]), len(batches) - warmup, warmup,
                                    trainer.synchronize)
    result = {"losses": np.asarray(losses, dtype=np.float64), "step_seconds": timing.to_json(),
              "version": trainer.version(), "settings": trainer.settings(),
              "peak_device_mb": trainer.peak_device_mb()}
    if argument["keep_parameters"]:
        result["parameters"], result["statistics"] = trainer.parameters(), trainer.statistics()
        result["optimizer_state"] = trainer.optimizer_state()
        result["biased_running_variance"] = trainer.biased_running_variance
        result["dropout_rates"] = trainer.dropout_rates()
    return result
