"""Killing rosetta leaves no live worker and nothing behind.

SIGTERM runs the same cleanup as Ctrl-C (exit 143); SIGKILL runs none, but the workers die with their parent
(PR_SET_PDEATHSIG) and the next run removes the folders the killed one left (their lock is free).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from rosetta.output import atomic_folder
from rosetta.processes import die_with_parent
from rosetta.scratch import DAY_S, LOCK_NAME, remove_stale, scratch_folder

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")

HOLD_SCRATCH = """
import sys, time
from rosetta.scratch import scratch_folder
with scratch_folder("rosetta-", dir=sys.argv[1]) as folder:
    print(folder, flush=True)
    time.sleep(600)
"""

HOLD_ATOMIC = """
import sys, time
from pathlib import Path
from rosetta.output import atomic_folder
with atomic_folder(Path(sys.argv[1])) as staging:
    (staging / "half-written.txt").write_text("x")
    print(staging, flush=True)
    time.sleep(600)
"""

HOLD_GRANDCHILD = """
import subprocess, time
from rosetta.processes import die_with_parent
child = subprocess.Popen(["sleep", "600"], preexec_fn=die_with_parent())
print(child.pid, flush=True)
time.sleep(600)
"""


def _python(code: str, *args: str) -> tuple[subprocess.Popen, str]:
    """Start `python -c code args`; returns it and the first line it printed (once it is ready)."""
    process = subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE, text=True)
    return process, process.stdout.readline().strip()


def _kill(process: subprocess.Popen, signum=signal.SIGKILL) -> None:
    process.send_signal(signum)
    process.wait(timeout=30)
    process.stdout.close()


def _gone(pid: int, within: float = 5.0) -> bool:
    """The process has exited (or is a zombie nobody has reaped yet) within `within` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


# --- scratch folders ------------------------------------------------------------------------------------------

def test_scratch_folder_is_locked_while_alive_and_removed_after(tmp_path):
    with scratch_folder("rosetta-", dir=tmp_path) as folder:
        assert folder.parent == tmp_path and folder.name.startswith("rosetta-")
        assert (folder / LOCK_NAME).is_file()
        (folder / "data").mkdir()
        assert remove_stale(tmp_path, "rosetta-") == []  # its lock is held (even a second lock in this process fails)
        assert folder.is_dir()
    assert list(tmp_path.iterdir()) == []


def test_a_dead_owners_folder_is_removed_and_a_live_ones_kept(tmp_path):
    dead, dead_folder = _python(HOLD_SCRATCH, str(tmp_path))
    alive, alive_folder = _python(HOLD_SCRATCH, str(tmp_path))
    try:
        _kill(dead)  # SIGKILL: no cleanup ran, the folder is left
        assert Path(dead_folder).is_dir() and Path(alive_folder).is_dir()
        assert remove_stale(tmp_path, "rosetta-") == [Path(dead_folder)]
        assert not Path(dead_folder).exists() and Path(alive_folder).is_dir()
    finally:
        _kill(alive)
    assert remove_stale(tmp_path, "rosetta-") == [Path(alive_folder)]


def test_a_folder_without_a_lock_is_kept_unless_old_and_allowed(tmp_path):
    being_made = tmp_path / "rosetta-abcd_123"  # mkdtemp'd, its lock not yet renamed into place
    being_made.mkdir()
    (being_made / f"{LOCK_NAME}.new").touch()
    users_own = tmp_path / "rosetta-checkout"  # a user's folder that looks like one of ours: hence no
    (users_own / "src").mkdir(parents=True)     # unlocked_after in the system temp folder
    not_ours = tmp_path / "rosetta-io-results"  # not PREFIX + 8 random characters
    not_ours.mkdir()
    assert remove_stale(tmp_path, "rosetta-") == []
    assert remove_stale(tmp_path, "rosetta-", unlocked_after=DAY_S) == []  # young
    two_days_ago = time.time() - 2 * DAY_S
    for folder in (being_made, users_own, not_ours):
        os.utime(folder, (two_days_ago, two_days_ago))
    assert remove_stale(tmp_path, "rosetta-") == []  # lock-less: never in the system temp folder
    assert sorted(remove_stale(tmp_path, "rosetta-", unlocked_after=DAY_S)) == [being_made, users_own]
    assert not_ours.is_dir()


