"""Every registered conversion, target and framework resolves; heavy frameworks load only when used."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rosetta.convert.registry import get_conversion, list_conversions
from rosetta.convert.targets import TARGETS
from rosetta.frameworks import FRAMEWORKS


@pytest.mark.parametrize("path", list_conversions(), ids=lambda p: p.name)
def test_conversion_entry_points_load(path):
    assert callable(path.load())


@pytest.mark.parametrize("target", list(TARGETS), ids=lambda t: t.name)
def test_every_target_chain_is_made_of_registered_conversions_and_a_known_framework(target):
    for source, destination in zip(target.chain, target.chain[1:]):
        get_conversion(source, destination)
    assert target.runner in FRAMEWORKS


def test_help_imports_no_framework():
    code = ("import sys, rosetta.cli as c\n"
            "try:\n    c.main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('torch', 'tensorflow', 'mxnet', 'onnxruntime', 'keras') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip().splitlines()[-1] == "[]"
