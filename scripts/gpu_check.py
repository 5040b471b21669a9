"""One device check (issue 41, part 3): on a machine with one NVIDIA GPU, within a time budget and in priority
order, `rosetta bench` of DLF's three workloads in PyTorch (fp32, and bf16 + channels-last; each plain and with
CUDA graphs and device-resident data), `rosetta verify` of the three models in PyTorch and in Keras on JAX,
Keras's bench, the harness's overhead on the device and `rosetta env`; then one markdown table beside DLF's
published P100 figures, each row with its precision, the device it reported, its DLF figure and its fraction of
the card's matmul peak, the card named.

Every step is a rosetta command in a process of its own with a timeout of its own (a hang costs that step, not
the run), started only where the budget left can hold it (a step that cannot is recorded as skipped, saying
why). The summary JSON and the markdown are rewritten after every step, so a run cut short keeps what it
measured. A figure is written only under the device it was read back from: a row asked for cuda that reports
another device is shown without its figure, and where PyTorch sees no CUDA device no step runs at all.
Standard library only, so that it runs where rosetta is only a source folder (it puts this checkout on
PYTHONPATH for the commands it starts).

    python3 scripts/gpu_check.py --out gpu-check            # on the GPU machine (`make gpu-check`): <= 480 s
    python3 scripts/gpu_check.py --device cpu --budget 120 --steps 1 --workloads cnn-train   # tried on a CPU
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
WORKLOADS = ("cnn-train", "gru-train", "resnet50-features")
TRAINING = ("cnn-train", "gru-train")
MODELS = {"cnn-train": "cnn", "gru-train": "gru", "resnet50-features": "resnet50"}  # what verify checks
SUMMARY, TABLE = "gpu-check.json", "gpu-check.md"
STOP_GRACE_S = 10  # a timed-out step gets this long to clean up after SIGTERM: kept out of its timeout

# DLF's published P100 figures (ilkarman/DeepLearningFrameworks, CUDA 8, cuDNN 6), as restated in
# ../shared/reference/dlf-benchmarks.md: reference data, not measured here. Training was published as seconds for
# the whole run (10 epochs of CIFAR-10, 3 of IMDB), divided here into seconds per epoch; ResNet-50 feature
# extraction as seconds per 1,000 images.
DLF_P100 = {
    "cnn-train": {"PyTorch": 51 / 10, "Keras (TF)": 76 / 10},
    "gru-train": {"PyTorch": 16 / 3, "Keras (TF)": 26 / 3},
    "resnet50-features": {"PyTorch": 1.9, "Keras (TF)": 2.9},
}
DLF_FRAMEWORK = {"torch": "PyTorch", "keras": "Keras (TF)"}  # the DLF column a row of our framework stands beside
# Issue 41's goals for an H100-class card at DLF's batch sizes, in the DLF unit: per precision where the issue
# sets one per precision (ResNet-50: 0.10 in bf16, 0.25 in fp32), else for any; Keras within 2x of PyTorch.
GOALS = {"cnn-train": {"any": 0.5}, "gru-train": {"any": 0.4}, "resnet50-features": {"amp-bf16": 0.10, "fp32": 0.25}}
KERAS_GOAL_RATIO = 2.0

# The PyTorch bench variants, in priority order: the baseline, the fast path, then the other two.
BENCH_VARIANTS = (
    ("bench-fp32", "fp32", ()),
    ("bench-bf16-cl-graphs-resident", "bf16 + channels-last, CUDA graphs, resident data",
     ("--precision", "amp-bf16", "--channels-last", "--cuda-graphs", "--resident-data")),
    ("bench-fp32-graphs-resident", "fp32, CUDA graphs, resident data", ("--cuda-graphs", "--resident-data")),
    ("bench-bf16-cl", "bf16 + channels-last", ("--precision", "amp-bf16", "--channels-last")),
)

PROBE = """
import json, platform
found = {"python": platform.python_version()}
try:
    import torch
except Exception as error:
    found["error"] = f"PyTorch cannot be imported ({type(error).__name__}: {error})"
else:
    found.update(torch=torch.__version__, cuda_build=torch.version.cuda, cuda=torch.cuda.is_available())
    if found["cuda"]:
        found.update(card=torch.cuda.get_device_name(0), cards=torch.cuda.device_count())
