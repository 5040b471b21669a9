"""Models that exist only in memory (the Python API: a torch.nn.Module just built, a keras.Model just loaded, an
MXNet Gluon HybridBlock, an onnx.ModelProto), opened as a UserModel like a file. A torch module runs in this
process as a factory's would; the others are written to a file in the run's scratch folder, in their own
format, and read from there (their frameworks run in worker processes). An in-memory model is trusted code:
the caller built it, so a Keras Lambda layer or a custom Gluon block are read with trust_code."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path

import numpy as np

from rosetta.errors import BadInput, RosettaError
from rosetta.models.registry import TensorSpec

SUPPORTED = "a torch.nn.Module, a keras.Model, an MXNet Gluon HybridBlock or an onnx.ModelProto"


def kind_of(model) -> str:
    """'torch', 'keras', 'gluon' or 'onnx' for a model object (without importing any framework); '' for a path."""
    from rosetta.frameworks import memory_kinds

    if isinstance(model, (str, Path)):
        return ""
    kinds = memory_kinds()  # a class in the object's method resolution order (module, name) -> its kind
    for cls in type(model).__mro__:
        found = kinds.get((cls.__module__, cls.__name__))
        if found:
            return found
    if type(model).__name__ == "ModelProto" and type(model).__module__.startswith("onnx"):
        return "onnx"
    raise BadInput(f"cannot read a {type(model).__module__}.{type(model).__name__}: give {SUPPORTED}, or a path")


def label_of(model) -> str:
    """How tables name an in-memory model: its class, and its own name where it has one."""
    name = getattr(model, "name", "") if kind_of(model) in ("keras", "gluon") else ""
    name = name() if callable(name) else name
    return f"{type(model).__name__}{f' {name!r}' if name else ''} (in memory)"


def open_any(model, inputs: list[TensorSpec], trust_code: bool, scratch: Path, like: tuple = (),
             partial: bool = False):
    """The UserModel of a path as the command line names it (sources.model.open_model) or of a model object;
    `like` and `partial` as open_model takes them."""
    from rosetta.sources.model import open_model

    if isinstance(model, (str, Path)):
        return open_model(str(model), inputs, trust_code, scratch, like, partial)
    return open_object(model, inputs, scratch, like, partial)


def open_object(model, inputs: list[TensorSpec], scratch: Path, like: tuple = (), partial: bool = False):
    """The UserModel of an in-memory model; `inputs`: the input specs (needed for torch and Gluon, whose
    objects do not say their inputs), from the caller's spec strings or arrays."""
    from rosetta.sources.model import open_model

    kind, label = kind_of(model), label_of(model)
    folder = Path(scratch) / f"memory-{hashlib.sha256(f'{id(model)}{label}'.encode()).hexdigest()[:10]}"
    folder.mkdir(parents=True, exist_ok=True)
    from rosetta.frameworks import memory_exporter

    export = memory_exporter(kind)  # None: a module that runs here (torch), as a factory's would
    if export is None:
        return _torch_model(model, inputs, label)
    path, names = export(model, inputs, folder, label)
    if names is not None:  # the file's own input names (a Gluon symbol's)
        inputs = [replace(spec, name=name) for spec, name in zip(inputs, names)]
    opened = open_model(str(path), inputs, kind in ("keras", "gluon"), Path(scratch), like, partial)
    return replace(opened, display=label)


def _torch_model(module, inputs: list[TensorSpec], label: str):
    from rosetta.sources.files import ModelFile
    from rosetta.sources.model import UserModel, torch_outputs, with_embedding_range

    if not inputs:
        raise BadInput(f"{label}: a torch.nn.Module does not say its inputs; give inputs= as arrays or specs, e.g. "
                       "inputs=['image:Nx3x32x32:float32']")
    from rosetta.sources.torch import check_not_on_meta

    from rosetta.sources.model import own_specs

    check_not_on_meta(module, label)
    specs = tuple(with_embedding_range(spec, module) for spec in own_specs(module, inputs))
    digest = hashlib.sha256()
    for name, value in module.state_dict().items():
        digest.update(name.encode())
        digest.update(value.detach().cpu().numpy().tobytes())
    module, outputs = torch_outputs(module, specs, label)
    return UserModel(ModelFile(label, "torch-factory", None, function="<in memory>"), "torch-factory", specs,
                     outputs, module=module, trust_code=True,
                     key=f"memory-{digest.hexdigest()[:12]}", display=label)


def specs_from_arrays(arrays: dict[str, np.ndarray]) -> list[TensorSpec]:
    """Input specs from the caller's arrays: their names and dtypes, the first axis the batch."""
    return [TensorSpec(name, (None,) + tuple(np.shape(array)[1:]), str(np.asarray(array).dtype))
            for name, array in arrays.items()]


def as_artifact(model, feeds: dict[str, np.ndarray], scratch: Path):
    """A PyTorch module to compare with a reference (not to be the reference) as an artifact rosetta runs: the
    module exported by torch.export on the run's own inputs (static shapes) to a .pt2 in `scratch`, and opened
    as such (it is the caller's, or a --trust-code factory's, own code)."""
    from rosetta.errors import WorkerTimedOut
    from rosetta.frameworks.torch_sources import export_program
    from rosetta.execution import timeout_seconds
    from rosetta.execution.deadline import deadline
    from rosetta.manifest import Manifest
    from rosetta.sources.model import open_model

    folder = Path(scratch) / f"exported-{model.key or 'module'}"
    folder.mkdir(parents=True, exist_ok=True)
    try:
        with deadline(timeout_seconds(), f"exporting {model.label}"):  # its forward runs, in this process
            # from a copy: the user's object unchanged
            export_program(model.module, [feeds[spec.name] for spec in model.inputs], folder / "model.pt2")
    except WorkerTimedOut:
        raise
    except Exception as error:  # noqa: BLE001 - what torch.export cannot trace, said in one line
        from rosetta.errors import one_line

        raise RosettaError(f"{model.label}: torch.export cannot trace it to run it as a candidate "
                           f"({one_line(error)}); give it as the reference (first), or as a .pt2") from None
    opened = open_model(str(folder / "model.pt2"), [], True, Path(scratch))  # its inputs: the run's, as exported
    # its inputs and outputs named as rosetta names the module's (the --input names; output_0, ... or a mapping's
    # keys), not as torch.export names its graph's nodes (it is fed in order): a module then pairs with itself,
    # and with the reference it was given the inputs of, by name
    manifest, renamed = Manifest.read(opened.folder), {}
    for kind in ("inputs", "outputs"):
        entries, specs = getattr(manifest, kind), getattr(model, kind)
        if len(entries) == len(specs):
            for entry, spec in zip(entries, specs):
                entry["name"] = spec.name
            renamed[kind] = tuple(replace(o, name=spec.name) for o, spec in zip(getattr(opened, kind), specs))
    manifest.write(opened.folder)
    return replace(opened, display=model.label, **renamed)
