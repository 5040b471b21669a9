"""What installs each framework and converter rosetta does not need to start: the extra of dl-rosetta that
brings it (pyproject.toml's [project.optional-dependencies]), and the Pythons it has no wheel for. A module
that is missing is then one line that says what to install (or that it cannot be, on this Python), never a
traceback: in `rosetta env`, and as the CANNOT row of a target that needs it."""

from __future__ import annotations

import importlib.util
import sys

# the module a target imports -> the extra that installs it
EXTRA_OF = {
    "tensorflow": "tensorflow", "tf2onnx": "tensorflow", "onnx2tf": "tensorflow", "onnx_graphsurgeon": "tensorflow",
    "sng4onnx": "tensorflow", "sne4onnx": "tensorflow", "ai_edge_litert": "tensorflow", "psutil": "tensorflow",
    "keras": "keras", "jax": "jax", "jaxlib": "jax", "mxnet": "mxnet", "ray": "ray",
}
# installed with --no-deps (requirements/no-deps.txt says why), so no extra can bring them
NO_DEPS = {"onnx2torch": "onnx2torch", "tf_keras": "tf-keras", "mmdnn": "mmdnn", "torchvision": "torchvision",
           "timm": "timm", "transformers": "transformers"}
# a module that cannot be installed on some Pythons, for want of a wheel of its own or of a package it needs: (the
# first Python without, why). Measured with `pip download --no-deps --only-binary=:all: --python-version X.Y` of
# every pin; tests/test_install.py holds pyproject.toml's markers to it.
UNAVAILABLE = {
    "mxnet": ((3, 13), "MXNet 1.9.1 needs numpy < 2, which has no wheel for Python 3.13"),
}


def installed(module: str) -> bool:
    """Whether `module` (a top-level name) can be found, without importing it."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a module left half-imported, or set to None in sys.modules
        return False


def missing_message(name: str, python: tuple[int, int] | None = None) -> str:
    """One line: module `name` is not installed here, and what installs it (or that nothing can, on this
    Python: `python`, else the running one)."""
    module = name.split(".")[0]
    python = tuple(python or sys.version_info[:2])
    first, why = UNAVAILABLE.get(module, (None, ""))
    if first and python >= first:
        return (f"{module} cannot be installed on Python {python[0]}.{python[1]} ({why}); "
                f"use Python {first[0]}.{first[1] - 1} or older for this target")
    if module in EXTRA_OF:
        return f"{module} is not installed: pip install 'dl-rosetta[{EXTRA_OF[module]}]'"
    if module in NO_DEPS:
        return (f"{module} is not installed: pip install --no-deps {NO_DEPS[module]} "
                f"(its pinned version: requirements/no-deps.txt)")
    if module == "distutils":  # gone from the standard library in Python 3.12; MXNet 1.9.1 imports it
        return "distutils is not in this Python's standard library (3.12 and newer): pip install setuptools"
    return f"{name} is not installed in this environment; install it to use this target"


def framework_missing(error: BaseException):
    """The FrameworkMissing (one line naming what to install) for a ModuleNotFoundError, else None (also for a
    module of rosetta's own: nothing to install, a bug of rosetta's, said as one)."""
    from rosetta.errors import FrameworkMissing

    if isinstance(error, ModuleNotFoundError) and error.name and error.name.split(".")[0] != "rosetta":
        return FrameworkMissing(missing_message(error.name))
    return None
