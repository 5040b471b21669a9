"""The DLF workloads (../shared/reference/dlf-benchmarks.md) as a registry, with DLF's published figures; a
bench cell (one workload in one target: plain JSON, a self-contained job) and the batches it times.

A workload names a reference model, a task (train or infer), the DLF batch size and data set, and the unit
DLF reported: seconds per epoch for training (DLF's totals divided by its epochs), seconds per 1,000 images
for feature extraction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from rosetta.registry import Registry
from rosetta.settings import listed


@dataclass(frozen=True)
class Workload:
    name: str
    model: str
    task: str  # "train" or "infer"
    batch: int
    dataset: str  # "cifar10", "imdb" or "" (synthetic images of the model's input shape)
    epoch_samples: int  # training samples per epoch (train), or images timed by DLF (infer)
    cpu_steps: int  # default timed steps on CPU: a slice of an epoch, so `make demo` stays quick
    gpu_steps: int
    unit: str  # "s/epoch" or "s/1000 images"
    description: str
    dlf: dict = field(default_factory=dict)  # {"K80": {framework: value}, "P100": {...}} in `unit`


def _per_epoch(totals: dict, epochs: int) -> dict:
    return {gpu: {name: round(value / epochs, 2) for name, value in row.items()} for gpu, row in totals.items()}


WORKLOADS: Registry[Workload] = Registry("workload", key=lambda workload: workload.name)
for _workload in (
    Workload("cnn-train", "cnn", "train", 64, "cifar10", 50_000, cpu_steps=20, gpu_steps=200, unit="s/epoch",
             description="DLF CNN training on CIFAR-10, SGD momentum, batch 64",
             dlf=_per_epoch({"K80": {"PyTorch": 169, "Keras (TF)": 241, "MXNet (Gluon)": 152, "TensorFlow": 173},
                             "P100": {"PyTorch": 51, "Keras (TF)": 76, "MXNet (Gluon)": 57, "TensorFlow": 57}}, 10)),
    Workload("gru-train", "gru", "train", 64, "imdb", 25_000, cpu_steps=10, gpu_steps=100, unit="s/epoch",
             description="DLF GRU training on IMDB, Adam, batch 64, 150 tokens",
             dlf=_per_epoch({"K80": {"PyTorch": 31, "Keras (TF)": 35, "MXNet (Module API)": 29, "TensorFlow": 30},
                             "P100": {"PyTorch": 16, "Keras (TF)": 26, "MXNet (Module API)": 24, "TensorFlow": 22}}, 3)),
    Workload("resnet50-features", "resnet50", "infer", 32, "", 40 * 32, cpu_steps=5, gpu_steps=40,
             unit="s/1000 images", description="DLF ResNet-50 feature extraction (2048-D), forward only, batch 32",
             dlf={"K80": {"PyTorch": 7.7, "Keras (TF)": 10.2, "MXNet (Module API)": 7.7, "TensorFlow": 6.5},
                  "P100": {"PyTorch": 1.9, "Keras (TF)": 2.9, "MXNet (Gluon)": 1.7, "TensorFlow": 1.8}}),
):
    WORKLOADS.register(_workload)


REFERENCE_TARGET = "torch (reference)"
DEFAULT_WARMUP = 2


@dataclass(frozen=True)
class BenchCell:
    workload: str
    target: str  # a verify target name, or REFERENCE_TARGET
    framework: str  # the framework that runs it
    artifact: str = "-"  # artifact folder; "-" is the reference model itself
    device: str = "cpu"
    steps: int = 0  # timed steps (batches); 0: the workload's default for the device
    warmup: int = DEFAULT_WARMUP
    threads: int = 0
    data: str = ""  # folder with cifar-10-batches-py/ and imdb.npz; "" = synthetic data
    seed: int = 0
    speed: dict = field(default_factory=dict)  # rosetta.frameworks.speed.Speed as JSON; {}: fp32, as written
    workers: int = 1  # data-parallel workers for a training cell (rosetta.bench.parallel)
    batch: int = 0  # samples per step (per worker); 0: the workload's (DLF's)

    def timed_steps(self) -> int:
        workload = WORKLOADS.get(self.workload)
        return self.steps or (workload.gpu_steps if self.device == "cuda" else workload.cpu_steps)

    def workload_as_run(self) -> Workload:
        """The cell's workload with the cell's batch (`--batch`): what its rows' samples/s and DLF units use."""
        workload = WORKLOADS.get(self.workload)
        return replace(workload, batch=self.batch) if self.batch else workload


def _take(split, count: int, seed: int):
    if len(split.x) < count:  # fewer samples than steps x batch: cycle through them, as epochs would
        index = np.resize(np.random.default_rng(seed).permutation(len(split.x)), count)
    else:
        index = np.random.default_rng(seed).permutation(len(split.x))[:count]
    return split.x[index], split.y[index]


def workload_batches(workload: Workload, count: int, data: str = "", seed: int = 0) -> tuple[list, str]:
    """`count` batches of the workload: (feeds, labels) for training, feeds for inference; and the data source."""
    from rosetta.bench import datasets
    from rosetta.models import get_model
    from rosetta.models.inputs import generate_inputs

    spec = get_model(workload.model)
    name = spec.inputs[0].name
    samples = count * workload.batch
    if not workload.dataset:
        feeds = generate_inputs(spec.inputs, workload.batch, seed)
        return [feeds] * count, "synthetic (seed %d)" % seed
    synthetic = {"cifar10": datasets.synthetic_cifar10, "imdb": datasets.synthetic_imdb}[workload.dataset]
    dataset = workload_dataset(workload, data) if data else synthetic(samples, 1, seed)
    x, y = _take(dataset.train, samples, seed)
    batches = [({name: x[i * workload.batch:(i + 1) * workload.batch]}, y[i * workload.batch:(i + 1) * workload.batch])
               for i in range(count)]
    return (batches if workload.task == "train" else [b[0] for b in batches]), dataset.source


def workload_dataset(workload: Workload, data: str | Path):
    """The workload's data set read from the --data folder (a RosettaError, one line, if it cannot be); None
    for a workload on synthetic inputs only. `rosetta bench` reads each once before any work."""
    from rosetta.bench import datasets
    from rosetta.errors import RosettaError, one_line

    try:
        if workload.dataset == "cifar10":
            folder = Path(data) / "cifar-10-batches-py" if (Path(data) / "cifar-10-batches-py").is_dir() else Path(data)
            return datasets.load_cifar10(folder)
        if workload.dataset == "imdb":
            return datasets.load_imdb(Path(data))
    except RosettaError:
        raise
    except Exception as error:  # noqa: BLE001 - whatever a damaged file makes the readers raise: one line
        raise RosettaError(f"data={data}: the {workload.dataset} files cannot be read ({one_line(error)}); give "
                           "the original files") from None
    return None


def parse_workloads(text: str | Sequence[str]) -> list[Workload]:
    names = WORKLOADS.keys() if listed(text) == ["all"] else listed(text)
    return [WORKLOADS.get(name) for name in names]
