"""Every registered conversion, target and framework resolves; heavy frameworks load only when used."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from rosetta.cli.options import add_export_options, export_options
from rosetta.convert.registry import get_conversion, list_conversions
from rosetta.convert.store import ArtifactStore
from rosetta.convert.targets import TARGETS
from rosetta.frameworks import FRAMEWORKS
from rosetta.models import get_model


@pytest.mark.parametrize("path", list_conversions(), ids=lambda p: p.name)
def test_conversion_entry_points_load(path):
    assert callable(path.load())


@pytest.mark.parametrize("target", list(TARGETS), ids=lambda t: t.name)
def test_every_target_chain_is_made_of_registered_conversions_and_a_known_framework(target):
    for source, destination in zip(target.chain, target.chain[1:]):
        get_conversion(source, destination)
    assert target.runner in FRAMEWORKS


@pytest.mark.parametrize("target", list(TARGETS), ids=lambda t: t.name)
def test_an_artifact_is_stored_under_its_effective_export_settings(target, tmp_path):
    """`verify` passes the CLI's settings, `bench` none: spelling out a default must not make a second
    conversion, and a setting that differs must."""
    parser = argparse.ArgumentParser()
    add_export_options(parser)
    store, spec = ArtifactStore(tmp_path), get_model("cnn")
    folder = store.folder_for(spec, 0, target.chain, target.export_options())
    assert folder == store.folder_for(spec, 0, target.chain, target.export_options(export_options(parser.parse_args([]))))
    assert folder == store.folder_for(spec, 0, target.chain, target.export_options({"opset": 17}))
    # no exporter chosen is TorchScript's with dynamo's as the second way in; TorchScript's asked for has none
    assert folder != store.folder_for(spec, 0, target.chain, target.export_options({"exporter": "torchscript"}))
    assert folder != store.folder_for(spec, 0, target.chain, target.export_options({"opset": 13}))


def test_an_artifact_made_by_another_converter_version_is_made_again(tmp_path, monkeypatch):
    """The store's key holds rosetta's version and every converter's on the chain: an upgrade re-converts."""
    from rosetta.convert import registry

    store, spec, chain = ArtifactStore(tmp_path), get_model("cnn"), ("torch", "onnx", "mxnet")
    before, prefix = store.folder_for(spec, 0, chain), store.folder_for(spec, 0, chain[:2])
    assert get_conversion("onnx", "mxnet").versions()["mxnet"] != "not installed"
    real = registry.ConversionPath.versions
    monkeypatch.setattr(registry.ConversionPath, "versions",
                        lambda path: {**real(path), **({"mxnet": "0.0"} if "mxnet" in path.packages else {})})
    assert store.folder_for(spec, 0, chain) != before
    assert store.folder_for(spec, 0, chain[:2]) == prefix  # the ONNX export it starts from is still good
    monkeypatch.undo()
    monkeypatch.setattr("rosetta.version.__version__", "9.9.9")
    assert store.folder_for(spec, 0, chain) != before


def test_help_imports_no_framework():
    code = ("import sys, rosetta.cli as c\n"
            "try:\n    c.main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('torch', 'tensorflow', 'mxnet', 'onnxruntime', 'keras') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_an_artifact_made_by_other_conversion_code_is_made_again(tmp_path, monkeypatch):
    """rosetta's version alone does not say which bridge made an artifact: the key holds a digest of the code."""
    from rosetta import manifest
    from rosetta.convert import store as stores

    store, spec, chain = ArtifactStore(tmp_path), get_model("cnn"), ("torch", "onnx", "mxnet")
    before = store.folder_for(spec, 0, chain)
    assert manifest.code_digest("convert") != manifest.code_digest("convert", "frameworks")
    monkeypatch.setattr(stores, "code_digest", lambda *packages: "edited")
    assert store.folder_for(spec, 0, chain) != before


def test_each_bridge_reports_its_coverage_from_its_registry():
    """What conformance can show per target: the ops each bridge registers (with the opsets they start at) and
    the rewrites each pipeline runs, read from the registries, not from a table."""
    from rosetta.convert.onnx.bridges import registered_ops, rewrites
    from rosetta.convert.onnx.to_keras.registry import converter_for

    assert registered_ops("keras")["LRN"] == [1] and converter_for("", "LRN", 13) is not None
    assert 7 in registered_ops("torch")["Dropout"] and registered_ops("torch")["GRU"] == [7, 14]
    assert registered_ops("mxnet")["Mod"] == [10]
    assert registered_ops("tensorflow") == {} and registered_ops("onnxruntime") == {}
    assert "explicit_pads" in rewrites("tensorflow") and rewrites("onnxruntime") == []
