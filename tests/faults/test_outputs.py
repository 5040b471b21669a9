"""-o is a transaction: written into and never replaced, refused before any work when it cannot be used, one
writer at a time, and an interruption at any point leaves each entry old or new."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from rosetta.errors import RosettaError
from rosetta.output import RECORD_NAME, STAGING_PREFIX, OutputFolder
from tests.security import one_line_refusal, run


def _entries(folder: Path) -> list[str]:
    """What a user sees in the folder (rosetta's hidden record aside)."""
    return sorted(name for name in os.listdir(folder) if name != RECORD_NAME)


def _stage(out: OutputFolder, name: str, text: str) -> None:
    (out.staging / name).mkdir()
    (out.staging / name / "model.txt").write_text(text)


def _write(folder: Path, entries: dict[str, str], force: bool = False) -> list[str]:
    with OutputFolder(folder, force) as out:
        for name, text in entries.items():
            _stage(out, name, text)
        return out.install(entries)


def _content(folder: Path) -> dict[str, str]:
    return {name: (folder / name / "model.txt").read_text() for name in _entries(folder)
            if (folder / name / "model.txt").is_file()}


def test_an_existing_folder_is_written_into_with_its_mode_its_link_and_the_users_files_kept(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    real.chmod(0o700)
    (real / "notes.txt").write_text("mine")
    link = tmp_path / "link"
    link.symlink_to(real)
    assert _write(link, {"torch": "new"}, force=True) == ["torch"]
    assert link.is_symlink() and oct(real.stat().st_mode & 0o777) == "0o700"
    assert (real / "notes.txt").read_text() == "mine" and _content(real) == {"torch": "new"}
    assert json.loads((real / RECORD_NAME).read_text())["entries"].keys() == {"torch"}
    assert not list(real.glob(f"{STAGING_PREFIX}*"))


def test_force_replaces_only_what_rosetta_wrote(tmp_path):
    out = tmp_path / "out"
    _write(out, {"torch": "first", "keras": "first"})
    _write(out, {"torch": "second"}, force=True)
    assert _content(out) == {"torch": "second", "keras": "first"}  # rosetta's other entry is left as it was
    (out / "mxnet").mkdir()  # the user's own folder under a target's name
    with pytest.raises(RosettaError, match="out/mxnet was not written by rosetta, and force= replaces only"):
        OutputFolder(out, force=True, entries=["mxnet"]).__enter__()
    with pytest.raises(RosettaError, match="exists and is not empty; choose another or pass force="):
        OutputFolder(out).__enter__()


def test_a_folder_made_for_a_run_that_writes_nothing_is_removed(tmp_path):
    with OutputFolder(tmp_path / "a" / "b") as out:
        assert out.folder.is_dir()
    assert list(tmp_path.iterdir()) == []


def test_a_second_writer_is_refused_while_the_first_holds_the_folder(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path / "out")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        with pytest.raises(RosettaError, match="is being written by another rosetta run; wait for it"):
            _write(tmp_path / "out", {"torch": "second"})
    finally:
        holder.kill()
        holder.wait()
        holder.stdout.close()
    assert _write(tmp_path / "out", {"torch": "third"}, force=True) == ["torch"]  # its lock died with it


HOLD = """
import sys, time
from rosetta.output import OutputFolder
with OutputFolder(sys.argv[1]):
    print("holding", flush=True)
    time.sleep(600)
"""


def test_the_check_is_repeated_right_before_installing(tmp_path):
    out = tmp_path / "out"
    with OutputFolder(out) as folder:
        _stage(folder, "torch", "new")
        (out / "torch").mkdir()  # appeared while the run was converting
        (out / "torch" / "theirs.txt").write_text("x")
        with pytest.raises(RosettaError, match="out/torch appeared during the run; nothing was written"):
            folder.install(["torch"])
    assert os.listdir(out / "torch") == ["theirs.txt"]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_the_install_waits_for_the_commit(tmp_path, monkeypatch, signum):
    """SIGINT/SIGTERM between two entries: acted on after the last one is in (the new output, whole)."""
    import rosetta.output as output
    from rosetta.processes import Terminated, raise_on_sigterm

    out = tmp_path / "out"
    _write(out, {"torch": "old", "keras": "old"})
    install = output._install_entry

    def interrupted(*paths):
        install(*paths)
        os.kill(os.getpid(), signum)
    monkeypatch.setattr(output, "_install_entry", interrupted)
    restore = raise_on_sigterm()
    try:
        with pytest.raises(Terminated if signum == signal.SIGTERM else KeyboardInterrupt):
            _write(out, {"torch": "new", "keras": "new"}, force=True)
    finally:
        restore()
    assert _content(out) == {"torch": "new", "keras": "new"} and not list(out.glob(f"{STAGING_PREFIX}*"))


def test_an_error_during_the_install_puts_every_old_entry_back(tmp_path, monkeypatch):
    import rosetta.output as output

    out = tmp_path / "out"
    _write(out, {"torch": "old", "keras": "old"})
    install, calls = output._install_entry, []

    def failing(*paths):
        calls.append(paths)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        install(*paths)
    monkeypatch.setattr(output, "_install_entry", failing)
    with pytest.raises(OSError):
        _write(out, {"torch": "new", "keras": "new", "mxnet": "new"}, force=True)
    assert _content(out) == {"torch": "old", "keras": "old"} and not list(out.glob(f"{STAGING_PREFIX}*"))
    assert json.loads((out / RECORD_NAME).read_text())["entries"].keys() == {"torch", "keras"}


KILLED_MID_INSTALL = """
import os, signal, sys
import rosetta.output as output
install = output._install_entry
def killed(*paths):
    install(*paths)
    os.kill(os.getpid(), signal.SIGKILL)
output._install_entry = killed
with output.OutputFolder(sys.argv[1], force=True) as out:
    for name in ("torch", "keras"):
        (out.staging / name).mkdir()
        (out.staging / name / "model.txt").write_text("new")
    out.install(["torch", "keras"])
"""


def test_sigkill_mid_install_leaves_each_entry_whole_and_the_next_run_puts_the_old_output_back(tmp_path):
    out = tmp_path / "out"
    _write(out, {"torch": "old", "keras": "old"})
    killed = subprocess.run([sys.executable, "-c", KILLED_MID_INSTALL, str(out)], timeout=60)
    assert killed.returncode == -signal.SIGKILL
    assert _content(out) == {"torch": "new", "keras": "old"}  # each entry whole, none missing
    with OutputFolder(out, force=True):  # the next run into the folder undoes the half-done install
        assert _content(out) == {"torch": "old", "keras": "old"}
    assert not list(out.glob(f"{STAGING_PREFIX}*"))


# --- through the command line -----------------------------------------------------------------------------------

def test_an_output_that_holds_the_model_is_refused_before_any_work(models, tmp_path, monkeypatch):
    source = tmp_path / "src"
    source.mkdir()
    (source / "model.onnx").write_bytes((models / "relu.onnx").read_bytes())
    (source / "notes.txt").write_text("mine")
    for output in (source, tmp_path):  # the model's folder, and a folder above it
        code, err = run("convert", source / "model.onnx", "--to", "onnx", "-o", output, "--force")
        one_line_refusal(code, err, f"output folder {output} holds the input {source / 'model.onnx'}")
    monkeypatch.chdir(source)
    one_line_refusal(*run("convert", "model.onnx", "--to", "onnx", "-o", "."), "output folder . holds the input")
    code, err = run("verify", models / "relu.onnx", models / "relu.onnx", "--json", models / "relu.onnx")
    one_line_refusal(code, err, "output file", "is the input")
    assert sorted(os.listdir(source)) == ["model.onnx", "notes.txt"]


def test_an_unwritable_folder_is_refused_before_any_work(models):
    code, err = run("convert", models / "relu.onnx", "--to", "onnx", "-o", "/sys/kernel", "--force")
    one_line_refusal(code, err, "cannot write to /sys/kernel")


def test_convert_writes_into_dot_and_a_second_run_refuses_while_one_holds_it(models, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, err = run("convert", models / "relu.onnx", "--to", "onnx", "-o", ".")
    assert code == 0, err
    assert _entries(tmp_path) == ["onnx"] and (tmp_path / "onnx" / "manifest.json").is_file()
    with OutputFolder(tmp_path, force=True):  # another run holds it
        code, err = run("convert", models / "relu.onnx", "--to", "onnx", "-o", ".", "--force")
    one_line_refusal(code, err, "is being written by another rosetta run")