print(json.dumps(found))
"""
KERAS_PROBE = "import json, keras; print(json.dumps({'keras': keras.__version__, 'backend': keras.backend.backend()}))"


@dataclass
class Step:
    """One part of the check: a command run in a process of its own. `needs_s`: the least it is expected to take
    on the GPU machine (a guess from ../shared/reference/gpu-h100-2026.md: process and CUDA start, conversions,
    40-200 timed steps; each run records what every step took, to replace it); `cap_s`: its own timeout."""

    name: str
    what: str
    needs_s: float
    cap_s: float
    command: Callable[["Check"], "list[str] | str"]  # the argv, or why it cannot run here
    json_file: str = ""  # what the command writes with --json, under OUT/steps/
    read: Callable[["Check", dict, dict], None] | None = None  # takes what it wrote into the summary
    any_device: bool = False  # measures nothing on the device: runs where the device asked is missing too


@dataclass
class Check:
    device: str
    budget_s: float
    out: Path
    workloads: tuple = WORKLOADS
    bench_steps: int | None = None
    only: tuple = ()
    python: str = sys.executable
    started: float = field(default_factory=time.monotonic)
    summary: dict = field(default_factory=dict)
    unavailable: str = ""  # why the device asked is not here (no step runs)
    keras: dict | None = None  # the Keras probe's answer, once asked
    keras_refused: str = ""  # why verify ran without Keras

    def models(self) -> list[str]:
        return [MODELS[workload] for workload in self.workloads]

    def left(self) -> float:
        return self.budget_s - (time.monotonic() - self.started)

    def timeout_left(self) -> float:
        """The longest a command may still run: what is left, less the time a stopped one has to clean up."""
        return self.left() - STOP_GRACE_S

    def rosetta(self, *arguments: str) -> list[str]:
        return [self.python, "-m", "rosetta.cli", *map(str, arguments)]

    def json_path(self, name: str) -> Path:
        return self.out / "steps" / name

    def env(self) -> dict:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
        env.setdefault("KERAS_BACKEND", "jax")  # the Keras: on JAX (there is no TensorFlow on the GPU machine)
        env.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # JAX takes 75 % of the card otherwise
        return env

    def save(self) -> None:
        """The summary JSON and the markdown, each replaced whole, so that a run cut short keeps what it had."""
        self.summary["seconds"] = round(time.monotonic() - self.started, 1)
        _write(self.out / SUMMARY, json.dumps(self.summary, indent=1, default=str) + "\n")
        _write(self.out / TABLE, markdown(self.summary))


def _write(path: Path, text: str) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text)
    os.replace(partial, path)


# ---- the steps ----------------------------------------------------------------------------------------------------
def bench_command(flags: tuple, targets: str = "torch", workloads: tuple | None = None, overhead: bool = False):
    def command(check: Check, name: str) -> list[str]:
        chosen = workloads(check) if callable(workloads) else check.workloads
        steps = ("--steps", check.bench_steps) if check.bench_steps else ()
        return check.rosetta("bench", "--workload", ",".join(chosen), "--targets", targets, "--device", check.device,
                             *(() if overhead else ("--no-overhead",)), *steps, *flags, "--no-progress",
                             "--work-dir", check.out / "work", "--json", check.json_path(name))
    return command


def keras_reason(check: Check) -> str:
    """'' where Keras imports here (on KERAS_BACKEND, JAX unless set), else why not; asked once, in a process."""
    if check.keras is None:
        timeout = min(60.0, check.timeout_left())
        if timeout < 5:
            return "the budget left cannot hold Keras's import probe"
        code, seconds, line = run_command([check.python, "-c", KERAS_PROBE], timeout,
                                          check.out / "logs" / "keras-probe.log", check.env())
        if code is None:
            check.keras = {"error": f"its import did not finish in {timeout:.0f} s"}
        else:
            check.keras = json.loads(line) if code == 0 and line.startswith("{") else {"error": line or f"exit {code}"}
        check.summary["keras"] = check.keras
    return "" if "keras" in check.keras else f"Keras cannot be used here ({check.keras['error']})"


def verify_command(check: Check) -> list[str]:
    check.keras_refused = keras_reason(check)  # its rows are CANNOT rows that say why (run_step)
    targets = "torch" if check.keras_refused else "torch,keras"
    return check.rosetta("verify", "--model", ",".join(check.models()), "--targets", targets, "--device", check.device,
                         "--no-progress", "--work-dir", check.out / "work", "--json", check.json_path("verify.json"))


def keras_bench_command(check: Check) -> list[str] | str:
    return keras_reason(check) or bench_command((), "keras")(check, "keras-bench.json")


def overhead_workloads(check: Check) -> tuple:
    return tuple(w for w in check.workloads if w in TRAINING)


def overhead_command(check: Check) -> list[str] | str:
    if not overhead_workloads(check):
        return "the harness overhead is measured on the training workloads, and none was asked"
    # ONNX Runtime does not train: the training workloads plan no cell for it, so this run times the PyTorch
    # reference and the harness against a bare loop only, with nothing to convert
    return bench_command((), "onnxruntime", overhead_workloads, overhead=True)(check, "overhead.json")


def read_bench(check: Check, record: dict, found: dict) -> None:
    peak = found.get("peak") or {}
    record["peak"] = peak
    check.summary["bench"] += bench_rows(found, record["name"], check.device)


def read_overhead(check: Check, record: dict, found: dict) -> None:
    for workload, measured in (found.get("overhead") or {}).items():
        check.summary["overhead"].append(overhead_row(workload, measured, check.device))


def read_verify(check: Check, record: dict, found: dict) -> None:
    check.summary["verify"] += verify_rows(found, check.device)


def read_env(check: Check, record: dict, found: dict) -> None:
    frameworks = found.get("frameworks", [])
    check.summary["env"] = {"python": found.get("python"), "converters": found.get("converters"),
                            "frameworks": [{key: item.get(key) for key in ("framework", "version", "devices", "cuda",
                                                                          "cudnn", "error")} for item in frameworks]}
    if not check.summary.get("card"):  # the probe did not name it: PyTorch's devices as rosetta env read them
        torch = next((item for item in frameworks if item.get("framework") == "torch"), {})
        check.summary["card"] = ", ".join(torch.get("devices") or []) or None


def default_steps() -> list[Step]:
    # Bench of the three workloads: process start, the card's peak, conversions (the first run), six cells.
    steps = [Step(name, f"rosetta bench, PyTorch, {what}", 45, 150,
                  lambda check, flags=flags, name=name: bench_command(flags)(check, f"{name}.json"),
                  f"{name}.json", read_bench) for name, what, flags in BENCH_VARIANTS]
    return steps + [
        Step("verify", "rosetta verify of the workloads' models (cnn, gru, resnet50) in PyTorch and Keras (on JAX), "
                       "fp32", 90, 210, verify_command, "verify.json", read_verify),
        Step("keras-bench", "rosetta bench, Keras (on JAX), fp32", 45, 150, keras_bench_command, "keras-bench.json",
             read_bench),
        Step("overhead", "the harness's overhead over a bare PyTorch loop, fp32", 30, 90, overhead_command,
             "overhead.json", read_overhead),
        Step("env", "rosetta env", 15, 60, lambda check: check.rosetta("env", "--json", check.json_path("env.json")),
             "env.json", read_env, any_device=True),
    ]


STEP_NAMES = tuple(step.name for step in default_steps())


# ---- running them -------------------------------------------------------------------------------------------------
def run_command(argv: list[str], timeout: float, log: Path, env: dict) -> tuple[int | None, float, str]:
    """Run `argv` in a process group of its own, output to `log`, for at most `timeout` seconds (then the group is
    stopped: SIGTERM, which rosetta treats as Ctrl-C and cleans up after, then SIGKILL). (exit status, or None
    where it timed out; seconds; its last line of output)."""
    start = time.monotonic()
    with open(log, "w") as output:
        process = subprocess.Popen(argv, stdout=output, stderr=subprocess.STDOUT, cwd=ROOT, env=env,
                                   start_new_session=True)
        try:
            code = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            code = None
            for stop, grace in ((signal.SIGTERM, STOP_GRACE_S), (signal.SIGKILL, None)):
                try:
                    os.killpg(process.pid, stop)
                    process.wait(timeout=grace)
                    break
                except ProcessLookupError:
                    break
                except subprocess.TimeoutExpired:
                    continue
    return code, time.monotonic() - start, last_line(log)


def last_line(log: Path) -> str:
    """The line a failed command ends on: rosetta's one-line error where it printed one, else its last line."""
    lines = [line.strip() for line in log.read_text(errors="replace").splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("rosetta: error:")]
    return (errors or lines or [""])[-1][:400]


