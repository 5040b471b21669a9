"""A PyTorch model that blocks (in its file's import, its factory, its forward as the reference, its forward as
a candidate, an in-memory module given to the API) runs in rosetta's own process, where no worker can be
killed: --timeout still ends it, with one line naming the model and the timeout (exit 2), or the candidate's
ERROR row (exit 3). Each model notes the moment it starts to block, so the bound is from there, not from the
start of a process that may wait for a loaded machine's CPUs."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.shared import communicate_within

TIMEOUT_S = 3
SLACK_S = 5  # the bound: ended within --timeout + 5 s of blocking

NETS = textwrap.dedent('''
    import os
    import threading
    import time

    import torch


    def blocking():
        """Notes when it starts to block (the test's clock), then waits for ever."""
        with open(os.environ["BLOCKED_AT"], "w") as marker:
            marker.write(repr(time.time()))
        threading.Event().wait()


    if os.environ.get("BLOCK_ON_IMPORT"):
        blocking()


    class Net(torch.nn.Module):
        def __init__(self, block_at_batch=None):
            super().__init__()
            self.fc = torch.nn.Linear(4, 2)
            self.block_at_batch = block_at_batch

        def forward(self, x):
            if x.shape[0] == self.block_at_batch:
                blocking()
            return self.fc(x)


    def fine():
        torch.manual_seed(0)
        return Net()


    def blocks_building():
        time.sleep(1)  # a factory that has started: its import is done
        blocking()


    def blocks_running():
        torch.manual_seed(0)
        return Net(block_at_batch=8)  # runs once at batch 2 when it is read, blocks when verified (batch 8)
''')


def _run(tmp_path: Path, arguments: list[str], environment: dict | None = None, limit: float = 120):
    """`arguments` (after the interpreter) in a process of its own: (exit status, stdout, stderr, seconds from
    the model's blocking to the process's end). A process still running after `limit` s is killed: the test fails."""
    marker = tmp_path / "blocked-at"
    process = subprocess.Popen([sys.executable, *arguments], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True, cwd=tmp_path,
                               env={**os.environ, **(environment or {}), "BLOCKED_AT": str(marker)})
    stdout, stderr = communicate_within(process, limit, f"{' '.join(arguments)} (--timeout {TIMEOUT_S})")
    ended = time.time()
    assert marker.exists(), f"the model never blocked: {stderr}"
    return process.returncode, stdout, stderr, ended - float(marker.read_text())


@pytest.fixture
def nets(tmp_path) -> Path:
    (tmp_path / "nets.py").write_text(NETS)
    return tmp_path / "nets.py"


@pytest.mark.parametrize("reference, environment, what", [
    ("blocks_building", {"BLOCK_ON_IMPORT": "1"}, "building"),  # blocks while its file is imported
    ("blocks_building", {}, "building"),
    ("blocks_running", {}, "the reference {nets}:blocks_running cannot run: running"),
])
def test_a_blocking_reference_ends_at_the_timeout_with_one_line(nets, tmp_path, reference, environment, what):
    status, _, stderr, seconds = _run(tmp_path, ["-m", "rosetta.cli", "verify", f"{nets}:{reference}", f"{nets}:fine",
                                              "--trust-code", "--input", "x:Nx4:float32", "--timeout", str(TIMEOUT_S),
                                              "--no-progress"], environment)
    what = what.format(nets=nets)
    assert (status, stderr) == (2, f"rosetta: error: {what} {nets}:{reference} timed out after {TIMEOUT_S} s "
                                   "(--timeout)\n")
    assert seconds < TIMEOUT_S + SLACK_S


def test_a_blocking_candidate_is_its_rows_error_at_the_timeout(nets, tmp_path):
    """A candidate module is exported (its forward traced, in this process) to run it: that is bounded too. The
    timeout covers the whole export, whose tracing before the forward blocks took over 3 s on a loaded 2-core
    machine (a fresh-clone run beside `make demo`: the timeout fired before the model blocked), so it is longer
    here; the bound is still counted from the moment the model blocks."""
    timeout = 15
    status, stdout, stderr, seconds = _run(tmp_path, ["-m", "rosetta.cli", "verify", f"{nets}:fine",
                                                      f"{nets}:blocks_running",
                                              "--trust-code", "--input", "x:Nx4:float32", "--timeout", str(timeout),
                                              "--no-progress"])
    assert status == 3 and "Traceback" not in stderr, stderr
    assert (f"ERROR {nets}:fine -> {nets}:blocks_running (onnx): reading failed: exporting {nets}:blocks_running "
            f"timed out after {timeout} s (--timeout)") in stdout.replace("\n", "")
    assert seconds < timeout + SLACK_S


def test_a_blocking_module_given_to_the_api_raises_worker_timed_out(nets, tmp_path):
    script = ("import rosetta, nets\n"
              "try:\n"
              f"    rosetta.verify(nets.blocks_running(), nets.fine(), inputs=['x:Nx4:float32'], timeout={TIMEOUT_S})\n"
              "except rosetta.WorkerTimedOut as error:\n"
              "    print(error)\n")
    status, stdout, stderr, seconds = _run(tmp_path, ["-c", script])
    assert status == 0 and "Traceback" not in stderr, stderr
    assert stdout.endswith(f" timed out after {TIMEOUT_S} s (timeout=)\n") and stdout.count("\n") == 1, stdout
    assert seconds < TIMEOUT_S + SLACK_S
