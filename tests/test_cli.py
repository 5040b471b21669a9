"""The CLI as a user meets it: exit codes 0/1/2, one-line errors, JSON as documented."""

from __future__ import annotations

import contextlib
import io
import json
import math
import subprocess
import sys

import pytest

from rosetta.cli import main
from rosetta.errors import RosettaError


def run(*argv: str) -> subprocess.CompletedProcess:
    """`rosetta ARGV` as a user runs it: a process of its own."""
    return subprocess.run([sys.executable, "-m", "rosetta.cli", *argv], capture_output=True, text=True, timeout=600)


def run_here(*argv: str) -> subprocess.CompletedProcess:
    """`rosetta ARGV` through `main` in this process, as `run` reports it: the workers it starts stay warm for
    the next test (a process of its own imports torch and starts TensorFlow's and MXNet's workers anew: seconds
    each). What only a process of its own shows (its entry point, signals) is tested with `run`."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(a) for a in argv])
        except SystemExit as exit:  # argparse's usage errors, --help, --version
            code = exit.code
    return subprocess.CompletedProcess(["rosetta", *argv], code, out.getvalue(), err.getvalue())


def test_version_and_help():
    assert run("--version").stdout.startswith("rosetta ")
    for command in ("models", "convert", "verify", "bench", "conformance", "env"):
        out = run(command, "--help")
        assert out.returncode == 0 and ("example: rosetta" in out.stdout or "examples:\n  rosetta" in out.stdout)
    usage = " ".join(run("--help").stdout.split())
    assert "exit status: 0 no FAIL or ERROR, 1 some FAIL (with --strict: anything but PASS), 2 usage or input " \
           "error, 3 some ERROR and no FAIL" in usage and "CANNOT (a converter refused the model" in usage


def test_models_lists_shapes_and_parameter_counts(tmp_path, capsys):
    assert main(["models", "--json", str(tmp_path / "m.json")]) == 0
    out = capsys.readouterr().out
    assert "3,441,592" in out and "images float32[N,3,32,32]" in out and "23,508,032" in out
    names = [m["name"] for m in json.loads((tmp_path / "m.json").read_text())["models"]]
    assert names == ["cnn", "gru", "resnet50"]


def test_convert_writes_artifact_and_manifest(tmp_path, capsys):
    assert main(["convert", "--model", "cnn", "--to", "onnx", "-o", str(tmp_path / "cnn")]) == 0
    assert (tmp_path / "cnn" / "model.onnx").is_file()
    manifest = json.loads((tmp_path / "cnn" / "manifest.json").read_text())
    assert manifest["source"] == {"model": "cnn", "seed": 0} and manifest["opset"] == 17
    # a reference model named as MODEL is converted as with --model (and --json is its manifest)
    assert main(["convert", "cnn", "--to", "onnx", "-o", str(tmp_path / "named"), "--json", str(tmp_path / "m.json")]) == 0
    assert json.loads((tmp_path / "m.json").read_text())["sha256"] == manifest["sha256"]


def test_verify_passes_and_writes_json(tmp_path):
    out = run("verify", "--model", "cnn,gru", "--targets", "onnxruntime", "--batch", "4", "--seed", "1",
              "--json", str(tmp_path / "r.json"))
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.count("PASS") == 2
    rows = json.loads((tmp_path / "r.json").read_text())["results"]
    assert [(r["model"], r["target"], r["route"], r["verdict"]) for r in rows] == [
        ("cnn", "onnxruntime", "onnx", "PASS"), ("gru", "onnxruntime", "onnx", "PASS")]
    assert rows[0]["batch"] == 4 and rows[0]["seed"] == 1


def test_verify_exit_status_is_1_when_a_verdict_fails(tmp_path):
    out = run_here("verify", "--model", "cnn", "--training", "train", "--json", str(tmp_path / "r.json"))
    assert out.returncode == 1
    assert "FAIL" in out.stdout and "exported in training mode" in out.stdout
    assert json.loads((tmp_path / "r.json").read_text())["results"][0]["verdict"] == "FAIL"


@pytest.mark.parametrize("argv,message", [
    (["verify", "--model", "vgg"], "unknown model 'vgg'"),
    (["verify", "--model", "cnn", "--targets", "caffe"], "unknown target 'caffe'"),
    (["verify", "--model", "cnn", "--via", "mmdnnx"], "unknown route 'mmdnnx'"),
    (["verify", "--batch", "0"], "expected a positive integer, got '0'"),
    (["verify", "--seed", "x"], "expected seeds like 0 or 0,1,2"),
    (["verify", "--atol", "-1"], "expected a finite number >= 0"),
    (["verify", "--json", "/nonexistent-dir/r.json"], "folder /nonexistent-dir does not exist"),
    (["convert", "--model", "cnn", "--to", "caffe", "-o", "x"], "cannot convert to 'caffe'"),
    (["convert", "--model", "cnn", "--to", "onnx"], "the following arguments are required: -o/--output"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
    (["verify", "--model", "cnn", "--targets", "onnxruntime", "--train-steps", "2"],
     "--train-steps: onnxruntime (onnx) can only infer; trainable targets: torch, keras, mxnet (onnx route)"),
    (["verify", "--train-steps", "0"], "expected a positive integer, got '0'"),
    (["bench", "--workload", "lstm-train"], "unknown workload 'lstm-train'"),
    (["bench", "--device", "tpu"], "invalid choice: 'tpu'"),
    (["bench", "--steps", "2", "--epochs", "1"], "not allowed with argument"),
    (["bench", "--data", "/nonexistent-data"], "--data /nonexistent-data: no such folder"),
    (["verify", "--model", "cnn", "--executor", "ray", "--jobs", "2"], "--jobs is for --executor local"),
])
def test_user_errors_are_one_line_and_exit_2(argv, message):
    out = run_here(*argv)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rosetta: error:") and message in lines[0], out.stderr
    assert "Traceback" not in out.stderr


def test_verify_train_steps_adds_training_rows(tmp_path):
    out = run_here("verify", "--model", "cnn", "--targets", "torch", "--train-steps", "2", "--precision", "float64",
                   "--json", str(tmp_path / "r.json"))
    assert out.returncode == 0, out.stdout + out.stderr
    rows = json.loads((tmp_path / "r.json").read_text())["results"]
    assert [(r["check"], r["target"], r["verdict"]) for r in rows] == [("inference", "torch", "PASS"),
                                                                       ("training", "torch", "PASS")]
    assert rows[1]["training"]["steps"] == 2 and rows[1]["training"]["optimizer"]["name"] == "sgd"
    assert "loss[2 steps]" in out.stdout and "weights (sorted)" in out.stdout


def test_bench_writes_table_json_and_chart(tmp_path):
    out = run_here("bench", "--workload", "gru-train", "--targets", "torch", "--steps", "1", "--no-overhead",
                   "--json", str(tmp_path / "b.json"), "--plot-dir", str(tmp_path / "charts"))
    assert out.returncode == 0, out.stdout + out.stderr
    data = json.loads((tmp_path / "b.json").read_text())
    assert [(r["target"], r["status"]) for r in data["results"]] == [("torch (reference)", "ok"), ("torch", "ok")]
    assert "s/epoch" in out.stdout and "takes" in out.stdout
    assert "benchmark cells one at a time, never side by side" in data["executor"] and "executor: local" in out.stdout
    assert (tmp_path / "charts" / "gru-train.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_unwritable_output_folder_is_refused_and_nothing_written(tmp_path):
    (tmp_path / "a-file").write_text("not a folder")
    out = run_here("convert", "--model", "cnn", "--to", "onnx", "-o", str(tmp_path / "a-file" / "cnn"))
    assert out.returncode == 2 and "is a file, not a folder" in out.stderr and "Traceback" not in out.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


def test_unwritable_json_is_refused_before_any_work(tmp_path):
    out = run_here("verify", "--model", "cnn", "--json", str(tmp_path))
    assert out.returncode == 2 and "is a folder; give a file name" in out.stderr


def test_existing_output_folder_is_refused_without_force(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "mine.txt").write_text("x")
    out = run_here("convert", "--model", "cnn", "--to", "onnx", "-o", str(tmp_path / "out"))
    assert out.returncode == 2 and "exists and is not empty; choose another or pass --force" in out.stderr
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["mine.txt"]


def test_tolerance_options_make_the_policy():
    from rosetta.verify.tolerance import DEFAULT_MULTIPLE, policy_from_options

    policy = policy_from_options([("", 1e-3), ("logits", 1e-4), ("", 2e-3)], [("", 0.1)], None)
    assert (policy.atol, policy.rtol, policy.per_output) == (2e-3, 0.1, (("logits", "atol", 1e-4),))
    assert policy_from_options([], [], None).multiple == DEFAULT_MULTIPLE
    assert policy_from_options([], [], None, 50.0).multiple == 50.0
    assert policy_from_options([], [], 3.0, 50.0).multiple == 3.0
    with pytest.raises(RosettaError, match="give either tolerance= or atol=/rtol=, not both") as refused:
        policy_from_options([("", 1.0)], [], 3.0)
    from rosetta.cli.flags import as_flags  # the library names its parameters, the command line its flags

    assert as_flags(str(refused.value)) == "give either --tolerance-multiple or --atol/--rtol, not both"


def test_bench_epochs_are_whole_epochs_of_steps():
    from rosetta.bench.plan import steps_for
    from rosetta.bench.workloads import WORKLOADS

    workload = WORKLOADS.get("cnn-train")
    assert steps_for(workload, 5, None) == 5 and steps_for(workload, None, None) == 0
    assert steps_for(workload, None, 2) == 2 * math.ceil(workload.epoch_samples / workload.batch)
