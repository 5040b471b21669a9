"""The arguments of rosetta.verify and rosetta.convert read into what verify/ takes, and checked before any work:
inputs as arrays (a dict by name, a list in input order; numpy, torch tensors, nested lists) or as specs, model
objects and reference model names, pairs of inputs and outputs. Each refusal is one BadInput that names the
parameter (`inputs: ...`)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rosetta.errors import BadInput
from rosetta.settings import shown, text as is_text, whole


def check_models(models: Sequence) -> None:
    """Refuse, before any work, a model that is neither a path nor an object rosetta reads, and an in-memory
    torch module whose weights are not loaded (on the meta device)."""
    from rosetta.sources.memory import kind_of, label_of
    from rosetta.sources.torch import check_not_on_meta

    for model in models:
        if not isinstance(model, (str, os.PathLike)) and kind_of(model) == "torch":
            check_not_on_meta(model, label_of(model))


def _array(name: str, value):
    """One input the caller gave as an array (numpy, or anything numpy reads: a torch tensor, a nested list)."""
    import numpy as np

    from rosetta.errors import one_line

    try:
        if hasattr(value, "detach"):  # a torch tensor, perhaps on a GPU or requiring grad
            value = value.detach().cpu()
        array = np.asarray(value)
    except Exception as error:  # noqa: BLE001 - whatever numpy makes of something that is not an array
        raise BadInput(f"inputs: {name}: not an array ({one_line(error)})") from None
    if array.dtype.kind not in "biuf":
        raise BadInput(f"inputs: {name}: an array of numbers or booleans; got dtype {array.dtype}")
    return array


def check_arrays_fit(arrays, max_memory: float | None) -> None:
    """Refuse, before any work, arrays given in memory that do not fit in `max_memory` GiB (None: the default
    share of the machine), as generated inputs of that size are refused (models.inputs.check_memory): the run
    holds copies of them, and outputs of their size, beside the caller's."""
    from rosetta.models.inputs import DEFAULT_MEMORY_SHARE, GIB, default_memory_limit, machine_memory, readable_size

    named = arrays if isinstance(arrays, Mapping) else {f"input_{n}": a for n, a in enumerate(arrays)}
    needed = sum(array.nbytes for array in named.values())
    limit = default_memory_limit() if max_memory is None else max_memory
    if needed > limit * GIB:
        shapes = ", ".join(f"{name} {'x'.join(map(str, a.shape))} {a.dtype}" for name, a in named.items())
        raise BadInput(f"inputs: the arrays given ({shapes}) take {readable_size(needed)}, more than the "
                       f"{readable_size(limit * GIB)} allowed; give fewer rows, or raise max_memory= (GiB, default "
                       f"{DEFAULT_MEMORY_SHARE:.0%} of this machine's {machine_memory() / GIB:.0f} GiB)")


def read_inputs(inputs) -> tuple[list, Any]:
    """(input specs, arrays): `inputs` as specs ("name:SHAPE:DTYPE[:LOW:HIGH]" strings or TensorSpecs) or as
    arrays (a dict by name, or a sequence in the model's input order); the specs of arrays are read off them."""
    import numpy as np

    from rosetta.models.registry import TensorSpec
    from rosetta.sources.memory import specs_from_arrays
    from rosetta.sources.signature import parse_input_option

    takes = ("arrays (a dict by input name, or a list in the model's input order) or specs ('name:SHAPE:DTYPE', "
             "e.g. 'image:Nx3x32x32:float32')")
    if inputs is None:
        return [], None
    if isinstance(inputs, Mapping):
        if not all(isinstance(name, str) and name for name in inputs):
            raise BadInput(f"inputs: a dict of arrays by input name (non-empty strings); got the keys "
                           f"{shown(list(inputs))}")
        arrays = {name: _array(name, value) for name, value in inputs.items()}
        return specs_from_arrays(arrays), arrays
    if isinstance(inputs, (str, TensorSpec)) or hasattr(inputs, "shape"):
        inputs = [inputs]
    if not isinstance(inputs, (list, tuple)):
        raise BadInput(f"inputs: {takes}; got {shown(inputs)}")
    items = list(inputs)
    if all(isinstance(item, (str, TensorSpec)) for item in items):
        return [parse_input_option(item) if isinstance(item, str) else item for item in items], None
    if all(hasattr(item, "shape") for item in items):
        arrays = [_array(f"input_{n}", item) for n, item in enumerate(items)]
        return specs_from_arrays({f"input_{n}": a for n, a in enumerate(arrays)}), arrays
    raise BadInput(f"inputs: {takes}, not a mix nor anything else; got {shown(inputs)}")


def reference_model_names(model) -> str | None:
    """`model` as reference model names ("cnn", "cnn,gru", "all"): a string that names no file and looks like no
    path (no "/", "." or ":"; an unknown name is then refused with the choices), else None."""
    if not isinstance(model, str) or Path(model).exists() or any(mark in model for mark in "/.:\\"):
        return None
    return model


def pair_texts(pair) -> list[str]:
    """pair= ({"image": "input_1"} or {"image": ("input_1", (0, 2, 3, 1))}, or "REF=OTHER[:P]" strings) as the
    'REF=OTHER[:PERMUTATION]' texts verify/ reads."""
    takes = ("pair: {reference name: other name} or {reference name: (other name, permutation)}, or "
             "'REF=OTHER[:PERMUTATION]' strings")
    if pair is None:
        return []
    if isinstance(pair, Mapping):
        texts = []
        for reference, other in pair.items():
            name, permutation = (other, None) if isinstance(other, str) else (
                other if isinstance(other, (list, tuple)) and len(other) == 2 else (None, None))
            if not (is_text(reference) and is_text(name) and (permutation is None or (
                    isinstance(permutation, (list, tuple)) and all(whole(0)(axis) for axis in permutation)))):
                raise BadInput(f"{takes}; got {shown({reference: other})}")
            texts.append(f"{reference}={name}" + (f":{','.join(map(str, permutation))}" if permutation else ""))
        return texts
    texts = [pair] if isinstance(pair, str) else list(pair) if isinstance(pair, (list, tuple)) else None
    if texts is None or not all(is_text(item) for item in texts):
        raise BadInput(f"{takes}; got {shown(pair)}")
    return texts