def run_step(check: Check, step: Step) -> dict:
    record = {"name": step.name, "what": step.what, "status": "", "reason": "", "needs_s": step.needs_s}
    left = check.left()
    if check.only and step.name not in check.only:
        record.update(status="not asked", reason=f"--only {','.join(check.only)}")
    elif check.unavailable and not step.any_device:
        record.update(status="unavailable", reason=f"--device {check.device}: {check.unavailable}; not run, so that "
                                                   "no figure from another device stands under its label")
    elif left < step.needs_s:
        record.update(status="skipped", reason=f"the budget cannot hold it: it needs about {step.needs_s:.0f} s and "
                                               f"{max(left, 0):.0f} s of the {check.budget_s:.0f} s budget are left")
    else:
        argv = step.command(check)
        left = check.timeout_left()  # a probe the command needed took some of it
        if isinstance(argv, str):
            record.update(status="skipped", reason=argv)
        elif left < 1:
            record.update(status="skipped", reason=f"the {check.budget_s:.0f} s budget is spent")
        else:
            written = check.json_path(step.json_file) if step.json_file else None
            if written and written.exists():
                written.unlink()  # an earlier run's file is not this run's result
            timeout = min(step.cap_s, left)
            log = check.out / "logs" / f"{step.name}.log"
            code, seconds, line = run_command(argv, timeout, log, check.env())
            record.update(command=argv, timeout_s=round(timeout, 1), seconds=round(seconds, 1), exit_status=code,
                          log=str(log), json=str(written) if written else None)
            if code is None:
                record.update(status="timed out",
                              reason=f"stopped after its {timeout:.0f} s timeout; last line: {line}")
            elif written and written.exists():
                record["status"] = "ok" if code == 0 else "done with failures"
                record["reason"] = "" if code == 0 else f"exit {code}: {line}"
                if step.read:
                    step.read(check, record, json.loads(written.read_text()))
            elif written or code:
                record.update(status="failed", reason=f"exit {code}: {line}")
            else:
                record.update(status="ok", output=line)
    if step.name == "verify" and check.keras_refused:
        for model in check.models():  # the rows the Keras half would have been, each saying why not
            check.summary["verify"].append({"model": model, "target": "keras", "verdict": "CANNOT",
                                            "reason": check.keras_refused, "device": "", "error_ratio": None,
                                            "figure": False})
    return record


