"""What the test processes share: `make test` runs pytest-xdist with two processes, and a folder that costs a
minute to build (users' model files, attack SavedModels, converted artifacts) is built once per run, by
whichever process asks first, not once per process."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Callable, Iterable

import pytest

from rosetta.scratch import exclusive

COMPLETE = ".complete"


def run_folder(tmp_path_factory) -> Path:
    """The folder every process of this run can see: pytest's base temp, or under xdist its parent."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def shared_folder(tmp_path_factory, name: str, build: Callable[[Path], None]) -> Path:
    """run_folder/name, made by `build(folder)` once per run; the others wait for it, then reuse it."""
    root = run_folder(tmp_path_factory)
    folder = root / name
    with exclusive(root / f".{name}.lock"):
        if not (folder / COMPLETE).is_file():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            build(folder)
            (folder / COMPLETE).touch()
    return folder


def torch_has_cuda() -> bool:
    """Whether this machine has a GPU PyTorch can use: `gpu`-marked tests run only where it does (conftest)."""
    import torch

    return torch.cuda.is_available()


def communicate_within(process, limit: float, what: str) -> tuple[str, str]:
    """(stdout, stderr) of `process` (started with start_new_session=True) within `limit` seconds; one still
    running then is killed with its whole process group, and the test fails saying `what` ran on."""
    import signal
    import subprocess

    import pytest

    try:
        return process.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        pytest.fail(f"{what} still ran after {limit:g} s")


def fixed_subset(cases: Iterable, in_subset: Callable[..., bool], ids: Callable[..., str] | None = None,
                 every: dict[str, Callable[..., object]] | None = None) -> list:
    """A matrix's cases as pytest params: those `in_subset` keeps run in `make test`; the others are marked
    `whole` and run only in the whole suite (`make test-all`). Each file says its subset's rule; `every` names
    what the subset must still hold each of (e.g. {"target": lambda fault, target: target}), checked here, so a
    new registry entry the rule would leave out fails at collection instead of going untested in `make test`."""
    cases = [case if isinstance(case, tuple) else (case,) for case in cases]
    kept = [case for case in cases if in_subset(*case)]
    for what, key in (every or {}).items():
        missing = {key(*case) for case in cases} - {key(*case) for case in kept}
        if missing:
            raise AssertionError(f"the fixed subset leaves out every case of {what} {sorted(map(str, missing))}")
    return [pytest.param(*case, marks=() if case in kept else (pytest.mark.whole,), id=ids(*case) if ids else None)
            for case in cases]
