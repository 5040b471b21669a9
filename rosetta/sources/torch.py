"""PyTorch models of users: a factory function (`file.py:build`, `package.module:build`), which is code and
runs only with --trust-code, or a torch.export archive (.pt2), read without unpickling anything and only
after its expressions, guards and node targets pass rosetta.trust.pt2 (rosetta.frameworks.torch
load_exported). What needs torch itself lives in rosetta.frameworks.torch_sources; its names are re-exported
here, where readers and the API have always found them.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from rosetta.frameworks.torch import load_exported
from rosetta.frameworks.torch_sources import (  # noqa: F401 - the names sources and training setups import from here
    _built,
    as_rosetta_calls,
    check_not_on_meta,
    exported_signature,
    is_training_setup,
    load_factory,
)
from rosetta.sources.readers import write_manifest

ARTIFACT = "model.pt2"


def read(argument: dict) -> dict:
    path = Path(argument["model"]["path"])
    program = load_exported(path, argument["trust_code"])
    shutil.copyfile(path, Path(argument["staging"]) / ARTIFACT)
    inputs, outputs = exported_signature(program)
    return write_manifest(argument, ARTIFACT, "torch-export", inputs, outputs)