def probe_card(check: Check) -> None:
    """The card (torch.cuda.get_device_name) and whether PyTorch sees the device asked: where it definitely does
    not, no step runs (each says why), so that nothing measured elsewhere is labelled as this device."""
    if check.device == "cpu":
        check.summary["card"] = cpu_name()
    if check.timeout_left() < 1:
        return
    code, seconds, line = run_command([check.python, "-c", PROBE], min(60.0, check.timeout_left()),
                                      check.out / "logs" / "probe.log", check.env())
    found = json.loads(line) if code == 0 and line.startswith("{") else {"failed": line or f"exit {code}"}
    check.summary["probe"] = {**found, "seconds": round(seconds, 1)}
    if check.device != "cuda":
        return
    if found.get("card"):
        check.summary["card"] = found["card"]
    elif "error" in found:
        check.unavailable = found["error"]
    elif found.get("cuda") is False:
        check.unavailable = f"PyTorch {found.get('torch')} sees no CUDA device"
    if check.unavailable:
        check.summary["unavailable"] = f"no CUDA device: {check.unavailable}"


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return f"CPU: {line.split(':', 1)[1].strip()} ({os.cpu_count()} cores)"
    except OSError:
        pass
    return f"CPU: {platform.machine()} ({os.cpu_count()} cores)"