def test_symbolic_links_are_never_followed(tmp_path):
    target = tmp_path / "precious"
    target.mkdir()
    (target / LOCK_NAME).touch()  # an unlocked lock file: would be stale if it were ours
    (tmp_path / "scan").mkdir()
    (tmp_path / "scan" / "rosetta-abcdefgh").symlink_to(target)
    assert remove_stale(tmp_path / "scan", "rosetta-", unlocked_after=0) == []
    assert (target / LOCK_NAME).is_file()


# --- children die with their parent ---------------------------------------------------------------------------

def test_a_child_dies_with_its_parent_killed_by_sigkill():
    middle, grandchild = _python(HOLD_GRANDCHILD)
    assert psutil.pid_exists(int(grandchild))
    _kill(middle)
    assert _gone(int(grandchild))


def test_a_child_whose_parent_died_before_prctl_exits_at_once(monkeypatch):
    with monkeypatch.context() as patch:  # as if the parent had died between fork and prctl: another parent
        patch.setattr(os, "getpid", lambda: 1)
        in_child = die_with_parent()
    start = time.monotonic()
    done = subprocess.run(["sleep", "30"], preexec_fn=in_child, timeout=20)
    assert done.returncode == -signal.SIGKILL and time.monotonic() - start < 10


# --- atomic output folders ------------------------------------------------------------------------------------

def test_atomic_folder_of_a_killed_process_is_removed_by_the_next_one(tmp_path):
    out = tmp_path / "out"
    process, staging = _python(HOLD_ATOMIC, str(out))
    _kill(process)
    left = list(tmp_path.glob(".out.partial-*"))
    assert len(left) == 1 and Path(staging).is_relative_to(left[0]) and not out.exists()
    legacy = tmp_path / ".out.old-abcdefgh"  # an older rosetta's replaced output, killed before removing it
    (legacy / "old").mkdir(parents=True)
    os.utime(legacy, (time.time() - 2 * DAY_S,) * 2)
    with atomic_folder(out) as staging:
        assert [p.name for p in tmp_path.glob(".out.*")] == [staging.parent.name]  # only this run's own
        (staging / "model.txt").write_text("done")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert [p.name for p in out.rglob("*")] == ["model.txt"]  # no lock file in the output


def test_atomic_folder_replaces_and_fails_without_leaving_anything(tmp_path):
    out = tmp_path / "out"
    with atomic_folder(out) as staging:
        (staging / "first.txt").write_text("1")
    with atomic_folder(out, force=True) as staging:
        (staging / "second.txt").write_text("2")
    assert [p.name for p in out.iterdir()] == ["second.txt"]
    with pytest.raises(ValueError), atomic_folder(out, force=True) as staging:
        (staging / "third.txt").write_text("3")
        raise ValueError("conversion failed")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert [p.name for p in out.iterdir()] == ["second.txt"]


# --- the rosetta command, killed while a worker runs ----------------------------------------------------------

def _rosetta(tmp_path: Path, *argv: str) -> tuple[subprocess.Popen, Path, Path]:
    """`rosetta verify --model cnn ARGV` with its own TMPDIR; returns it and its temp and work folders."""
    temp, work = tmp_path / "tmp", tmp_path / "work"
    temp.mkdir(exist_ok=True)
    script = Path(sys.executable).with_name("rosetta")
    command = [str(script)] if script.is_file() else [sys.executable, "-m", "rosetta.cli"]
    log = open(tmp_path / "log.txt", "w")
    with log:
        process = subprocess.Popen(command + ["verify", "--model", "cnn", *argv, "--no-progress", "--work-dir",
                                              str(work)], env=dict(os.environ, TMPDIR=str(temp)),
                                   stdout=log, stderr=subprocess.STDOUT, text=True)
    return process, temp, work


