"""Every file rosetta writes is whole or absent: a full disk leaves the old file (or none) and one line that
names the file; JSON is strict."""

from __future__ import annotations

import errno
import json
import subprocess
import sys

import numpy as np
import pytest

from rosetta.atomic import PARTIAL_SUFFIX, atomic_write_json, atomic_write_text
from tests.security import run


def _disk_fills_after(monkeypatch, size: int) -> None:
    """Writes through rosetta's writer fail with ENOSPC once `size` bytes are written, as on a full disk."""
    import rosetta.atomic as atomic

    write, written = atomic._StagedStream.write, {"bytes": 0}

    def filling(self, data):
        written["bytes"] += len(data)
        if written["bytes"] > size and not self._failed:
            self._failed = True  # what the stream does after a real write error: takes and drops the rest
            raise OSError(errno.ENOSPC, "No space left on device")
        return write(self, data)
    monkeypatch.setattr(atomic._StagedStream, "write", filling)


def test_a_full_disk_leaves_the_old_file_and_names_the_new_one(tmp_path, monkeypatch):
    path = tmp_path / "results.json"
    atomic_write_text(path, "old")
    _disk_fills_after(monkeypatch, 100)
    with pytest.raises(OSError) as raised:
        atomic_write_text(path, "x" * 1000)
    assert raised.value.errno == errno.ENOSPC and raised.value.filename == str(path)
    assert path.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["results.json"]


def test_save_inputs_and_json_on_a_full_disk_are_one_line_and_leave_nothing(models, tmp_path, monkeypatch):
    _disk_fills_after(monkeypatch, 2000)
    code, err = run("verify", models / "relu.onnx", "--batch", "500", "--save-inputs", tmp_path / "in.npz")
    lines = err.strip().splitlines()
    assert code == 3 and len(lines) == 1, err
    assert lines[0] == (f"rosetta: error: disk full (No space left on device: {tmp_path / 'in.npz'}); free space "
                        "there or choose another folder")
    assert list(tmp_path.iterdir()) == []


def test_convert_output_on_a_full_disk_is_one_line_naming_the_file_and_leaves_nothing(models, tmp_path, monkeypatch):
    """-o's artifacts are copied with shutil.copytree, whose error lists every file it could not copy: printed as
    it was, 'disk full (Error: [('/tmp/...', '/out/...', '[Errno 28] No space left on device')])'."""
    import shutil

    out, copy = tmp_path / "out", shutil.copyfile

    def filling(source, destination, *args, **kwargs):  # the output's disk is full; the work folders' is not
        if str(destination).startswith(str(out)):
            raise OSError(errno.ENOSPC, "No space left on device")
        return copy(source, destination, *args, **kwargs)
    monkeypatch.setattr(shutil, "copyfile", filling)
    code, err = run("convert", models / "relu.onnx", "--to", "onnx", "-o", out)
    lines = err.strip().splitlines()
    assert code == 3 and len(lines) == 1, err
    assert lines[0].startswith(f"rosetta: error: disk full (No space left on device: {out}/") and \
        lines[0].endswith("); free space there (TMPDIR for temporary files) or choose another folder"), err
    assert "[" not in lines[0] and "Errno" not in lines[0], err
    assert list(tmp_path.iterdir()) == []


def test_locate_dir_for_a_model_named_by_a_path_with_folders_writes_its_files_and_keeps_the_fail(models, tmp_path,
                                                                                                  monkeypatch):
    """The file names came from the rows' names as given: 'ports/log.onnx' made locate-relu.onnx-ports/log.onnx...,
    in a folder that did not exist: a one-line error after the table, exit 2 instead of the FAIL's 1."""
    import shutil

    (tmp_path / "ports").mkdir()
    shutil.copyfile(models / "log.onnx", tmp_path / "ports" / "log.onnx")
    monkeypatch.chdir(tmp_path)
    code, err = run("verify", models / "relu.onnx", "ports/log.onnx", "--input", "x:Nx4:float32:-1:1", "--locate",
                    "--locate-dir", "where")
    assert code == 1 and err == "", err
    assert sorted(p.name for p in (tmp_path / "where").iterdir()) == [
        "locate-relu.onnx-ports_log.onnx.explorer.json", "locate-relu.onnx.png"]
    assert not list((tmp_path / "ports").glob("*.json"))


