"""How fast rosetta stops on a signal: the seconds from SIGINT or SIGTERM to rosetta's exit, and to the last of
its descendants (workers, slot workers) being gone, idle and with a CPU load beside it.

The signal tests (tests/security/test_lifecycle.py) only tell a stop from a hang; this measures it, in the same
cases, reusing their helpers to start rosetta and to wait for the moment to signal:

- onnx-in-process: `rosetta verify loop.onnx loop.onnx`, an endless ONNX Loop run by ONNX Runtime in rosetta's
  own process, signalled once the run has taken a second of CPU on its thread;
- side-by-side: `rosetta verify --model cnn --targets keras,mxnet --jobs 2 --train-steps 5`, signalled once both
  cells run, each in its framework's worker.

    python scripts/bench_stop.py                          # 3 repeats, idle and beside 2 busy loops
    python scripts/bench_stop.py --repeats 2 --json stop.json
    python scripts/bench_stop.py --cases onnx-in-process --signals SIGINT --load 0
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from datetime import date
from pathlib import Path

import psutil
from rich.console import Console
from rich.table import Table

from rosetta.atomic import atomic_write_json

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.*, from a checkout

from tests.frameworks.test_onnxruntime import endless_loop  # noqa: E402
from tests.security.test_lifecycle import (  # noqa: E402
    _left_behind, _rosetta, _wait_for_a_busy_thread, _wait_for_library, _wait_for_workers,
)

CASES = ("onnx-in-process", "side-by-side")
STATUS = {"SIGINT": 130, "SIGTERM": 143}
STOP_WITHIN_S = 60.0  # past this a run is a hang: killed, and its row says so
POLL_S = 0.02


@dataclass
class Stop:
    """One signalled run: seconds from the signal to rosetta's exit and to its last descendant being gone."""
    case: str
    signal: str
    load: int
    repeat: int
    exit_s: float | None = None  # None: it did not exit within STOP_WITHIN_S (killed)
    descendants_s: float | None = None  # None: it had no descendants, or one outlived STOP_WITHIN_S
    descendants: int = 0
    status: int | None = None
    clean: bool = False  # the expected exit status and message, and no temporary folder or partial output left
    error: str = ""  # why the run never reached the point to signal


@dataclass
class Summary:
    case: str
    signal: str
    load: int
    runs: int
    clean: int
    hangs: int
    exit_median_s: float | None
    exit_worst_s: float | None
    descendants_median_s: float | None
    descendants_worst_s: float | None
    load_average: list[float] = field(default_factory=list)


def _gone(pid: int) -> bool:
    """Exited, or a zombie not reaped yet: nothing of it runs (the tests' `_gone`, without its wait)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _descendants(pid: int) -> set[int]:
    with contextlib.suppress(psutil.Error):
        return {child.pid for child in psutil.Process(pid).children(recursive=True)}
    return set()


def _signal_and_time(process: subprocess.Popen, signum: int, stop: Stop) -> None:
    """Send `signum` and poll every POLL_S until rosetta has exited and every descendant it had at the signal,
    or started after it, is gone."""
    pending = _descendants(process.pid)
    stop.descendants = len(pending)
    start = time.monotonic()
    process.send_signal(signum)
    last_gone = None
    while time.monotonic() - start < STOP_WITHIN_S:
        now = time.monotonic()
        if stop.exit_s is None:
            if process.poll() is None:
                new = _descendants(process.pid) - pending
                pending |= new
                stop.descendants += len(new)
            else:
                stop.exit_s, stop.status = now - start, process.returncode
        if pending:
            pending = {pid for pid in pending if not _gone(pid)}
            if not pending:
                last_gone = now
        if stop.exit_s is not None and not pending:
            break
        time.sleep(POLL_S)
    if stop.descendants and not pending:
        stop.descendants_s = last_gone - start if last_gone is not None else stop.exit_s
    if process.poll() is None:  # a hang must not be left behind
        process.kill()
        process.wait()
    for pid in pending:
        with contextlib.suppress(psutil.Error):
            psutil.Process(pid).kill()


def _onnx_in_process(folder: Path) -> tuple[subprocess.Popen, Path, Path]:
    """The endless model run in rosetta's own process, as test_an_endless_onnx_model_stops_on_a_signal runs it
    (with its own TMPDIR, so that what it leaves can be checked; model files take no --work-dir)."""
    model = endless_loop(folder / "loop.onnx")
    temp, work = folder / "tmp", folder / "work"
    temp.mkdir()
    with open(folder / "log.txt", "w") as log:
        process = subprocess.Popen([sys.executable, "-m", "rosetta.cli", "verify", str(model), str(model),
                                    "--no-progress"],
                                   env=dict(os.environ, TMPDIR=str(temp)), stdout=log, stderr=subprocess.STDOUT)
    _wait_for_library(process, "onnxruntime_pybind11_state")
    _wait_for_a_busy_thread(process)
    return process, temp, work


def _side_by_side(folder: Path) -> tuple[subprocess.Popen, Path, Path]:
    """Two cells in their frameworks' workers, as test_ctrl_c_stops_cells_running_side_by_side runs them."""
    process, temp, work = _rosetta(folder, "--targets", "keras,mxnet", "--jobs", "2", "--train-steps", "5")
    _wait_for_workers(process, folder, families={"tensorflow", "mxnet"})
    return process, temp, work