def commit() -> str:
    try:
        return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              timeout=10).stdout.strip() or "-"
    except (OSError, subprocess.SubprocessError):
        return "-"


def run_check(check: Check, steps: list[Step] | None = None) -> dict:
    """Every step in order, the summary saved after each; returns the summary."""
    for folder in (check.out, check.out / "steps", check.out / "logs"):
        folder.mkdir(parents=True, exist_ok=True)
    check.summary = {"check": "rosetta device check (issue 41)", "device": check.device, "budget_s": check.budget_s,
                     "started": datetime.now(timezone.utc).isoformat(timespec="seconds"), "commit": commit(),
                     "python": platform.python_version(), "workloads": list(check.workloads),
                     "bench_steps": check.bench_steps, "card": None, "steps": [], "bench": [], "verify": [],
                     "overhead": [], "environment variables": {name: check.env()[name] for name in
                                                               ("KERAS_BACKEND", "XLA_PYTHON_CLIENT_PREALLOCATE")}}
    check.save()
    probe_card(check)
    check.save()
    for step in default_steps() if steps is None else steps:
        check.summary["steps"].append(run_step(check, step))
        check.save()
    check.summary["finished"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    check.save()
    return check.summary


# ---- what the commands wrote, as rows -----------------------------------------------------------------------------
def number(value) -> float | None:
    """A finite float, or None (rosetta writes NaN as "NaN")."""
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def device_matches(asked: str, reported) -> bool:
    """Whether a device read back is the one asked: a cuda row must report a GPU and nothing on the CPU."""
    text = str(reported or "").lower()
    if asked == "cuda":
        return ("cuda" in text or "gpu" in text) and "cpu" not in text
    return "cpu" in text and "cuda" not in text and "gpu" not in text


def bench_rows(found: dict, step: str, asked: str) -> list[dict]:
    """The rows of a `rosetta bench --json` payload; a row whose device read back is not `asked` keeps no figure."""
    rows = []
    for result in found.get("results", []):
        settings = result.get("settings") or {}
        reported = settings.get("device used", "")
        row = {"step": step, "workload": result.get("workload"), "target": result.get("target"),
               "framework": result.get("framework"), "device asked": result.get("device"),
               "device reported": reported, "variant": settings.get("speed", ""),
               "precision in force": settings.get("precision in force"), "status": result.get("status"),
               "reason": result.get("reason", ""), "steps": result.get("steps"), "batch": result.get("batch"),
               "median_s": number(result.get("median_s")), "dlf_value": number(result.get("dlf_value")),
               "unit": result.get("unit"), "samples_per_s": number(result.get("samples_per_s")),
               "fraction_of_peak": number(result.get("fraction_of_peak")),
               "peak_device_mb": number(result.get("peak_device_mb")), "figure": False}
        if row["status"] == "ok" and not device_matches(asked, reported):
            row.update(status="wrong device", reason=f"asked {asked}, reported {reported or 'nothing'}")
        row["figure"] = row["status"] == "ok" and row["dlf_value"] is not None
        if not row["figure"]:
            for key in ("median_s", "dlf_value", "samples_per_s", "fraction_of_peak"):
                row[key] = None
        rows.append(row)
    return rows


def verify_rows(found: dict, asked: str) -> list[dict]:
    rows = []
    for result in found.get("results", []):
        ratios = [number(output.get("error_ratio")) for output in result.get("outputs", [])]
        ratios = [ratio for ratio in ratios if ratio is not None]
        row = {"model": result.get("model"), "target": result.get("target"), "verdict": result.get("verdict"),
               "reason": result.get("reason", ""), "device": result.get("device", ""),
               "error_ratio": max(ratios) if ratios else None, "figure": True}
        if row["verdict"] in ("PASS", "FAIL", "INCONCLUSIVE") and not device_matches(asked, row["device"]):
            row.update(verdict="wrong device", reason=f"asked {asked}, reported {row['device'] or 'nothing'} "
                                                      f"(rosetta said {result.get('verdict')})", error_ratio=None)
        row["figure"] = row["error_ratio"] is not None
        rows.append(row)
    return rows


def overhead_row(workload: str, measured: dict, asked: str) -> dict:
    row = {"workload": workload, "overhead": None, "range": None, "devices": measured.get("devices"),
           "harness_s_per_step": None, "bare_s_per_step": None, "rounds": measured.get("rounds"),
           "reason": measured.get("error", "")}
    devices = measured.get("devices") or {}
    if not row["reason"] and not all(device_matches(asked, devices.get(side)) for side in ("harness", "bare")):
        row["reason"] = f"asked {asked}, reported harness {devices.get('harness')}, bare loop {devices.get('bare')}"
    if not row["reason"]:
        row.update(overhead=number(measured.get("overhead")), range=measured.get("overhead_range"),
                   harness_s_per_step=number(measured.get("harness_s_per_step")),
                   bare_s_per_step=number(measured.get("bare_s_per_step")))
    return row


# ---- the markdown -------------------------------------------------------------------------------------------------
def cell(value) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def short(text: str, length: int = 140) -> str:
    return text if len(text) <= length else text[:length - 3] + "..."


def figure(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}g}"