def _wait_for_workers(process: subprocess.Popen, tmp_path: Path, within: float = 300,
                      families: set[str] | None = None) -> list[int]:
    """The pids of `process`'s descendants once one of them is a framework's worker (a worker of the
    tensorflow or mxnet family, under the process itself or under one of its --jobs slot workers), or once
    there is one of each of `families`."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        assert process.poll() is None, f"rosetta ended before starting a worker: {(tmp_path / 'log.txt').read_text()}"
        try:
            children = psutil.Process(process.pid).children(recursive=True)
            running = {_family(child) for child in children}
            if (families <= running) if families else running & {"tensorflow", "mxnet"}:
                return [child.pid for child in children]
        except psutil.NoSuchProcess:
            pass
        time.sleep(0.1)
    process.kill()
    raise AssertionError("no worker started")


def _family(process: psutil.Process) -> str:
    try:
        return process.environ().get("ROSETTA_WORKER", "") if "rosetta.execution.worker" in process.cmdline() else ""
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return ""


def _left_behind(temp: Path, work: Path) -> list[Path]:
    return sorted(temp.glob("rosetta-*")) + sorted(work.rglob(".*.partial-*"))


def test_sigkill_takes_the_workers_along_and_the_next_run_removes_what_it_left(tmp_path):
    process, temp, work = _rosetta(tmp_path, "--targets", "keras,mxnet")
    workers = _wait_for_workers(process, tmp_path)
    process.kill()
    assert process.wait(timeout=30) == -signal.SIGKILL
    # at once: PR_SET_PDEATHSIG kills them within ~0.1 s; an orphan would live on (its conversion: seconds more)
    assert [pid for pid in workers if not _gone(pid, within=2.0)] == []
    left = _left_behind(temp, work)
    assert any(p.name.startswith("rosetta-") for p in left) and any(".partial-" in p.name for p in left)

    # the next run, in the same places (and the same targets: both may have been converting, side by side)
    process, temp, work = _rosetta(tmp_path, "--targets", "keras,mxnet")
    assert process.wait(timeout=300) == 0, (tmp_path / "log.txt").read_text()
    assert _left_behind(temp, work) == []


def test_sigterm_cleans_up_like_ctrl_c_and_exits_143(tmp_path):
    process, temp, work = _rosetta(tmp_path, "--targets", "keras,mxnet")
    workers = _wait_for_workers(process, tmp_path)
    process.terminate()
    assert process.wait(timeout=60) == 143
    assert "rosetta: terminated" in (tmp_path / "log.txt").read_text().splitlines()
    assert [pid for pid in workers if not _gone(pid)] == []
    assert _left_behind(temp, work) == []


def test_ctrl_c_stops_cells_running_side_by_side(tmp_path):
    """--jobs 2: the slot workers are killed at once (their cells would compute on for seconds), and nothing of
    theirs is left. The signal comes once both cells run, each in its framework's worker, with their training
    (--train-steps) still to do: 19 s of work left when idle, more on a loaded machine, so it cannot come after
    the work. How fast it stops (1.4 s measured) is for a benchmark; the bound only tells a stop from running on."""
    process, temp, work = _rosetta(tmp_path, "--targets", "keras,mxnet", "--jobs", "2", "--train-steps", "5")
    workers = _wait_for_workers(process, tmp_path, families={"tensorflow", "mxnet"})
    start = time.monotonic()
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=60) == 130, (tmp_path / "log.txt").read_text()
    assert time.monotonic() - start < 10.0
    assert "rosetta: interrupted" in (tmp_path / "log.txt").read_text().splitlines()
    assert [pid for pid in workers if not _gone(pid, within=10.0)] == []
    assert _left_behind(temp, work) == []


def _wait_for_library(process, name: str, timeout: float = 120.0) -> None:
    """Until `process` has the shared library `name` loaded (a fixed sleep was too short on a loaded machine)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        with contextlib.suppress(OSError):
            if name in Path(f"/proc/{process.pid}/maps").read_text():
                return
        time.sleep(0.2)
    raise AssertionError(f"{name} not loaded by the process within {timeout:.0f} s (exit status {process.poll()})")


