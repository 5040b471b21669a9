"""rosetta env: each framework's version, devices, CUDA/cuDNN and settings, read where rosetta runs it."""

from __future__ import annotations

import json
from importlib.metadata import version

import pytest

from rosetta.cli import main
from rosetta.convert.targets import get_target
from rosetta.errors import RosettaError
from rosetta.frameworks import load_runner
from rosetta.models import get_model
from rosetta.models.inputs import generate_inputs

# the distributions each framework comes in: the CPU build, or (make install GPU=1) the CUDA one
PACKAGES = {"onnxruntime": ("onnxruntime", "onnxruntime-gpu"), "torch": ("torch",),
            "tensorflow": ("tensorflow-cpu", "tensorflow"), "mxnet": ("mxnet",)}


def installed_version(packages: tuple[str, ...]) -> str:
    from importlib.metadata import PackageNotFoundError, version

    for package in packages:
        try:
            return version(package)
        except PackageNotFoundError:
            continue
    raise AssertionError(f"none of {packages} is installed")


def test_env_names_every_framework_with_what_it_sees(tmp_path, capsys):
    import torch

    out = tmp_path / "env.json"
    assert main(["env", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    rows = {row["framework"]: row for row in data["frameworks"]}
    assert set(rows) == {"onnxruntime", "torch", "tensorflow", "keras", "mxnet"}
    for name, packages in PACKAGES.items():
        assert rows[name]["version"] == installed_version(packages) and not rows[name]["error"], rows[name]
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


@pytest.mark.parametrize("target", ["onnxruntime", "torch", "tensorflow", "keras", "mxnet"])
def test_a_runner_asked_for_a_gpu_it_does_not_see_refuses_instead_of_running_on_the_cpu(store, target):
    """This machine has no GPU: every framework must say so for --device cuda. ONNX Runtime used to warn (the
    warning silenced) and run on the CPU, and the TensorFlow and Keras runners ignored the device, so a bench
    row labelled cuda could be a CPU timing."""
    spec, chosen = get_model("cnn"), get_target(target)
    folder = store.get(spec, 0, chosen.chain, chosen.export_options())
    with pytest.raises(RosettaError, match=r"device='cuda': .*(sees no (GPU|CUDA device)|no working CUDA)"):
        load_runner(chosen.runner, folder, device="cuda").predict(generate_inputs(spec.inputs, 2, 0))


def test_keras_reports_the_devices_its_backend_sees(monkeypatch):
    """Keras on JAX used to be reported CPU-only whatever JAX saw: its row now lists JAX's own devices (JAX's
    'cpu:0', then any 'gpu:N'), and names the devices of each other backend it could be switched to."""
    from rosetta.execution import run_job

    monkeypatch.setenv("KERAS_BACKEND", "jax")  # the worker's Keras
    row = run_job("rosetta.frameworks:environment_job", {"framework": "keras"}, "tensorflow")
    assert row["version"].endswith("(jax backend)") and row["devices"][0] == "cpu:0"
    assert all(device.startswith(("cpu:", "gpu:")) for device in row["devices"])
    assert row["settings"]["jax matmul precision"].startswith("highest unless a run's precision is tf32")
    assert row["settings"]["with KERAS_BACKEND=torch"].startswith("cpu")
