"""Shared fixtures: one artifact store and one reference cache per test session, so each heavy artifact
(e.g. the ResNet-50 ONNX export) is converted once and shared by every test that needs it."""

from __future__ import annotations

import pytest

from rosetta.convert.store import ArtifactStore


@pytest.fixture(scope="session")
def store(tmp_path_factory) -> ArtifactStore:
    return ArtifactStore(tmp_path_factory.mktemp("artifacts"))


@pytest.fixture(scope="session")
def references() -> dict:
    return {}
