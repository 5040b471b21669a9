"""A user's model opened for conversion and verification: its signature, how to run it as the reference,
and where each target's conversion chain starts."""

from __future__ import annotations

import hashlib
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from rosetta.convert.targets import load_verify_runner
from rosetta.errors import RosettaError
from rosetta.execution import timeout_seconds
from rosetta.execution.deadline import deadline
from rosetta.models.inputs import generate_inputs
from rosetta.models.registry import TensorSpec, signature_of
from rosetta.sources.files import ModelFile, identify
from rosetta.sources.signature import check_numeric, resolve_inputs

# Where a conversion chain starts for each format a user's model can be in (the converters in
# rosetta.convert.registry take it on from there); torch models are exported from memory.
CHAIN_START = {"torch-factory": "torch", "torch-export": "torch", "onnx": "onnx", "keras": "keras",
               "tensorflow": "tensorflow", "mxnet": "mxnet"}
# Formats rosetta can also run in float64 (then the calibrated tolerance applies): a torch module, a Keras model
# rebuilt with float64 layers, an MXNet block cast to float64, an ONNX graph made float64 and run by ONNX's
# reference evaluator (ONNX Runtime has no float64 Conv). SavedModels stay float32 (the ulp-at-scale rule).
FLOAT64_FORMATS = ("torch-factory", "torch-export", "keras", "mxnet", "onnxruntime")


@dataclass
class UserModel:
    file: ModelFile
    format: str  # the ModelFile's format, or an artifact's manifest format
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    folder: Path | None = None  # the artifact folder (everything but a factory)
    runner: str = ""  # framework that runs the folder
    module: object = None  # torch.nn.Module of a factory or a .pt2
    program: object = None  # a .pt2's ExportedProgram: exported to ONNX as it is
    trust_code: bool = False
    key: str = field(default="")  # store key: identifies the model's bytes
    display: str = ""  # how tables name it where its file does not (an in-memory model: sources.memory)

    @property
    def label(self) -> str:
        return self.display or self.file.label

    @property
    def has_float64(self) -> bool:
        return self.module is not None or self.runner in FLOAT64_FORMATS

    def chain_for(self, target) -> tuple[str, ...]:
        """The formats from this model to `target`'s artifact: into the route's hub format (chain[1]: onnx,
        or MMdnn's IR), then on as the target's chain goes."""
        from rosetta.convert.registry import CONVERSIONS

        start = CHAIN_START.get(self.format)
        if start is None:
            raise RosettaError(f"{self.label} is a rosetta {self.format} artifact; convert from its source "
                               "model instead")
        hub = target.chain[1]
        if start != hub and (start, hub) not in CONVERSIONS:
            sources = sorted(s for s, t in CONVERSIONS.keys() if t == hub)
            raise RosettaError(f"route {target.route} cannot start from a {start} model (it reads "
                               f"{', '.join(sources)} models); use via='onnx'")
        return target.chain[1:] if start == hub else (start,) + target.chain[1:]

    def conversion_source(self):
        """What the first conversion step reads: a TorchSource (a .pt2's ExportedProgram as it is), or the
        artifact folder."""
        if self.module is not None:
            from rosetta.convert.onnx.from_torch import TorchSource

            module = self.program if self.program is not None else self.module
            return TorchSource(module, self.inputs, self.outputs, {"path": self.file.text})
        return self.folder

    def predict(self, feeds: dict[str, np.ndarray], precision: str = "float32", threads: int = 0) -> dict:
        """Run the model as its own framework runs it (float64 only where has_float64)."""
        return self.make_runner(precision, threads).predict(feeds)

    def predict_float64(self, feeds: dict[str, np.ndarray], threads: int = 0) -> tuple[dict, dict | None]:
        """Its float64 outputs and, where its framework checks its float64 run against its float32 one
        (frameworks.reference_check), that ReferenceCheck as JSON."""
        runner = self.make_runner("float64", threads)
        outputs = runner.predict(feeds)
        return outputs, runner.reference_check

    def make_runner(self, precision: str = "float32", threads: int = 0):
        """The runner that runs it at `precision` (a torch module in this process, under the --timeout deadline:
        InProcessRunner; a file in its framework)."""
        if self.module is not None:
            from rosetta.frameworks.torch import TorchModuleRunner

            what = f"running {self.label}"
            with deadline(timeout_seconds(), what):  # a copy of the module is made, its own code may run
                runner = TorchModuleRunner(self.module, [o.name for o in self.outputs], precision, threads)
            return InProcessRunner(runner, what)
        return load_verify_runner(self.runner, self.folder, threads, self.trust_code, precision)


