"""A model's inputs as rosetta needs them to generate data: names, shapes with only the batch axis free,
dtypes and value ranges, from the model's own signature and the user's --input options."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from rosetta.errors import BadInput, Unsupported
from rosetta.models.registry import TensorSpec


class UnknownInput(BadInput):
    """An --input names no input of the model, or one of another shape or dtype (it may be another model's, as a
    port's are)."""


INPUT_HELP = "name:SHAPE:DTYPE[:LOW:HIGH], e.g. image:Nx3x32x32:float32 or tokens:Nx100:int64:0:20000 (N: batch)"
BATCH_SYMBOLS = ("n", "?", "-1", "batch", "b")
DTYPES = ("float32", "float64", "float16", "int64", "int32", "int16", "int8", "uint8", "bool")


def parse_input_option(text: str) -> TensorSpec:
    """One --input option: name:SHAPE:DTYPE[:LOW:HIGH]."""
    parts = text.split(":")
    if len(parts) not in (3, 5) or not parts[0]:
        raise BadInput(f"inputs={text!r}: expected {INPUT_HELP}")
    name, shape_text, dtype = parts[:3]
    shape = []
    for dim in shape_text.lower().split("x") if shape_text else []:
        if dim in BATCH_SYMBOLS:
            shape.append(None)
        elif dim.isdigit() and int(dim) > 0:
            shape.append(int(dim))
        else:
            raise BadInput(f"inputs={text!r}: {dim!r} is not a size; expected {INPUT_HELP}")
    if dtype not in DTYPES:
        raise BadInput(f"inputs={text!r}: unknown dtype {dtype!r}; choose from {', '.join(DTYPES)}")
    low = high = None
    if len(parts) == 5:
        try:
            low, high = float(parts[3]), float(parts[4])
        except ValueError:
            raise BadInput(f"inputs={text!r}: LOW and HIGH must be numbers") from None
        if not low < high:
            raise BadInput(f"inputs={text!r}: LOW must be below HIGH")
        _check_range(text, dtype, low, high)
    return TensorSpec(name, tuple(shape), dtype, low, high)


def _check_range(text: str, dtype: str, low: float, high: float) -> None:
    """LOW:HIGH must give values of the dtype: finite (-inf:inf would draw NaN and Inf), within its range, and
    a span it can hold (float32 values are drawn as LOW + u * (HIGH - LOW))."""
    kind = np.dtype(dtype)
    if kind.kind in "iu":
        bounds = np.iinfo(kind)
        if not (low.is_integer() and high.is_integer() and bounds.min <= low and high <= bounds.max + 1):
            raise BadInput(f"inputs={text!r}: LOW and HIGH of an input of dtype {dtype} must be whole numbers in "
                               f"[{bounds.min}, {bounds.max + 1}]")
    elif kind.kind == "f":
        largest = float(np.finfo(kind if kind != np.float16 else np.float32).max)
        if not (np.isfinite(low) and np.isfinite(high) and high - low <= largest):
            raise BadInput(f"inputs={text!r}: LOW and HIGH must be finite numbers less than {largest:.3g} "
                               f"apart for an input of dtype {dtype}")


def check_numeric(signature: list[dict], kind: str, label: str) -> None:
    """Refuse a model with a string (or other non-numeric) input or output (`kind`: "input", "output"), before
    any work: rosetta can neither draw values for it nor compare it, and no target framework's converter takes
    it (it used to reach a worker as an object array: 'Object arrays cannot be loaded', an ERROR row)."""
    for entry in signature:
        try:
            dtype = np.dtype(entry["dtype"])
        except TypeError:
            dtype = None
        if dtype is not None and dtype.kind in "biufc":
            continue
        what = "string" if dtype is None or dtype.kind in "OSU" else dtype.name
        raise Unsupported(f"{label}: {kind} {entry['name']!r} is a {what} tensor; rosetta converts and verifies "
                          f"models of numeric tensors only ({what} {kind}s are not supported)")


def _shape_text(shape) -> str:
    return "x".join("N" if d is None else str(d) for d in shape)


def resolve_inputs(signature: list[dict], overrides: list[TensorSpec], label: str, like: tuple = (),
                   partial: bool = False) -> tuple[TensorSpec, ...]:
    """The model's inputs, each with a concrete shape but for a free batch axis, checked against --input.
    A free axis no --input sizes is sized from `like` (the inputs of the model it is compared with) where one of
    them pairs with it (paired_like). `partial`: an --input that names none of its inputs is another model's,
    left to it (the caller checks that some model took it), not refused."""
    given = {spec.name: spec for spec in overrides}
    unknown = sorted(set(given) - {entry["name"] for entry in signature})
    if partial:
        given = {name: spec for name, spec in given.items() if name not in unknown}
        unknown = []
    if unknown:
        raise UnknownInput(f"inputs={unknown[0]!r}: {label} has no input of that name; its inputs are "
                           f"{', '.join(entry['name'] for entry in signature)}")
    resolved = []
    for entry in signature:
        name, dims, dtype = entry["name"], list(entry["shape"]), entry["dtype"]
        override = given.get(name)
        if override is not None:
            fixed = [d if isinstance(d, int) and d > 0 else None for d in dims]
            clash = len(override.shape) != len(dims) or any(
                m is not None and o != m for o, m in zip(override.shape, fixed) if not (o is None and m is None))
            if clash:
                raise UnknownInput(f"inputs={name}: shape {_shape_text(override.shape)} does not match the model, "
                                   f"which expects {_shape_text(fixed)}")
            if np.dtype(override.dtype) != np.dtype(dtype):
                raise UnknownInput(f"inputs={name}: dtype {override.dtype} does not match the model, which "
                                   f"expects {dtype}")
            if override.low is None and override.high is None and entry.get("high"):
                override = replace(override, high=entry["high"])  # the model's index range, where it has one
            resolved.append(override)
            continue
        shape, paired = [], paired_like(entry, signature, like)
        for axis, dim in enumerate(dims):
            if isinstance(dim, int) and dim > 0:
                shape.append(dim)
            elif axis == 0:
                shape.append(None)
            elif paired is not None and isinstance(paired.shape[axis], int):
                shape.append(paired.shape[axis])
            else:
                raise BadInput(f"input {name!r} of {label} has a free axis {axis} ({dim or '?'}); give its size "
                                   f"with inputs={name}:{_shape_text([None] + [d if isinstance(d, int) and d > 0 else 'SIZE' for d in dims[1:]])}:{dtype}")
        resolved.append(TensorSpec(name, tuple(shape), dtype, high=entry.get("high")))  # high: an index range
    return tuple(resolved)


def _kind(dtype: str) -> str:
    return "b" if np.dtype(dtype).kind == "b" else "f" if np.dtype(dtype).kind in "fc" else "i"


def paired_like(entry: dict, signature: list[dict], like: tuple) -> TensorSpec | None:
    """The input of the other model that `entry` pairs with, to size its free axes from: the one of its name and
    rank, else the only one of its rank and kind of dtype (integer, float, bool) that no input of this model
    names (or several, all of one shape); None where none or several of other shapes fit (its size is then asked
    for)."""
    rank = len(entry["shape"])
    same = [spec for spec in like if spec.name == entry["name"] and len(spec.shape) == rank]
    if same:
        return same[0]
    names = {other["name"] for other in signature}
    fitting = [spec for spec in like if spec.name not in names and len(spec.shape) == rank
               and _kind(spec.dtype) == _kind(entry["dtype"])]
    # several fit but all of one shape (token ids, segment ids and a mask, all (N, T)): whichever it pairs with,
    # its free axes take the same sizes
    return fitting[0] if fitting and all(tuple(spec.shape) == tuple(fitting[0].shape) for spec in fitting) else None