def _wait_for_a_busy_thread(process, seconds: float = 1.0, timeout: float = 120.0) -> None:
    """Until a thread of `process` other than its main one has run `seconds` of CPU time: ONNX Runtime's run of
    the endless Loop (bounded_run runs it on a thread of its own); nothing else in it computes off the main
    thread for that long."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        with contextlib.suppress(psutil.Error):
            if any(t.id != process.pid and t.user_time + t.system_time >= seconds
                   for t in psutil.Process(process.pid).threads()):
                return
        time.sleep(0.1)
    raise AssertionError(f"the model never ran within {timeout:.0f} s (exit status {process.poll()})")


@pytest.mark.parametrize("when", ["as ONNX Runtime loads", "while the model runs"])
@pytest.mark.parametrize("signum, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_an_endless_onnx_model_stops_on_a_signal(tmp_path, signum, status, when):
    """ONNX Runtime's run in rosetta's own process is stopped (RunOptions.terminate), not left to abort the exit,
    whether the signal comes before its run starts or while it runs; nothing is left running. How fast it stops
    (0.1 s idle, 0.5 s on a loaded machine) is not this test's to say: the bound only tells a stop from a hang."""
    from tests.frameworks.test_onnxruntime import endless_loop

    model = endless_loop(tmp_path / "loop.onnx")
    process = subprocess.Popen([sys.executable, "-m", "rosetta.cli", "verify", str(model), str(model), "--no-progress"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for_library(process, "onnxruntime_pybind11_state")  # the model read by ONNX Runtime
        if when == "while the model runs":
            _wait_for_a_busy_thread(process)
        process.send_signal(signum)
        _, stderr = process.communicate(timeout=10)
    finally:  # a run that did not stop must not be left behind
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == status, stderr
    assert stderr.strip() in ("rosetta: interrupted", "rosetta: terminated"), stderr


@pytest.mark.parametrize("signum, status, said", [(signal.SIGTERM, 143, "rosetta: terminated"),
                                                  (signal.SIGINT, 130, "rosetta: interrupted")])
@pytest.mark.parametrize("made_into", ["an error", "a row, the run going on"])
def test_a_signal_whose_exception_the_code_turned_into_another_still_stops_the_run(monkeypatch, signum, status,
                                                                                    said, made_into):
    """A SIGTERM as ONNX Runtime's extension module initialised became 'ImportError: initialization failed' (pybind11
    turns what its init raises into that), and rosetta said 'the reference cannot run', exit 2; a handler of the
    code it lands in can as well make it a row's error and go on. The signal is remembered, and the run says so."""
    from rosetta import cli
    from tests.test_cli import run_here

    def swallowed(args):
        try:
            signal.raise_signal(signum)
        except BaseException:
            if made_into == "an error":
                raise ImportError("initialization failed") from None
        return 0

    monkeypatch.setitem(cli.COMMANDS, "env", swallowed)
    out = run_here("env")
    assert out.returncode == status and out.stderr.strip() == said, out.stderr
    monkeypatch.setitem(cli.COMMANDS, "env", lambda args: 0)
    assert run_here("env").returncode == 0  # the next run in this process starts afresh


@pytest.mark.parametrize("signum, status", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_whose_exception_python_could_only_drop_is_delivered_again(monkeypatch, signum, status):
    """A SIGTERM that came while importlib ran a weakref callback raised there, where Python drops the exception
    ('Exception ignored in: <function _get_module_lock.<locals>.cb>'), and the endless run went on until killed:
    the signal is delivered again, and stops the run."""
    import gc
    import weakref

    from rosetta import cli
    from tests.test_cli import run_here

    class Thing:
        pass

    def endless(args):
        thing = Thing()
        reference = weakref.ref(thing, lambda _: signal.raise_signal(signum))  # raised in the callback: dropped
        del thing
        gc.collect()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # the run that must stop
            time.sleep(0.01)
        return 0 if reference() is None else 1

    monkeypatch.setitem(cli.COMMANDS, "env", endless)
    start = time.monotonic()
    out = run_here("env")
    assert out.returncode == status and time.monotonic() - start < 5, out.stderr
    assert "Exception ignored" not in out.stderr