class InProcessRunner:
    """A runner of a model in this process (a torch module), whose every predict is under the --timeout deadline
    (execution.deadline): a forward that blocks is a WorkerTimedOut naming the model, as a worker's job would
    be; everything else is the runner's."""

    def __init__(self, runner, what: str) -> None:
        self.runner, self.what = runner, what

    def predict(self, feeds: dict[str, np.ndarray]) -> dict:
        with deadline(timeout_seconds(), self.what):
            return self.runner.predict(feeds)

    def __getattr__(self, name: str):
        if name == "runner":  # not set yet (a copy being made): no recursion
            raise AttributeError(name)
        return getattr(self.runner, name)


def own_specs(module, specs) -> list[TensorSpec]:
    """The --input specs that name the module's forward's parameters, where some do and the others name none
    (those are another model's: a port's padding_mask); all of them where none does or the forward takes
    *args/**kwargs (they go by position then)."""
    import inspect

    try:
        parameters = list(inspect.signature(module.forward).parameters.values())
    except (TypeError, ValueError):
        return list(specs)
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in parameters):
        return list(specs)
    named = [spec for spec in specs if spec.name in {p.name for p in parameters}]
    return named or list(specs)


def with_embedding_range(spec: TensorSpec, module) -> TensorSpec:
    """An integer input without a given range, of a module with embeddings: drawn from the rows of the smallest
    (the usual case: one input of token ids, one table), not from [0, 2)."""
    from rosetta.frameworks.torch_sources import embedding_rows

    rows = embedding_rows(module)
    if rows and np.dtype(spec.dtype).kind in "iu" and spec.low is None and spec.high is None:
        return replace(spec, high=min(rows))
    return spec


