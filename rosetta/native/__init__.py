"""Native baselines: each DLF workload's model written by hand in another framework, the idiomatic way of that
framework, so that a converted model can be timed against the model a user of that framework would have written.

A native model is an artifact like any conversion (a framework file and a manifest), so the framework's own
runner and trainer load and time it with no code of their own. Where the layouts allow, it carries the
PyTorch reference's weights (mapped: HWIO kernels, a channels-last flatten order, gates reordered), so it is
also verified against the reference; where the architecture differs (keras.applications' and Gluon's
ResNet-50 are v1, stride on the first 1x1 convolution; the reference is v1.5), it gets the framework's own
Glorot initialisation, seeded. The PyTorch reference is PyTorch's native model.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from rosetta.manifest import MANIFEST_NAME, Manifest, code_digest
from rosetta.registry import Registry, load_entry

REFERENCE_WEIGHTS = "the reference's weights"
SEEDED = "seeded Glorot initialisation (architectures differ)"


@dataclass(frozen=True)
class NativeModel:
    model: str  # the reference model it reimplements
    framework: str  # the framework (runner and trainer) that runs it
    builder: str  # "module:function" (seed, staging folder) -> Manifest (written by build_native)
    weights: str  # REFERENCE_WEIGHTS or SEEDED
    description: str


NATIVE: Registry[NativeModel] = Registry("native baseline", key=lambda native: (native.model, native.framework))


def native_for(model: str, framework: str) -> NativeModel | None:
    return NATIVE.get((model, framework)) if (model, framework) in NATIVE else None


# the distributions whose versions decide what a framework's builder writes (either build of each)
PACKAGES = {"keras": ("keras", "tensorflow-cpu", "tensorflow"), "tensorflow": ("keras", "tensorflow-cpu", "tensorflow"),
            "mxnet": ("mxnet",)}


def _installed(framework: str) -> dict[str, str]:
    """Versions read from package metadata: the caller (bench's parent process) imports no framework."""
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for package in PACKAGES.get(framework, (framework,)):
        try:
            found[package] = version(package)
        except PackageNotFoundError:
            continue
    return found


def native_folder(root: Path, native: NativeModel, seed: int = 0) -> Path:
    """Where the native model is kept: named by the framework's version, rosetta's, and the code that builds it
    (code_digest), so that other code builds it again."""
    from rosetta.version import __version__

    identity = json.dumps({"builder": native.builder, "seed": seed, "rosetta": __version__,
                           "code": code_digest("native", "models"), "framework": _installed(native.framework)},
                          sort_keys=True)
    digest = hashlib.sha256(identity.encode()).hexdigest()[:10]
    return Path(root) / f"{native.model}-seed{seed}" / f"native-{native.framework}-{digest}"


def build_native(root: Path, model: str, framework: str, seed: int = 0) -> Path:
    """The native model's artifact folder under `root`, built now (atomically) if it is not there yet."""
    from rosetta.output import atomic_folder
    from rosetta.scratch import exclusive

    native = NATIVE.get((model, framework), label=f"{framework} for {model!r}",
                        choices=[f"{m}/{f}" for m, f in NATIVE.keys()])
    folder = native_folder(root, native, seed)
    if (folder / MANIFEST_NAME).is_file():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    with exclusive(folder.parent / f".{folder.name}.lock"):
        if not (folder / MANIFEST_NAME).is_file():
            with atomic_folder(folder) as staging:
                manifest = load_entry(native.builder)(seed, staging)
                manifest.sha256 = manifest.digest(staging)
                manifest.write(staging)
    return folder


def reference_weights(model: str, seed: int):
    """The reference model's spec and its weights and buffers as numpy arrays, by state_dict name (without
    BatchNorm's step counter, which no other framework has), in the reference's own order."""
    from rosetta.models import get_model

    spec = get_model(model)
    return spec, {name: value.detach().numpy() for name, value in spec.build(seed).state_dict().items()
                  if not name.endswith("num_batches_tracked")}


def native_manifest(spec, seed: int, framework: str, version: str, artifact: str, fmt: str, weights: str,
                    layouts: dict | None = None, outputs: list[dict] | None = None, **converter) -> Manifest:
    """The manifest of a native model of reference `spec`: what it takes and returns, in the reference's terms."""
    entries = lambda tensors: [{"name": t.name, "shape": list(t.shape), "dtype": t.dtype} for t in tensors]  # noqa: E731
    return Manifest(artifact=artifact, format=fmt, source={"model": spec.name, "seed": seed, "native": framework},
                    converter={"name": f"native {framework}", "version": version, "weights": weights,
                               "layouts": layouts or {}, **converter},
                    inputs=entries(spec.inputs), outputs=outputs or entries(spec.outputs), sha256="",
                    chain=[f"native-{framework}"])


for _native in (
    NativeModel("cnn", "keras", "rosetta.native.keras:cnn", REFERENCE_WEIGHTS,
                "Keras 3 Sequential, channels-last, as DLF's Keras notebook"),
    NativeModel("gru", "keras", "rosetta.native.keras:gru", REFERENCE_WEIGHTS,
                "Keras 3 Embedding + GRU(reset_after) + Dense (cuDNN kernel on GPU)"),
    NativeModel("resnet50", "keras", "rosetta.native.keras:resnet50", SEEDED,
                "keras.applications.ResNet50(weights=None, include_top=False, pooling='avg')"),
    NativeModel("resnet50", "tensorflow", "rosetta.native.keras:resnet50_saved_model", SEEDED,
                "the Keras ResNet-50 exported as a SavedModel (model.export), run as a tf.function"),
    NativeModel("cnn", "mxnet", "rosetta.native.mxnet:cnn", REFERENCE_WEIGHTS,
                "Gluon HybridSequential, channels-first, hybridized"),
    NativeModel("gru", "mxnet", "rosetta.native.mxnet:gru", REFERENCE_WEIGHTS,
                "Gluon Embedding + fused rnn.GRU + Dense, hybridized"),
    NativeModel("resnet50", "mxnet", "rosetta.native.mxnet:resnet50", SEEDED,
                "gluon.model_zoo.vision.resnet50_v1 features, hybridized"),
):
    NATIVE.register(_native)
