"""One module per framework behind one small interface (base.Runner). Each module is the only place that
imports its framework, and is imported only when a runner for it is asked for."""

from __future__ import annotations

import importlib
from pathlib import Path

from rosetta.errors import RosettaError

# framework name -> "module:RunnerClass" of the runner that loads a converted artifact of that framework
RUNNERS = {
    "onnxruntime": "rosetta.frameworks.onnxruntime:OnnxRuntimeRunner",
}


def runner_class(framework: str):
    try:
        module_name, _, cls = RUNNERS[framework].partition(":")
    except KeyError:
        raise RosettaError(f"no runner for {framework!r}; rosetta has: {', '.join(RUNNERS)}") from None
    return getattr(importlib.import_module(module_name), cls)


def load_runner(framework: str, folder: Path, **options):
    """The runner for an artifact folder written by rosetta (artifact + manifest.json)."""
    from rosetta.convert.manifest import Manifest

    manifest = Manifest.read(folder)
    return runner_class(framework)(Path(folder), manifest, **options)