def open_model(text: str, overrides: list[TensorSpec], trust_code: bool, scratch: Path, like: tuple = (),
               partial: bool = False) -> UserModel:
    """Identify and read a user's model (into `scratch` where it must be copied), resolving its inputs; `like`:
    the inputs of the model it is compared with, for a format that carries no shapes (MXNet) and to size free
    axes from; `partial`: `overrides` may name other models' inputs (sources.signature.resolve_inputs).
    (A model object of the Python API: sources.memory.open_any.)"""
    from rosetta.manifest import Manifest

    text = str(text)
    model_file = identify(text)
    if model_file.format == "torch-factory":
        from rosetta.sources.training_setup import exported_gluon_setup, is_gluon_setup_text

        if is_gluon_setup_text(text):  # a Gluon training setup: its block exported in the MXNet worker, read as MXNet
            path, names = exported_gluon_setup(text, trust_code, overrides, scratch)
            inputs = [replace(spec, name=name) for spec, name in zip(overrides, names)]
            return replace(open_model(str(path), inputs, trust_code, scratch, like, partial), display=text)
        from rosetta.sources.torch import load_factory

        module = load_factory(model_file, trust_code)
        if not overrides:
            raise RosettaError(f"{text}: a PyTorch factory has no declared inputs; give each with inputs="
                               "name:SHAPE:DTYPE, e.g. inputs=image:Nx3x32x32:float32")
        inputs = tuple(with_embedding_range(spec, module) for spec in own_specs(module, overrides))
        module, outputs = torch_outputs(module, inputs, text)
        return UserModel(model_file, "torch-factory", inputs, outputs, module=module,
                         trust_code=trust_code, key="factory-" + hashlib.sha256(text.encode()).hexdigest()[:12])
    if model_file.format == "artifact":
        folder = model_file.path
        manifest = Manifest.read(folder)
        manifest.check_integrity(folder)
        check_given_folder(folder, manifest, trust_code, text)
    else:
        from rosetta.sources.readers import read_model_file

        folder = Path(tempfile.mkdtemp(prefix=f"read-{model_file.format}-", dir=scratch))
        manifest = read_model_file(model_file, folder, overrides, trust_code, list(like))
    from rosetta.frameworks import runner_for_format

    check_numeric(manifest.inputs, "input", model_file.label)
    check_numeric(manifest.outputs, "output", model_file.label)
    inputs = resolve_inputs(manifest.inputs, overrides, model_file.label, tuple(like), partial)
    outputs = tuple(TensorSpec(o["name"], tuple(d if isinstance(d, int) and d > 0 else None for d in o["shape"]),
                               o["dtype"]) for o in manifest.outputs)
    if model_file.format != "artifact":  # a folder we wrote: record the resolved inputs (never the user's own)
        manifest.inputs = signature_of(inputs)
        manifest.write(folder)
    fmt = manifest.format if model_file.format == "artifact" else model_file.format
    model = UserModel(model_file, fmt, inputs, outputs, folder=folder, runner=runner_for_format(manifest.format),
                      trust_code=trust_code, key=f"{fmt}-{manifest.sha256[:12]}")
    if fmt == "torch-export":
        from rosetta.frameworks.torch import load_exported

        model.program = load_exported(manifest.artifact_path(folder), trust_code)
        model.module = model.program.module()
    return model


def check_given_folder(folder: Path, manifest, trust_code: bool, label: str) -> None:
    """A rosetta folder given on the command line may be forged: before any conversion reads it, check its
    artifact as the reader of that format checks a user's file (rosetta.trust). Runners check again."""
    if manifest.format == "onnx":
        from rosetta.frameworks.onnx_graph import load_checked

        load_checked(manifest.artifact_path(folder), label)
    elif manifest.format == "tensorflow" and not trust_code:
        from rosetta.execution import run_job
        from rosetta.frameworks import isolation

        run_job("rosetta.frameworks.tensorflow:check_saved_model_job",
                {"path": str(manifest.artifact_path(folder)), "trust_code": False, "label": label},
                isolation("tensorflow"), f"checking {label}")


def torch_outputs(module, inputs: tuple[TensorSpec, ...], text: str) -> tuple[object, tuple[TensorSpec, ...]]:
    """A factory's module as rosetta runs and exports it (inputs by keyword where they name its parameters, a
    mapping of outputs returned as a tuple: frameworks.torch_sources.as_rosetta_calls) and its outputs, found by running
    it once on generated inputs of batch 2, under the --timeout deadline."""
    from rosetta.frameworks.torch import TorchModuleRunner
    from rosetta.frameworks.torch_sources import as_rosetta_calls

    feeds = generate_inputs(inputs, 2, 0)
    try:
        with deadline(timeout_seconds(), f"running {text}"):
            module, names = as_rosetta_calls(module, tuple(feeds.values()),
                                             [spec.name for spec in inputs])
            runner = TorchModuleRunner(module, names or [f"output_{i}" for i in range(64)], "float32")
            result = runner.predict(feeds)
    except RosettaError:
        raise
    except Exception as error:
        from rosetta.errors import one_line

        raise RosettaError(f"{text} fails on inputs of the inputs= shapes: {one_line(error)}") from None
    names = names or (["output"] if len(result) == 1 else list(result))
    return module, tuple(TensorSpec(name, (None,) + tuple(value.shape[1:]), str(value.dtype))
                         for name, value in zip(names, result.values()))
