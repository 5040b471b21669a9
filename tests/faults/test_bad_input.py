"""Every bad input is one line on stderr, exit 2, before any work, and nothing is written; an error nobody
foresaw is one line too (exit 3), its traceback only with -v."""

from __future__ import annotations

import zipfile

import numpy as np
import pytest

from tests.security import one_line_refusal, run
from tests.test_cli import run_here


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Files that are not what an option wants."""
    folder = tmp_path_factory.mktemp("bad-files")
    (folder / "text.npz").write_text("hello")
    (folder / "random.npz").write_bytes(bytes(range(256)))
    (folder / "cut.npz").write_bytes(b"PK\x03\x04garbage")  # a zip's first bytes, then nothing of one
    with zipfile.ZipFile(folder / "members.npz", "w") as archive:  # a zip whose member is not an .npy array
        archive.writestr("x.npy", "not an array")
    np.savez(folder / "empty.npz")
    (folder / "a-folder.npz").mkdir()
    return folder


@pytest.mark.parametrize("name", ["text", "random", "cut", "members", "empty", "a-folder"])
@pytest.mark.parametrize("option", ["--inputs", "--load-outputs"])
def test_a_file_that_is_not_an_npz_is_one_line(models, files, tmp_path, option, name):
    bad = files / f"{name}.npz"
    good = tmp_path / "in.npz"
    np.savez(good, x=np.zeros((2, 4), np.float32))
    argv = ["--inputs", bad] if option == "--inputs" else ["--inputs", good, "--load-outputs", bad]
    code, err = run("verify", models / "relu.onnx", models / "relu.onnx", *argv)
    one_line_refusal(code, err, f"{option} {bad}:")


BAD_OPTIONS = [
    (["verify", "{m}/empty.onnx", "{m}/relu.onnx"], "empty.onnx is empty (0 bytes)"),
    (["verify", "{m}/cycle.onnx", "{m}/relu.onnx"], "is not output of any previous nodes."),  # the whole sentence
    (["verify", "{m}/relu.onnx", "{m}/relu.onnx", "--batch", "100000", "--max-memory", "0.001"],
     "need 9.2 MiB, more than the 1.0 MiB allowed"),
    (["convert", "--model", "cnn", "--to", "onnx", "--opset", "99"], "ONNX opsets run from 7 to"),
    (["verify", "{m}/relu.onnx", "{m}/relu.onnx", "--atol", "nosuch:1e-3"],
     "--atol nosuch: the reference has no output 'nosuch'; its outputs: y"),
    (["verify", "{m}/relu.onnx", "{m}/relu.onnx", "--rtol", "nosuch:1e-3"], "--rtol nosuch: the reference has no"),
    (["verify", "{m}/relu.onnx", "{m}/relu.onnx", "--targets", "keras"], "--targets is for reference models"),
    (["verify", "{m}/relu.onnx", "{m}/relu.onnx", "--via", "mmdnn"], "--via is for reference models"),
    (["verify", "{m}/relu.onnx", "{m}/relu.onnx", "--work-dir", "w"], "--work-dir is for reference models"),
    (["verify", "{m}/relu.onnx", "{m}/relu.onnx", "--seed", "0,1,2"], "--seed: model files take one seed"),
    (["verify", "--model", "cnn", "--input", "x:Nx4:float32"], "--input needs model files"),
    (["convert", "--model", "cnn", "--to", "onnx", "--atol", "1e-3"], "--atol is for converting a model file"),
    (["convert", "--model", "cnn", "--to", "onnx", "--trust-code"], "--trust-code is for converting a model file"),
    (["convert", "{m}/relu.onnx", "--to", "onnx", "--threads", "-1"], "--threads: expected a whole number >= 0"),
    (["verify", "{m}/relu.onnx", "{m}/relu.onnx", "--input", "x:Nx4:float32:-inf:inf"],
     "LOW and HIGH must be finite numbers"),
    (["verify", "{m}/relu.onnx", "{m}/relu.onnx", "--input", "x:Nx4:int64:0:1e30"],
     "LOW and HIGH of an input of dtype int64 must be whole numbers"),
    (["verify", "{m}/relu.onnx", "{m}/relu.onnx", "--input", "x:Nx4:float32:0:1", "--input", "x:Nx4:float32:5:6"],
     "--input x is given more than once"),
    (["verify", "{m}/relu.onnx", "--save-inputs", "{t}/same.npz", "--save-outputs", "{t}/same.npz"],
     "--save-inputs and --save-outputs name the same file"),
    # a string tensor reached a worker as an object array: 'Object arrays cannot be loaded ...', an ERROR row
    (["verify", "{m}/string-in.onnx", "{m}/relu.onnx"], "string-in.onnx: input 's' is a string tensor; rosetta "
     "converts and verifies models of numeric tensors only (string inputs are not supported)"),
    (["convert", "{m}/string-in.onnx", "--to", "onnx,torch"], "(string inputs are not supported)"),
    (["verify", "{m}/string-out.onnx", "{m}/string-out.onnx"], "string-out.onnx: output 's' is a string tensor; "
     "rosetta converts and verifies models of numeric tensors only (string outputs are not supported)"),
]


@pytest.mark.parametrize("argv,message", BAD_OPTIONS, ids=[m[:40] for _, m in BAD_OPTIONS])
def test_a_bad_option_or_file_is_one_line_before_any_work(models, tmp_path, argv, message):
    argv = [a.format(m=models, t=tmp_path) for a in argv]
    if argv[0] == "convert":
        argv += ["-o", str(tmp_path / "out")]
    code, err = run(*argv)
    one_line_refusal(code, err, message)
    assert list(tmp_path.iterdir()) == []


def test_an_error_nobody_foresaw_is_one_line_and_its_traceback_is_for_v(models, monkeypatch):
    def broken(*args, **kwargs):
        raise TypeError("an unforeseen bug")
    import rosetta.verify.files as files  # the module: rosetta.verify is the API function

    monkeypatch.setattr(files, "second_batch_outputs", broken)
    quiet = run_here("verify", models / "relu.onnx", models / "relu.onnx", "--no-progress")
    assert quiet.returncode == 3 and quiet.stderr == ("rosetta: error: rosetta failed: TypeError: an unforeseen bug (a "
                                                      "bug: run with -v for the traceback, and report it)\n")
    verbose = run_here("verify", models / "relu.onnx", models / "relu.onnx", "--no-progress", "-v")
    assert verbose.returncode == 3 and "Traceback (most recent call last)" in verbose.stderr


def test_a_frameworks_terminal_codes_never_reach_a_message():
    """Keras bolds its messages (ESC[1m...ESC[0m): a row's reason, a one-line error and a failure line are plain."""
    from rosetta.errors import RosettaError, one_line, plain
    from rosetta.report.tables import failure_lines
    from rosetta.verify.results import VerifyResult

    bold = "\x1b[1mThe structure of inputs doesn't match\x1b[0m the expected structure"
    assert one_line(ValueError(bold)) == "ValueError: The structure of inputs doesn't match the expected structure"
    assert one_line(RosettaError(f"reading failed: {bold}")) == plain(f"reading failed: {bold}")
    row = VerifyResult(model="m", route="onnx", target="t", verdict="ERROR", reason=f"loading failed: {bold}")
    assert "\x1b" not in "".join(failure_lines([row]))
