"""PyTorch's side of reading users' models (rosetta.sources): a factory's module built and checked, a torch.export
program's signature, a module called as rosetta runs and exports it, and a module exported to a .pt2. The only
place of sources' work that imports torch; sources/torch.py and sources/model.py call it."""

from __future__ import annotations

import copy
import importlib
import importlib.util
import sys
from pathlib import Path

import numpy as np

from rosetta.errors import BadInput, RosettaError, UntrustedModel, WorkerTimedOut, one_line
from rosetta.frameworks.torchvision import make_importable
from rosetta.trust import TRUST_HINT


def _value_signature(name: str, value) -> dict:
    import torch

    shape = [int(d) if isinstance(d, int) or (isinstance(d, torch.SymInt) and d.node.is_constant()) else None
             for d in value.shape]
    return {"name": name, "shape": shape, "dtype": str(value.dtype).replace("torch.", "")}


def exported_signature(program) -> tuple[list[dict], list[dict]]:
    """The inputs and outputs of a torch.export program, as a manifest lists them (a free axis None)."""
    placeholders = {node.name: node for node in program.graph.nodes if node.op == "placeholder"}
    outputs = next(node for node in program.graph.nodes if node.op == "output").args[0]
    names = program.graph_signature.user_outputs
    inputs = [_value_signature(name, placeholders[name].meta["val"]) for name in program.graph_signature.user_inputs]
    result = [_value_signature(name if len(names) > 1 else "output", node.meta["val"])
              for name, node in zip(names, [o for o in outputs if getattr(o, "name", None) in names])]
    return inputs, result


def is_training_setup(value) -> bool:
    """(torch.nn.Module, torch.optim.Optimizer, callable loss): a PyTorch side that brings how it trains."""
    if not isinstance(value, tuple) or len(value) != 3:
        return False
    names = [{(c.__module__, c.__name__) for c in type(v).__mro__} for v in value[:2]]
    return (("torch.nn.modules.module", "Module") in names[0] and ("torch.optim.optimizer", "Optimizer") in names[1]
            and callable(value[2]))


def load_factory(model_file, trust_code: bool):
    """The torch.nn.Module a factory builds, in eval mode. Importing the file and calling it runs its code, here
    in this process, so under the --timeout deadline (execution.deadline) that a worker's job would have."""
    import torch

    from rosetta.execution import timeout_seconds
    from rosetta.execution.deadline import deadline

    if not trust_code:
        raise UntrustedModel(f"{model_file.text} is Python code: building the model runs it; {TRUST_HINT}")
    make_importable()  # torchvision, timm and transformers import torchvision, whose PyPI build may not load here
    with deadline(timeout_seconds(), f"building {model_file.text}"):
        model = _built(model_file)
        if is_training_setup(model):  # (module, optimizer, loss_fn): its inference is the module's
            model = model[0]
        if not isinstance(model, torch.nn.Module):
            raise RosettaError(f"{model_file.text} returned a {type(model).__name__}, not a torch.nn.Module")
        check_not_on_meta(model, model_file.text)
        return model.eval()  # the module's own code too


def _built(model_file):
    """What the factory returns: its file or module imported, the function called."""
    try:
        if model_file.path is not None:
            name = f"rosetta_user_{model_file.path.stem}"
            spec = importlib.util.spec_from_file_location(name, model_file.path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
        else:
            module = importlib.import_module(model_file.module)
    except WorkerTimedOut:
        raise
    except Exception as error:
        raise RosettaError(f"importing {model_file.text.rpartition(':')[0]} failed: {one_line(error)}") from None
    factory = getattr(module, model_file.function, None)
    if not callable(factory):
        raise RosettaError(f"{model_file.text}: {model_file.text.rpartition(':')[0]} has no function "
                           f"{model_file.function!r}")
    try:
        return factory()
    except WorkerTimedOut:
        raise
    except Exception as error:
        raise RosettaError(f"{model_file.text} raised {one_line(error)}") from None


def as_rosetta_calls(module, example: tuple, input_names: list[str]):
    """`module` as rosetta runs and exports it, and its output names (None: named by position). Its inputs go
    in by keyword where every input's name is a parameter of its forward (Hugging Face's forwards take
    input_ids, past_key_values, attention_mask, ... in that order), else by position. A module that returns a
    mapping (Hugging Face's ModelOutput, torchvision's segmentation and FPN dicts) returns that mapping's
    tensors as a tuple, named by their keys; what is not a tensor (a key-value cache object, None) is left out,
    as torch.onnx.export cannot return it. `example`: input tensors, or arrays, to call it on."""
    import inspect
    from collections.abc import Mapping

    import torch

    from rosetta.frameworks.torch_outputs import TensorInterface

    example = tuple(torch.from_numpy(value) if isinstance(value, np.ndarray) else value for value in example)
    try:
        parameters = inspect.signature(module.forward).parameters
    except (TypeError, ValueError):
        parameters = {}
    by_name = tuple(input_names) if input_names and all(name in parameters for name in input_names) else None
    with torch.no_grad():
        result = module(**dict(zip(by_name, example))) if by_name else module(*example)
    keys = None
    if isinstance(result, Mapping):
        keys = tuple(key for key, value in result.items() if isinstance(value, torch.Tensor))
        if not keys:
            raise RosettaError(f"{type(module).__name__} returns a mapping with no tensor in it "
                               f"({', '.join(map(str, result))})")
    if by_name is None and keys is None:
        return module, None
    names = [key if str(key).isidentifier() else f"output_{key}" for key in keys] if keys else None  # FPN "0".."3"
    return TensorInterface(module, by_name, keys), names


def check_not_on_meta(module, label: str) -> None:
    """Refuse a torch module whose parameters or buffers are on the meta device (built with device="meta" or
    under torch.device("meta"), as large models are before their weights are loaded): they have shapes but no
    values, so there is nothing to run or compare."""
    tensors = [*module.named_parameters(), *module.named_buffers()]
    on_meta = [name for name, tensor in tensors if tensor.is_meta]
    if on_meta:
        raise BadInput(f"{label}: {len(on_meta)} of its {len(tensors)} parameters and buffers (first {on_meta[0]}) "
                       "are on the meta device (no values): load its weights first (module.to_empty(device='cpu'), "
                       "then load_state_dict)")


def embedding_rows(module) -> list[int]:
    """The rows of every embedding table (Embedding, EmbeddingBag) in `module`."""
    import torch

    return [m.num_embeddings for m in module.modules() if isinstance(m, (torch.nn.Embedding, torch.nn.EmbeddingBag))]


def export_program(module, arrays: list[np.ndarray], path: Path) -> None:
    """`module` traced by torch.export on `arrays` (static shapes) from a copy in eval mode (the caller's object
    unchanged), saved to the .pt2 `path`. What torch.export cannot trace raises its own error."""
    import torch

    arguments = tuple(torch.from_numpy(np.ascontiguousarray(array)) for array in arrays)
    program = torch.export.export(copy.deepcopy(module).eval(), arguments)
    torch.export.save(program, str(path))
