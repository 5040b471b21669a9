"""Shared fixtures: one artifact store and one reference cache per test session, so each heavy artifact
(e.g. the ResNet-50 ONNX export) is converted once and shared by every test that needs it.

`make test` runs the tests in two pytest-xdist processes; they share one store folder (the store locks each
artifact while it makes it), so an artifact is still converted once per run, not once per process."""

from __future__ import annotations

import signal

import pytest

from rosetta.convert.store import ArtifactStore
from tests.shared import run_folder


@pytest.fixture(scope="session")
def store(tmp_path_factory) -> ArtifactStore:
    root = run_folder(tmp_path_factory) / "artifacts"
    root.mkdir(exist_ok=True)
    return ArtifactStore(root)


@pytest.fixture(scope="session")
def references() -> dict:
    return {}


def _module_fixture_users_in_one_process(items) -> None:
    """A module-scoped fixture is computed once per process, so under xdist once in each process that runs one of
    its tests (test_port_training_pairs' minute of training, twice). The tests that use one run in one process
    (`--dist loadgroup`, grouped by module), unless a test names its group itself."""
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        if info is None or item.get_closest_marker("xdist_group"):
            continue
        if any(definition.scope == "module" for definitions in info.name2fixturedefs.values()
               for definition in definitions):
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups (its worker's own hook)
def pytest_collection_modifyitems(config, items) -> None:
    """Tests marked `gpu` run wherever PyTorch sees a CUDA device and are skipped, saying so, elsewhere."""
    _module_fixture_users_in_one_process(items)
    gpu_tests = [item for item in items if item.get_closest_marker("gpu")]
    if gpu_tests:
        from tests.shared import torch_has_cuda

        if not torch_has_cuda():
            for item in gpu_tests:
                item.add_marker(pytest.mark.skip(reason="needs a CUDA GPU (PyTorch sees none)"))


def pytest_configure(config) -> None:
    """Ctrl-C is tested (tests/security/test_lifecycle.py, tests/faults/test_outputs.py) even where the suite was
    started with SIGINT ignored: a job a non-interactive shell puts in the background (`make test &`), or nohup,
    inherits SIG_IGN, which Python and rosetta rightly keep, and which every process a test starts inherits too
    (the three SIGINT tests then failed: no KeyboardInterrupt, a run that never stopped, one that finished)."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)  # reset to the default in every child it starts