START = {"onnx-in-process": _onnx_in_process, "side-by-side": _side_by_side}


def measure(case: str, signame: str, load: int, repeat: int) -> Stop:
    stop = Stop(case, signame, load, repeat)
    with tempfile.TemporaryDirectory(prefix="bench-stop-", ignore_cleanup_errors=True) as name:
        folder = Path(name)
        process = None
        try:
            process, temp, work = START[case](folder)
            _signal_and_time(process, getattr(signal, signame), stop)
            log = (folder / "log.txt").read_text(errors="replace").splitlines()
            message = {"SIGINT": "rosetta: interrupted", "SIGTERM": "rosetta: terminated"}[signame]
            stop.clean = stop.status == STATUS[signame] and message in log and _left_behind(temp, work) == []
        except AssertionError as error:  # the tests' helpers: it never reached the moment to signal
            log = (folder / "log.txt").read_text(errors="replace").strip().splitlines()
            stop.error = f"{str(error).splitlines()[0][:200]}; its output ended: {log[-1][:200] if log else ''}"
        finally:
            if process is not None and process.poll() is None:
                process.kill()
                process.wait()
    return stop


def _busy_loops(count: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def _seconds(values: list[float | None]) -> tuple[float | None, float | None]:
    """Median and worst; a run that never stopped is the worst of all (infinity)."""
    times = [float("inf") if v is None else v for v in values]
    return (statistics.median(times), max(times)) if times else (None, None)


def summarise(stops: list[Stop], load_average: dict[int, list[float]]) -> list[Summary]:
    rows = []
    for key in dict.fromkeys((s.case, s.signal, s.load) for s in stops):
        runs = [s for s in stops if (s.case, s.signal, s.load) == key and not s.error]
        exits = _seconds([s.exit_s for s in runs])
        gone = _seconds([s.descendants_s for s in runs if s.descendants])  # (None, None): it had none
        rows.append(Summary(*key, len(runs), sum(s.clean for s in runs), sum(s.exit_s is None for s in runs),
                            *exits, *gone, load_average[key[2]]))
    return rows


def _cell(value: float | None) -> str:
    return "-" if value is None else "hang" if value == float("inf") else f"{value:.2f}"


def table(rows: list[Summary]) -> Table:
    out = Table(title="seconds from the signal to rosetta's exit, and to the last of its descendants gone",
                caption="load average (1, 5, 15 min) as each load began: " + "; ".join(
                    dict.fromkeys(f"{r.load} busy: {r.load_average}" if r.load else f"idle: {r.load_average}"
                                  for r in rows)))
    for column in ("case", "signal", "load", "runs", "clean", "hangs", "exit median", "exit worst",
                   "descendants gone median", "descendants gone worst"):
        out.add_column(column, justify="left" if column in ("case", "signal") else "right")
    for r in rows:
        out.add_row(r.case, r.signal, f"{r.load} busy" if r.load else "idle", str(r.runs), str(r.clean), str(r.hangs),
                    _cell(r.exit_median_s), _cell(r.exit_worst_s), _cell(r.descendants_median_s),
                    _cell(r.descendants_worst_s))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, of {', '.join(CASES)}")
    parser.add_argument("--signals", default="SIGINT,SIGTERM", help="comma-separated: SIGINT, SIGTERM")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each case, signal and load (default 3)")
    parser.add_argument("--load", type=int, default=2,
                        help="busy-loop processes beside the loaded runs (default 2; 0: idle runs only)")
    parser.add_argument("--json", type=Path, help="write every run and the summary here")
    args = parser.parse_args()
    cases, signals = args.cases.split(","), args.signals.split(",")
    if bad := [c for c in cases if c not in CASES] + [s for s in signals if s not in STATUS]:
        parser.error(f"unknown: {', '.join(bad)}")
    # a job a non-interactive shell puts in the background inherits SIGINT ignored, and so would every rosetta
    # started here (Python keeps SIG_IGN): then SIGINT would stop nothing (tests/conftest.py does the same)
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)

    console = Console(width=140)
    stops: list[Stop] = []
    load_average: dict[int, list[float]] = {}
    for load in dict.fromkeys([0, args.load]):
        busy = _busy_loops(load)
        try:
            load_average[load] = [round(x, 2) for x in os.getloadavg()]
            for case in cases:
                for signame in signals:
                    for repeat in range(args.repeats):
                        stop = measure(case, signame, load, repeat)
                        stops.append(stop)
                        console.print(f"{case} {signame} load {load} #{repeat + 1}: exit {_cell(stop.exit_s)} s, "
                                      f"{stop.descendants} descendants gone {_cell(stop.descendants_s)} s, "
                                      f"status {stop.status}{'' if stop.clean else ', NOT CLEAN'} {stop.error}")
        finally:
            for process in busy:
                process.kill()
                process.wait()
    rows = summarise(stops, load_average)
    console.print(table(rows))
    if args.json:
        atomic_write_json(args.json, {  # strict: a hang's infinity is the string "Infinity"
            "date": date.today().isoformat(), "machine": f"{platform.machine()}, {os.cpu_count()} cores",
            "command": " ".join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]]),
            "summary": [asdict(r) for r in rows], "runs": [asdict(s) for s in stops]})
        console.print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
