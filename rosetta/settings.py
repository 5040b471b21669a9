"""The options every run shares, as two frozen objects built and checked once where a run starts (the API) and
passed down whole: `RunSettings` (how much, where and how a run goes: batch, seed, threads, device, executor,
timeout, files) and `Tolerance` (atol, rtol, the multiple of the noise floor). A value a field does not take is
a BadInput that names the field (the parameter), never a command-line flag: cli/ says its own flags."""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from rosetta.errors import BadInput


def whole(minimum: int) -> Callable[[Any], bool]:
    return lambda value: isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= minimum


def positive(value) -> bool:
    return (isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
            and value > 0)


def flag(value) -> bool:
    return isinstance(value, bool) or (type(value).__module__ == "numpy" and type(value).__name__ in ("bool_", "bool"))


def text(value) -> bool:
    return isinstance(value, str) and bool(value.strip())


def path_like(value) -> bool:
    return isinstance(value, os.PathLike) or text(value)


def shown(value) -> str:
    """A value as a message quotes it, on one line and short (an array by its shape and dtype)."""
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return f"a {type(value).__name__} of shape {tuple(value.shape)} and dtype {value.dtype}"
    words = " ".join(repr(value).split())
    return words if len(words) <= 60 else words[:57] + "..."


FLAG = (flag, "True or False")
TEXT = (text, "a non-empty string")
PATH = (path_like, "a path (a string or os.PathLike)")

# what each RunSettings field takes: a check, and the words of the BadInput that refuses anything else
RUN_TAKES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "batch": (whole(1), "a whole number, 1 or more"),
    "seed": (whole(0), "a whole number, 0 or more (the inputs' and weights' random seed)"),
    "threads": (whole(0), "a whole number of threads, 0 or more (0: each framework's default)"),
    "device": (lambda v: v in ("cpu", "cuda"), "'cpu' or 'cuda'"),
    "max_memory": (positive, "a positive number of GiB"),
    "trust_code": FLAG,
    "progress": FLAG,
    "verbose": FLAG,
    "executor": TEXT,
    "jobs": (whole(1), "a whole number of jobs at a time, 1 or more"),
    "address": TEXT,
    "timeout": (positive, "a positive number of seconds"),
    "work_dir": PATH,
    "results_file": PATH,
}


@dataclass(frozen=True)
class RunSettings:
    """How a run goes, shared by verify, convert, bench and conformance (each reads the fields it needs).

    batch: rows per generated batch (None: each call's default, 8 for verify and convert, DLF's for bench);
    seed: the inputs' and weights' seed; threads: each framework's threads (0: its default); device: where the
    compared or timed models run ("cpu", "cuda"); max_memory: GiB the generated inputs may take (None: a share
    of the machine); trust_code: let model files run their code; progress: draw a bar; verbose: frameworks'
    logs; executor ("local", "ray"), jobs (at a time), address (Ray's): where cells run; timeout: seconds a
    worker may take; work_dir: where artifacts are kept (None: a temporary folder); results_file: where the
    caller writes the results, checked writable before any work."""

    batch: int | None = None
    seed: int = 0
    threads: int = 0
    device: str = "cpu"
    max_memory: float | None = None
    trust_code: bool = False
    progress: bool = False
    verbose: bool = False
    executor: str = "local"
    jobs: int | None = None
    address: str | None = None
    timeout: float | None = None
    work_dir: Path | None = None
    results_file: Path | None = None

    def __post_init__(self) -> None:
        for field in fields(self):
            value = getattr(self, field.name)
            if value is None and field.default is None:
                continue
            check, takes = RUN_TAKES[field.name]
            if not check(value):
                raise BadInput(f"{field.name}: {takes}; got {shown(value)}")
            if field.name in ("work_dir", "results_file"):
                object.__setattr__(self, field.name, Path(value))
            elif field.name in ("trust_code", "progress", "verbose"):
                object.__setattr__(self, field.name, bool(value))

    def updated(self, **changes) -> "RunSettings":
        """A copy with `changes`, checked as the fields are."""
        return replace(self, **changes)


def _bound(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and 0 <= value < math.inf


def _pairs(name: str, given) -> tuple[tuple[str, float], ...]:
    """atol or rtol as (output name, value) pairs ('' for every other output): from a number, a mapping by
    output name, or pairs."""
    if given is None:
        return ()
    if isinstance(given, Mapping) and all(isinstance(k, str) and _bound(v) for k, v in given.items()):
        return tuple((key, float(value)) for key, value in given.items())
    if _bound(given):
        return (("", float(given)),)
    if isinstance(given, (list, tuple)) and all(isinstance(p, (list, tuple)) and len(p) == 2 and isinstance(p[0], str)
                                                and _bound(p[1]) for p in given):
        return tuple((key, float(value)) for key, value in given)
    raise BadInput(f"{name}: a number (0 or more, finite) for every output, or {{output name: number}} "
                   f"(the name '' for every other output); got {shown(given)}")


@dataclass(frozen=True)
class Tolerance:
    """What a comparison allows: `multiple` of the reference's float32 noise floor (None: the calibrated
    default), or absolute and relative bounds, `atol` and `rtol`: a number for every output, {output name:
    number}, or (name, number) pairs, the name '' for every other output. Kept as pairs."""

    atol: tuple[tuple[str, float], ...] = ()
    rtol: tuple[tuple[str, float], ...] = ()
    multiple: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "atol", _pairs("atol", self.atol))
        object.__setattr__(self, "rtol", _pairs("rtol", self.rtol))
        if self.multiple is not None:
            if not _bound(self.multiple):
                raise BadInput(f"tolerance: a multiple of the noise floor (0 or more), or {{'atol': ..., 'rtol': ...}}; "
                               f"got {self.multiple!r}")
            object.__setattr__(self, "multiple", float(self.multiple))

    @classmethod
    def given(cls, tolerance=None, atol=None, rtol=None) -> "Tolerance":
        """The API's forms: `tolerance` a Tolerance, a number (the multiple) or {"atol": ..., "rtol": ...,
        "multiple": ...}; `atol`, `rtol` beside it (they win over the same fields of `tolerance`)."""
        if isinstance(tolerance, Tolerance):
            return replace(tolerance, **{name: value for name, value in (("atol", atol), ("rtol", rtol))
                                         if value is not None})
        if isinstance(tolerance, Mapping):
            unknown = sorted(map(str, set(tolerance) - {"atol", "rtol", "multiple"}))
            if unknown:
                raise BadInput(f"tolerance: a number, or a dict of 'atol', 'rtol', 'multiple'; got the key(s) "
                               f"{', '.join(unknown)}")
            atol, rtol = tolerance.get("atol", atol), tolerance.get("rtol", rtol)
            tolerance = tolerance.get("multiple")
        if tolerance is not None and not _bound(tolerance):
            raise BadInput(f"tolerance: a multiple of the noise floor (0 or more), or {{'atol': ..., 'rtol': ...}}; "
                           f"got {tolerance!r}")
        return cls(_pairs("atol", atol), _pairs("rtol", rtol), tolerance)

    @property
    def given_multiple(self) -> bool:
        """The caller chose the multiple (the calibration then keeps it)."""
        return self.multiple is not None


def listed(names) -> list[str]:
    """Names as a list: a list or tuple as given, or the command line's "a,b" text split (blanks dropped)."""
    if isinstance(names, str):
        return [name.strip() for name in names.split(",") if name.strip()]
    return [str(name).strip() for name in names if str(name).strip()]