def precision_text(found) -> str:
    if isinstance(found, dict):
        return ", ".join(f"{key} {value}" for key, value in found.items())
    return str(found or "-")


def goal_text(row: dict, reference: dict | None) -> str:
    if row["device asked"] != "cuda":  # the goals are for an H100-class card: shown, not judged, elsewhere
        goals = GOALS.get(row["workload"], {})
        goal = KERAS_GOAL_RATIO if row["framework"] == "keras" else goals.get(str(row["variant"]).split("+")[0],
                                                                              goals.get("any"))
        return "-" if goal is None else f"<= {goal:g}{'x PyTorch' if row['framework'] == 'keras' else ''} on a GPU"
    if row["framework"] == "keras":
        if not (row["figure"] and reference and reference.get("figure")):
            return f"<= {KERAS_GOAL_RATIO:g}x PyTorch"
        ratio = row["dlf_value"] / reference["dlf_value"]
        return f"<= {KERAS_GOAL_RATIO:g}x PyTorch: {ratio:.2f}x, {'met' if ratio <= KERAS_GOAL_RATIO else 'not met'}"
    goals = GOALS.get(row["workload"], {})
    precision = str(row["variant"]).split("+")[0]
    goal = goals.get(precision, goals.get("any"))
    if goal is None:
        return "-"
    if not row["figure"]:
        return f"<= {goal:g}"
    return f"<= {goal:g}: {'met' if row['dlf_value'] <= goal else 'not met'}"


