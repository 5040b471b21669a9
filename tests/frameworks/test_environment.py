"""rosetta env: each framework's version, devices, CUDA/cuDNN and settings, read where rosetta runs it."""

from __future__ import annotations

import json
from importlib.metadata import version

from rosetta.cli import main

PACKAGES = {"onnxruntime": "onnxruntime", "torch": "torch", "tensorflow": "tensorflow-cpu", "mxnet": "mxnet"}


def test_env_names_every_framework_with_what_it_sees(tmp_path, capsys):
    import torch

    out = tmp_path / "env.json"
    assert main(["env", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    rows = {row["framework"]: row for row in data["frameworks"]}
    assert set(rows) == {"onnxruntime", "torch", "tensorflow", "keras", "mxnet"}
    for name, package in PACKAGES.items():
        assert rows[name]["version"] == version(package) and not rows[name]["error"], rows[name]
    assert rows["keras"]["version"].startswith(version("keras"))
    assert all(row["devices"][0].startswith("cpu") for row in rows.values())
    # torch's row is what torch says in this process: no CUDA device on a machine without one
    assert (len(rows["torch"]["devices"]) > 1) == torch.cuda.is_available()
    assert rows["torch"]["cuda"] == torch.version.cuda
    assert rows["tensorflow"]["settings"]["intra-op threads"] == "default"
    assert {"onnx", "onnx2tf", "tf2onnx", "onnx2torch", "mmdnn"} <= set(data["converters"])
    assert "rosetta env" in capsys.readouterr().out


def test_a_framework_that_cannot_be_imported_is_a_row_that_says_so(tmp_path, monkeypatch, capsys):
    broken = tmp_path / "site"
    broken.mkdir()
    (broken / "mxnet.py").write_text("raise ImportError('libmxnet.so: cannot open shared object file')\n")
    monkeypatch.setenv("PYTHONPATH", str(broken))  # the MXNet worker imports this one
    out = tmp_path / "env.json"
    assert main(["env", "--json", str(out)]) == 3
    rows = {row["framework"]: row for row in json.loads(out.read_text())["frameworks"]}
    assert "libmxnet.so: cannot open shared object file" in rows["mxnet"]["error"]
    assert not rows["onnxruntime"]["error"]
    assert "not usable" in capsys.readouterr().out