NPZ_ON_A_SMALL_DISK = """
import resource, sys
import numpy as np
from rosetta.execution import save_npz
resource.setrlimit(resource.RLIMIT_FSIZE, (50_000, 50_000))  # files stop growing at 50 kB: EFBIG, as a full disk
try:
    save_npz(sys.argv[1], {"x": np.zeros(100_000)})
except OSError as error:
    print(f"{error.strerror}: {error.filename}")
"""


def test_a_failed_npz_leaves_no_file_and_nothing_at_exit(tmp_path):
    """A real write failure (RLIMIT_FSIZE in a process of its own): np.savez's zipfile used to print
    'Exception ignored ... seek of closed file' at exit and leave a corrupt file."""
    target = tmp_path / "in.npz"
    done = subprocess.run([sys.executable, "-c", NPZ_ON_A_SMALL_DISK, str(target)], capture_output=True, text=True,
                          timeout=60)
    assert done.stdout.strip() == f"File too large: {target}" and done.stderr == ""
    assert list(tmp_path.iterdir()) == []


NPZ_FILLING_AT_EVERY_BYTE = """
import gc, os, resource, sys
import numpy as np
from rosetta.execution import save_npz
path, arrays = sys.argv[1], {"y": np.zeros((60, 4), np.float32), "z": np.ones(3)}
save_npz(path, arrays)
size = os.path.getsize(path)
os.unlink(path)
for limit in range(size):  # the disk fills at each byte in turn: in an array, its header, the central directory
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
    try:
        save_npz(path, arrays)
        print(f"written at {limit} of {size} bytes")
    except OSError as error:
        if error.strerror != "File too large" or error.filename != path or os.listdir(os.path.dirname(path)):
            print(f"at {limit}: {error!r} {os.listdir(os.path.dirname(path))}")
    resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    gc.collect()  # a zipfile.ZipFile left open closes itself now, where its error would print
print(f"{size} limits tried")
"""


def test_an_npz_whose_disk_fills_at_any_byte_is_one_error_no_file_and_nothing_printed(tmp_path):
    """np.savez leaves its ZipFile open when a write fails and the ZipFile writes its end record from __del__,
    from positions the failed writes left: a disk that filled in the central directory printed 'Exception
    ignored ... struct.error: argument out of range' (--save-outputs on a full disk)."""
    done = subprocess.run([sys.executable, "-c", NPZ_FILLING_AT_EVERY_BYTE, str(tmp_path / "out.npz")],
                          capture_output=True, text=True, timeout=120)
    lines = done.stdout.strip().splitlines()
    assert done.stderr == "" and len(lines) == 1 and lines[0].endswith(" limits tried"), done.stdout + done.stderr
    assert list(tmp_path.iterdir()) == []


def test_json_is_strict_non_finite_numbers_are_strings(models, tmp_path):
    code, _ = run("verify", models / "relu.onnx", models / "log.onnx", "--input", "x:Nx4:float32:-1:1", "--json",
                  tmp_path / "r.json")
    assert code == 1

    def refuse(constant):
        raise ValueError(f"bare {constant} in the JSON")
    data = json.loads((tmp_path / "r.json").read_text(), parse_constant=refuse)
    output = data["results"][0]["outputs"][0]
    assert output["nan_count"] > 0 and output["max_abs_error"] == "NaN"
    atomic_write_json(tmp_path / "x.json", {"values": [float("inf"), -float("inf"), np.float32("nan"), 1.5]})
    assert json.loads((tmp_path / "x.json").read_text(), parse_constant=refuse) == {
        "values": ["Infinity", "-Infinity", "NaN", 1.5]}
    assert not list(tmp_path.glob(f"*{PARTIAL_SUFFIX}"))