def markdown(summary: dict) -> str:
    card = summary.get("card") or summary.get("unavailable") or "card not named (no probe or env answered)"
    lines = [f"# rosetta device check: {card} (--device {summary.get('device')})", "",
             f"rosetta {summary.get('commit')}, Python {summary.get('python')}, started {summary.get('started')}, "
             f"{summary.get('seconds', 0):.0f} s of a {summary.get('budget_s', 0):.0f} s budget"
             f"{'' if summary.get('finished') else ' (still running, or cut short)'}; bench steps per cell: "
             f"{summary.get('bench_steps') or 'rosetta default'}. Measured by this run, nothing copied; DLF's "
             "P100 figures are its published ones (ilkarman/DeepLearningFrameworks, CUDA 8, cuDNN 6, as restated in "
             "../shared/reference/dlf-benchmarks.md); the goals are issue 41's.", ""]
    peaks = [(step["name"], step["peak"]) for step in summary.get("steps", []) if step.get("peak")]
    for name, peak in peaks:
        lines.append(f"- {name}: matmul peak {(number(peak.get('flops_per_s')) or 0) / 1e12:,.1f} TFLOP/s "
                     f"({peak.get('matmul')}, {peak.get('dtype')}) on {peak.get('device')}")
    if peaks:
        lines.append("")
    lines += ["| workload | target | variant | precision in force | device reported | median step | DLF figure | "
              "of peak | DLF P100 | goal | status |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    references = {(row["step"], row["workload"]): row for row in summary.get("bench", [])
                  if row["framework"] == "torch" and str(row["target"]).endswith("(reference)")}
    for row in summary.get("bench", []):
        dlf_name = DLF_FRAMEWORK.get(row["framework"])
        dlf = DLF_P100.get(row["workload"], {}).get(dlf_name)
        unit = row.get("unit") or ""
        status = row["status"] + (f": {short(row['reason'])}" if row["reason"] else "")
        median = "-" if row["median_s"] is None else f"{row['median_s'] * 1000:.3g} ms"
        share = "-" if row["fraction_of_peak"] is None else f"{100 * row['fraction_of_peak']:.2g} %"
        lines.append("| " + " | ".join(cell(value) for value in (
            row["workload"], row["target"], row["variant"] or "-", precision_text(row["precision in force"]),
            row["device reported"] or "-", median, f"{figure(row['dlf_value'])} {unit}" if row["figure"] else "-",
            share, f"{dlf:.3g} {unit} ({dlf_name})" if dlf is not None else "-",
            goal_text(row, references.get((row["step"], row["workload"]))), status)) + " |")
    if not summary.get("bench"):
        lines.append("| - | - | - | - | - | - | - | - | - | - | no bench row measured (see the steps below) |")
    lines += ["", "## Verify on the device", "",
              "| model | target | verdict | device reported | err / floor | reason |", "|---|---|---|---|---|---|"]
    for row in summary.get("verify", []):
        lines.append("| " + " | ".join(cell(value) for value in (
            row["model"], row["target"], row["verdict"], row["device"] or "-", figure(row["error_ratio"]),
            short(row["reason"] or "-"))) + " |")
    if not summary.get("verify"):
        lines.append("| - | - | not run | - | - | see the steps below |")
    lines += ["", "## Harness overhead on the device (median of paired rounds, harness / bare loop - 1)", ""]
    for row in summary.get("overhead", []):
        if row["overhead"] is None:
            lines.append(f"- {row['workload']}: not measured: {row['reason']}")
        else:
            low, high = row["range"] or (math.nan, math.nan)
            lines.append(f"- {row['workload']}: {100 * row['overhead']:+.1f} % (rounds {100 * low:+.1f} % to "
                         f"{100 * high:+.1f} %, {row['rounds']} rounds; harness {row['harness_s_per_step'] * 1000:.3g} "
                         f"ms a step) on {row['devices']}")
    if not summary.get("overhead"):
        lines.append("- not measured (see the steps below)")
    lines += ["", "## Steps, in priority order", "", "| step | status | seconds | why / what |", "|---|---|---|---|"]
    for step in summary.get("steps", []):
        lines.append("| " + " | ".join(cell(value) for value in (
            step["name"], step["status"], step.get("seconds", "-"), short(step["reason"] or step["what"], 300))) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budget", type=float, default=480.0, metavar="SECONDS",
                        help="wall time for the whole check (default 480); a step the rest cannot hold is skipped")
    parser.add_argument("--out", type=Path, default=Path("gpu-check"), metavar="DIR",
                        help=f"where {SUMMARY}, {TABLE}, each command's JSON (steps/) and log (logs/) go")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                        help="cuda (default); cpu with small --steps to try the check on a machine without a GPU")
    parser.add_argument("--steps", type=int, metavar="N", help="timed steps per bench cell (default: rosetta's, "
                                                               "200/100/40 on a GPU)")
    parser.add_argument("--workloads", default=",".join(WORKLOADS), help="comma-separated (default: all three)")
    parser.add_argument("--only", default="", help=f"run only these steps, comma-separated: {', '.join(STEP_NAMES)}")
    args = parser.parse_args(argv)
    workloads = tuple(name.strip() for name in args.workloads.split(",") if name.strip())
    only = tuple(name.strip() for name in args.only.split(",") if name.strip())
    unknown = [name for name in workloads if name not in WORKLOADS] + [name for name in only if name not in STEP_NAMES]
    if unknown or not workloads:
        parser.error(f"unknown {', '.join(unknown) or 'empty --workloads'}: workloads are {', '.join(WORKLOADS)}; "
                     f"steps are {', '.join(STEP_NAMES)}")
    if args.budget <= 0 or (args.steps is not None and args.steps < 1):
        parser.error("--budget and --steps take numbers above 0")
    check = Check(args.device, args.budget, args.out, workloads, args.steps, only)
    summary = run_check(check)
    print(markdown(summary), end="")
    print(f"written: {args.out / SUMMARY}, {args.out / TABLE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
