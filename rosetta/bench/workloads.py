"""The DLF workloads (../shared/reference/dlf-benchmarks.md) as a registry, with DLF's published figures.

A workload names a reference model, a task (train or infer), the DLF batch size and data set, and the unit
DLF reported: seconds per epoch for training (DLF's totals divided by its epochs), seconds per 1,000 images
for feature extraction.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rosetta.registry import Registry


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


def parse_workloads(text: str) -> list[Workload]:
    names = WORKLOADS.keys() if text.strip() == "all" else [n.strip() for n in text.split(",") if n.strip()]
    return [WORKLOADS.get(name) for name in names]
