"""rosetta as a library: verify, convert and time models from Python, as the `rosetta` command does.

    import rosetta
    report = rosetta.verify(torch_model, keras_port, inputs=["image:Nx3x32x32:float32"])
    report.passed, report.verdict, report.rows, report.located     # the figures the table shows
    print(report)                                                    # the table; in Jupyter, an HTML table
    report.raise_for_verdict()                                       # rosetta.VerificationFailed unless PASS

Models are what the command line takes (a path, `file.py:factory`, a reference model name such as "cnn") or
objects in memory: a torch.nn.Module, a keras.Model, an MXNet Gluon HybridBlock, an onnx.ModelProto (an
in-memory model is the caller's code: it is trusted). Nothing here exits the interpreter or prints, unless
`progress=True` draws a bar; errors are rosetta.RosettaError and its kinds (rosetta.errors), with the one-line
messages the command line prints; logging goes to logging.getLogger("rosetta"). The `rosetta` command is a
thin layer over these functions (rosetta/cli/)."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rosetta.convert.targets import EXPORT_DEFAULTS
from rosetta.errors import BadInput, CannotConvert, RosettaError, VerificationFailed, WorkerDied
from rosetta.execution import DEFAULT_TIMEOUT_S, run_environment
from rosetta.execution.executors import executor_for
from rosetta.settings import (FLAG as _FLAG, PATH as _PATH, RUN_TAKES, TEXT as _TEXT, RunSettings, Tolerance, flag,
                              listed, path_like, shown, text, whole)
from rosetta.sources.files import FORMATS_HELP as MODEL_FORMATS
from rosetta.verify.arguments import (check_arrays_fit, check_models, pair_texts, read_inputs,
                                     reference_model_names)
from rosetta.verify.results import CANNOT, ERROR, FAIL, INCONCLUSIVE, PASS, VerifyResult
from rosetta.verify.tolerance import DEFAULT_MULTIPLE

__all__ = ["verify", "convert", "bench", "models", "environment", "Report", "Row", "Conversion", "BenchReport",
           "Listing", "ConformanceRun", "conformance", "list_models", "list_targets", "list_workloads",
           "parse_input", "RunSettings", "Tolerance"]

LOG = logging.getLogger("rosetta")
Row = VerifyResult  # one (model, route, target, check) row: every figure the table shows, and its reason
# what each function takes as keywords besides its named parameters: options of its own, the RunSettings fields
# it reads (the same fields of `settings=`, given one by one), and atol/rtol (the Tolerance's bounds)
_RUN_FIELDS = tuple(RUN_TAKES)
_OPTIONS = {
    "verify": ("pair", "layer_map", "save_inputs", "save_outputs", "load_outputs", "inputs_file", "opset", "exporter",
               "training", "precision", "train_batch", "seeds", "labels", "atol", "rtol", *_RUN_FIELDS),
    "convert": ("force", "opset", "exporter", "training", "atol", "rtol",
                *(f for f in _RUN_FIELDS if f not in ("device", "work_dir"))),
    "bench": ("data", "overhead", "precision", "channels_last", "compile", "eager", "cuda_graphs", "resident_data",
              "plot_dir", *(f for f in _RUN_FIELDS if f not in ("seed", "max_memory", "trust_code"))),
    "conformance": ("write_expectations", "command",
                    *(f for f in _RUN_FIELDS if f not in ("batch", "seed", "threads", "device", "max_memory",
                                                          "trust_code"))),
}
# how bad a verdict is, for a report's overall verdict: the worst row's
_SEVERITY = {FAIL: 5, ERROR: 4, INCONCLUSIVE: 3, CANNOT: 2, PASS: 1, "converted": 1}


# ---- result objects ---------------------------------------------------------------------------------------------
@dataclass
class Report:
    """The rows of one verification, and what the command line's table, failure lines and --json show of them."""

    rows: list[VerifyResult]
    title: str = "rosetta verify"
    extra: dict = field(default_factory=dict)  # the --json payload's other fields (reference, tolerance, ...)
    info: dict = field(default_factory=dict)  # what a run with no rows did (inputs run, output names)

    @property
    def verdict(self) -> str:
        """The worst row's verdict: FAIL, then ERROR, INCONCLUSIVE, CANNOT, PASS ("PASS" for no rows)."""
        return max((row.verdict for row in self.rows), key=lambda v: _SEVERITY.get(v, 0), default=PASS)

    @property
    def passed(self) -> bool:
        """Every row PASSed (a CANNOT or INCONCLUSIVE row is not a pass)."""
        return bool(self.rows) and all(row.verdict in (PASS, "converted") for row in self.rows)

    @property
    def located(self) -> dict | None:
        """The first located row's LocateReport (as JSON): the first node or layer where it diverges."""
        return next((row.locate for row in self.rows if row.locate.get("verdict") == "located"), None)

    def __iter__(self) -> Iterator[VerifyResult]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def to_json(self) -> dict:
        """Exactly what `--json` writes (strict JSON: NaN and infinities as the strings "NaN", "Infinity")."""
        import json

        from rosetta.atomic import strict_json
        from rosetta.verify.results import results_payload

        return json.loads(json.dumps(strict_json(results_payload(self.rows, self.extra))))

    def message(self) -> str:
        """One line per row that is not a PASS, as an assertion says it (verdict_message); "PASS" when all are."""
        from rosetta.report.tables import verdict_message

        lines = [verdict_message(row) for row in self.rows if row.verdict not in (PASS, "converted")]
        return "\n".join(lines) or f"PASS: {len(self.rows)} row(s)"

    def raise_for_verdict(self) -> None:
        """VerificationFailed (its `report` is this one) unless every row PASSed; CannotConvert when the only
        rows that did not are CANNOT."""
        if self.passed:
            return
        kind = CannotConvert if all(r.verdict in (PASS, CANNOT, "converted") for r in self.rows) else VerificationFailed
        error = kind(self.message())
        error.report = self
        raise error

    def exit_status(self, strict: bool = False) -> int:
        """The command line's exit status for these rows: 0, 1 on a FAIL (strict: on anything but PASS), 3 on an
        ERROR without a FAIL."""
        from rosetta.verify.results import exit_status

        return exit_status([row.verdict for row in self.rows], strict)

    def write_json(self, path: str | os.PathLike) -> None:
        """to_json() to `path`, atomically (strict JSON)."""
        from rosetta.atomic import atomic_write_json

        atomic_write_json(Path(path), self.to_json())

    def write_locate(self, folder: str | os.PathLike) -> list[Path]:
        """For the located FAIL rows: an error/floor-by-depth chart (PNG) per model and Google Model Explorer
        node data per row, in `folder`; the files written."""
        from rosetta.report.locate import write_locate_reports

        multiple = (self.extra.get("tolerance") or {}).get("multiple", DEFAULT_MULTIPLE)
        return write_locate_reports(self.rows, Path(folder), multiple)

    def print(self, console=None, verbose: bool = False) -> None:
        """The table, in colour where `console` (a rich Console; default: stdout's) is a terminal, the line of
        each row that is not a PASS, the per-node table of each located row, and with `verbose` each failed
        stage's traceback."""
        from rich.console import Console

        from rosetta.report.tables import failure_lines, locate_table, verify_table

        console = console or Console()
        console.print(verify_table(self.rows, title=self.title))
        for line in failure_lines(self.rows):
            console.print(line, highlight=False)
        for row in self.rows:
            if row.locate.get("rows"):
                console.print(locate_table(row))
        if verbose:
            for row in self.rows:
                if row.detail:
                    console.print(row.detail, highlight=False, markup=False)

    def __str__(self) -> str:
        from rosetta.report.tables import results_text

        return results_text(self.rows, self.title)

    def _repr_html_(self) -> str:
        from rosetta.report.tables import results_html

        return results_html(self.rows, self.title)


@dataclass
class Conversion:
    """What `convert` made: each target's artifact folder (where it was written) and the verification report."""

    artifacts: dict[str, Path]  # target -> its folder (output_dir/TARGET)
    report: Report
    output_dir: Path | None = None
    manifest: dict = field(default_factory=dict)  # a reference model's one conversion: its manifest

    @property
    def passed(self) -> bool:
        return self.report.passed

    def __str__(self) -> str:
        written = "\n".join(f"{target}: {path}" for target, path in self.artifacts.items())
        return f"{self.report}\n{written}" if self.report.rows else written


@dataclass
class BenchReport:
    """The rows of a benchmark (bench.run.BenchResult: status, timings, settings), and its JSON and text."""

    results: list
    payload: dict  # what `rosetta bench --json` writes, its "results" read from `results` (to_json)
    head: list[str] = field(default_factory=list)  # the lines printed after the table, before the rows' own
    tail: list[str] = field(default_factory=list)  # after the rows' lines: notes, the charts written
    title: str = "rosetta bench"

    @property
    def renderables(self) -> list:
        """The table and the lines the command prints, made from the rows as they are now."""
        from rosetta.report.tables import bench_lines, bench_table

        return [bench_table(self.results, title=self.title), *self.head,
                *bench_lines(self.results, self.payload.get("overhead") or {}), *self.tail]

    def print(self, console=None) -> None:
        from rich.console import Console

        console = console or Console()
        for item in self.renderables:
            console.print(item, highlight=False)

    @property
    def passed(self) -> bool:
        """No cell FAILed (an n/a cell, a setting its framework lacks, is not a failure)."""
        return all(result.status != "FAIL" for result in self.results)

    def __iter__(self):
        return iter(self.results)

    def to_json(self) -> dict:
        """Exactly what `rosetta bench --json` writes."""
        return {key: [r.to_json() for r in self.results] if key == "results" else value
                for key, value in self.payload.items()}

    def __str__(self) -> str:
        from rosetta.report.tables import rendered_text

        return rendered_text(self.renderables)


# ---- what the functions take ------------------------------------------------------------------------------------
# the checks of rosetta.settings, by the short names this module has always used
_whole, _flag, _text, _path_like, _shown = whole, flag, text, path_like, shown


def _names(value) -> bool:
    return _text(value) or (isinstance(value, (list, tuple)) and bool(value) and all(_text(v) for v in value))


# every parameter and option of the public functions with a kind of its own: what it takes, as a check and as
# the words of the BadInput that refuses anything else (the RunSettings fields' are settings.RUN_TAKES). inputs,
# tolerance, atol, rtol and pair are read by their own readers (_inputs, Tolerance.given, _pair_texts), which
# refuse in the same words.
_WHOLE_1, _WHOLE_0 = (_whole(1), "a whole number, 1 or more"), (_whole(0), "a whole number, 0 or more")


def _names_of(what: str) -> tuple[Callable[[Any], bool], str]:
    return _names, f"{what} names: one, several comma-separated ('a,b'), 'all', or a list of them"


_TAKES: dict[str, tuple[Callable[[Any], bool], str]] = {
    **RUN_TAKES,
    **dict.fromkeys(("steps", "epochs", "rounds", "workers", "train_batch", "opset"), _WHOLE_1),
    "seeds": (lambda v: isinstance(v, (list, tuple)) and bool(v) and all(_whole(0)(s) for s in v),
              "a list of whole numbers, 0 or more"),
    "train_steps": _WHOLE_0,
    **dict.fromkeys(("locate", "verify", "force", "overhead", "channels_last", "compile", "eager", "cuda_graphs",
                     "resident_data", "resume"), _FLAG),
    **dict.fromkeys(("via", "baseline", "precision", "command", "suite", "route", "text"), _TEXT),
    "exporter": (lambda v: v in ("torchscript", "dynamo"), "'torchscript' or 'dynamo' (torch.onnx's exporters)"),
    "training": (lambda v: v in ("eval", "preserve", "train"), "the export mode, 'eval', 'preserve' or 'train'"),
    **dict.fromkeys(("to", "targets"), _names_of("target")), "workloads": _names_of("workload"),
    "modes": _names_of("mode"), "ops": _names_of("ONNX operator"), "cases": _names_of("test case"),
    **dict.fromkeys(("output_dir", "data", "plot_dir", "report_dir", "write_expectations", "save_inputs",
                     "save_outputs", "load_outputs", "inputs_file", "layer_map"), _PATH),
    "check": (lambda v: _flag(v) or _path_like(v), "True (the committed expectations), False, or a path"),
}


def _check_parameters(function: Callable, given: dict) -> None:
    """BadInput, before any work, for the first of `function`'s named parameters (`given`: its locals on entry)
    whose value is not what it takes, naming the parameter and what it takes; None passes where it is the
    default."""
    import inspect

    parameters = inspect.signature(function).parameters
    for name, value in given.items():
        if name not in _TAKES or name not in parameters or (value is None and parameters[name].default is None):
            continue
        check, takes = _TAKES[name]
        if not check(value):
            raise BadInput(f"{name}: {takes}; got {_shown(value)}")


def _run_and_options(name: str, settings: RunSettings | None, options: dict) -> tuple[RunSettings, dict]:
    """(the run settings: `settings` with the RunSettings fields among `options`, checked; the function's own
    options, checked, None dropped). A keyword `name` does not take is refused with the ones it takes."""
    if settings is not None and not isinstance(settings, RunSettings):
        raise BadInput(f"settings: a rosetta.RunSettings; got {_shown(settings)}")
    takes = _OPTIONS[name]
    unknown = sorted(set(options) - set(takes))
    if unknown:
        raise BadInput(f"unknown option(s) {', '.join(unknown)}; {name} takes {', '.join(sorted(takes))} besides "
                       f"its named parameters; see help(rosetta.{name})")
    own = {}
    for key, value in options.items():
        if key in RUN_TAKES or value is None:
            continue
        if key in _TAKES and not _TAKES[key][0](value):
            raise BadInput(f"{key}: {_TAKES[key][1]}; got {_shown(value)}")
        own[key] = value
    run = (settings or RunSettings()).updated(**{key: value for key, value in options.items() if key in RUN_TAKES})
    return run, own


def _listed(names: str | Sequence[str] | None) -> list[str] | None:
    """Names as a list: "a,b" split, a list as given (None stays None)."""
    return None if names is None else listed(names)


DEFAULT_BATCH = 8  # rows of generated inputs for verify and convert where the run settings leave it to the call


# ---- the functions ---------------------------------------------------------------------------------------------
def verify(reference, candidate=None, *, inputs=None, targets: str | Sequence[str] | None = None, via: str = "onnx",
           locate: bool = False, train_steps: int = 0, tolerance=None, settings: RunSettings | None = None,
           **options) -> Report:
    """Is `candidate` the same function as `reference`? Run both on the same inputs and compare, with the
    calibrated tolerance (a multiple of the reference's own float32 noise floor), as `rosetta verify` does.

    reference, candidate: a path, `file.py:factory`, or a model object (torch.nn.Module, keras.Model, Gluon
        HybridBlock, onnx.ModelProto); `candidate` may be a list of them. With a reference model name
        ("cnn", "gru", "resnet50", "all") and no candidate: that model converted to `targets` (default
        "onnxruntime") by `via` ("onnx", "mmdnn"), run on `device` ("cpu", "cuda") and verified against PyTorch
        on the CPU; `train_steps` then adds training. A PyTorch training setup, the tuple (module, torch.optim
        optimizer, loss_fn), and one compiled keras.Model (its optimiser and loss from model.compile), either one
        first, or their files (`setup.py:fn` returning the setup, a saved .keras file): the inference rows of the
        module, and with `train_steps` a training row (rosetta.verify.port_training: both
        sides trained on the same seeded batches, the loss and every paired parameter compared after every step,
        the first diverging step and the training bug named); it needs `labels`.
    inputs: arrays (dict by input name, or a list in input order) to run, or specs ("name:SHAPE:DTYPE[:LOW:HIGH]")
        of generated ones (`batch`, `seed`); a torch module or Gluon block needs them.
    tolerance: None (calibrated, K = 10.5), a multiple of the noise floor, {"atol": ..., "rtol": ...}, or a
        rosetta.Tolerance; atol, rtol (options): a number, or {output name: number}.
    locate: for each FAIL, the first node or layer where it diverges (Report.located).
    settings: a rosetta.RunSettings (batch, seed, threads, device, max_memory, trust_code: let model files run
        their code, as factories and Lambda layers do (in-memory models always may), progress, verbose, executor,
        jobs, address, timeout, work_dir, results_file); each of its fields may be given as a keyword instead,
        over the object's.
    options: the RunSettings fields, atol, rtol, pair ({"image": "input_1"} or {"image": ("input_1", (0, 2, 3, 1))}: inputs and outputs paired by
        hand where names, position and shape up to a layout permutation leave more than one pairing), layer_map
        (a file pairing layers for locate), save_inputs, save_outputs, load_outputs, inputs_file (paths),
        opset, exporter, training, precision, train_batch, seeds, address (Ray),
        labels (the labels' spec for a training setup's train_steps, "labels:N:int64:0:4": class indices 0..3).
    Returns a Report; raises rosetta.RosettaError (one line) for bad input, before any work."""
    _check_parameters(verify, locals())
    run, options = _run_and_options("verify", settings, options)
    bounds = Tolerance.given(tolerance, options.pop("atol", None), options.pop("rtol", None))
    export = {key: options.pop(key) for key in ("opset", "exporter", "training") if key in options}
    with run_environment(run.timeout, run.verbose):
        names = reference_model_names(reference) if candidate is None else None
        if names is not None:
            from rosetta.verify.matrix import TrainingPlan, verify_reference_models

            given = {key: options.pop(key) for key in ("seeds", "train_batch", "precision") if key in options}
            _refuse_unused(options, "verify of reference models")
            training = TrainingPlan(train_steps or None, given.get("train_batch", 4), given.get("precision", "float32"))
            done = verify_reference_models(names, _listed(targets) or ["onnxruntime"], _listed(via) or ["onnx"], run, bounds,
                                           seeds=given.get("seeds", [run.seed]), export=export, training=training,
                                           executor=executor_for(run), locate=locate)
            where = "" if run.device == "cpu" else f", targets on {run.device}"
            return Report(done.results, f"rosetta verify ({done.policy.describe()}{where})",
                          {"tolerance": done.policy.to_json(), "device": run.device})
        from rosetta.sources.training_setup import is_training_setup

        if isinstance(candidate, list) and len(candidate) == 1:
            candidate = candidate[0]  # one candidate, given as the command line's list of them
        setups = (reference if is_training_setup(reference) else None,
                  candidate if is_training_setup(candidate) else None)
        given = (reference, candidate)  # inference compares a setup's module; training the whole setup
        reference, candidate = (setup[0] if setup is not None else model for setup, model in zip(setups, given))
        labels = options.pop("labels", None)
        if targets is not None:
            raise BadInput("targets= is for reference models (verify('cnn', targets='keras')); give a candidate "
                           "model to compare with the reference instead")
        from rosetta.verify.files import FileOptions, verify_files

        specs, arrays = read_inputs(inputs)
        files = FileOptions(**{key: _path(options.pop(key, None)) for key in ("inputs_file", "load_outputs",
                                                                           "save_inputs", "save_outputs", "layer_map")})
        pairs = pair_texts(options.pop("pair", None))
        _refuse_unused({**export, **options, **({"work_dir": run.work_dir} if run.work_dir else {})},
                       "verify of two or more models")
        if arrays is not None:
            check_arrays_fit(arrays, run.max_memory)
        candidates = [] if candidate is None else list(candidate) if isinstance(candidate, (list, tuple)) else [candidate]
        check_models([reference, *candidates])
        training = _port_training(given, setups, specs, labels, train_steps, run, bounds.multiple) \
            if train_steps else None
        done = verify_files([reference, *candidates], run, bounds, inputs=specs, feeds=arrays, files=files,
                            executor=executor_for(run), locate=locate, pairs=pairs)
        rows = list(done.results)
        if training is not None:
            rows.append(training())
    where = "" if run.device == "cpu" else f", compared models on {run.device}"
    return Report(rows, f"rosetta verify: against {done.reference} ({done.policy.describe()}{where})",
                  {"reference": done.reference, "tolerance": done.policy.to_json(), "device": run.device},
                  {"reference": done.reference, "inputs": done.inputs, "outputs": done.outputs})


def _port_training(given: tuple, setups: tuple, specs: list, labels, steps: int, run: RunSettings,
                   multiple: float | None) -> Callable[[], VerifyResult]:
    """What makes the training row of train_steps= between two models (rosetta.verify.port_training), checked
    before any work: a PyTorch training setup (module, optimizer, loss_fn) against one compiled keras.Model or a
    Gluon factory file (gluon_setup.py:fn, trained in the MXNet worker), in memory in either order, or as files (a
    factory `setup.py:fn` returning the setup and a saved .keras file with its compile config, or a Gluon factory),
    with the labels' spec; the first model is the reference."""
    from rosetta.sources.memory import kind_of, label_of

    if all(isinstance(model, (str, os.PathLike)) for model in given):
        from rosetta.verify.port_training import TrainingOptions, file_pair, verify_port_training_files

        texts = [str(model) for model in given]
        file_pair(*texts)
        label_spec, batch = _training_data(labels, specs, run)
        options = TrainingOptions(multiple=multiple, trust_code=run.trust_code)
        return lambda: verify_port_training_files(texts[0], texts[1], specs, label_spec, steps, batch, run.seed,
                                                  options)
    side = "torch" if setups[0] is not None else "keras"
    setup, port = (setups[0], given[1]) if side == "torch" else (setups[1], given[0])
    from rosetta.sources.training_setup import check_gluon_setup, is_gluon_setup_text

    if setup is not None and isinstance(port, (str, os.PathLike)) and is_gluon_setup_text(port):  # a Gluon file
        text = check_gluon_setup(port, run.trust_code)
        label_spec, batch = _training_data(labels, specs, run)

        def gluon_row() -> VerifyResult:
            from rosetta.verify.port_training import verify_port_training

            return verify_port_training(setup, text, specs, label_spec, steps, batch, run.seed, multiple,
                                        label_of(setup[0]) if side == "torch" else str(port),
                                        "torch" if side == "torch" else "gluon").row
        return gluon_row
    if setup is None or isinstance(port, (str, os.PathLike, list)) or kind_of(port) != "keras":
        raise BadInput("train_steps= between two models: a PyTorch training setup, the tuple (module, optimizer, "
                       "loss_fn), and one compiled keras.Model (model.compile(optimizer, loss)), either first; or "
                       "their files (setup.py:fn and a .keras file)")
    if getattr(port, "optimizer", None) is None:
        raise BadInput(f"{label_of(port)}: not compiled; model.compile(optimizer, loss) says how it trains, rosetta "
                       "would have to guess")
    label_spec, batch = _training_data(labels, specs, run)

    def row() -> VerifyResult:
        from rosetta.scratch import scratch_folder
        from rosetta.verify.port_training import verify_port_training

        with scratch_folder("rosetta-port-training-") as scratch:
            path = Path(scratch) / "port.keras"
            port.save(str(path))  # with its compile config: the worker trains it as compiled
            return verify_port_training(setup, str(path), specs, label_spec, steps, batch, run.seed, multiple,
                                        label_of(setup[0] if side == "torch" else port), side).row
    return row


def _training_data(labels, specs: list, run: RunSettings) -> tuple:
    """The labels' TensorSpec and the batch of train_steps= between two models, refused in one line where missing."""
    from rosetta.sources.signature import parse_input_option

    if labels is None or not (_text(labels) or (hasattr(labels, "shape") and hasattr(labels, "dtype"))):
        raise BadInput("labels: train_steps= between two models needs the labels' spec, e.g. "
                       f"labels='labels:N:int64:0:4' (class indices 0..3); got {_shown(labels)}")
    label_spec = labels if hasattr(labels, "shape") else parse_input_option(labels)
    if not specs:
        raise BadInput("inputs: train_steps= between two models needs the inputs' specs, e.g. inputs=['x:Nx6:float32']")
    return label_spec, run.batch or DEFAULT_BATCH


def convert(model, to: str | Sequence[str], *, via: str = "onnx", output_dir: str | os.PathLike | None = None,
            inputs=None, verify: bool = True, locate: bool = False, tolerance=None,
            settings: RunSettings | None = None, **options) -> Conversion:
    """Convert `model` to each target of `to` ("onnx,torch", a list, or "all") by `via` ("onnx" or "mmdnn"),
    verify each conversion against the model on generated or given inputs (unless verify=False), and write
    each to output_dir/TARGET (a new temporary folder when None: the caller owns it), as `rosetta convert`.

    model: a path, `file.py:factory`, a model object, or a reference model name (one target then, no report).
    Other arguments as verify's; options: force (replace what rosetta wrote in output_dir before), opset,
    exporter, training, atol, rtol, and the RunSettings fields but device and work_dir.
    Returns a Conversion: {target: folder} and the Report (a target that cannot be converted is a CANNOT row)."""
    import tempfile

    _check_parameters(convert, locals())
    run, options = _run_and_options("convert", settings, options)
    targets = _listed(to)
    export = {key: options.pop(key) for key in ("opset", "exporter", "training") if key in options}
    force = bool(options.pop("force", False))
    bounds = Tolerance.given(tolerance, options.pop("atol", None), options.pop("rtol", None))
    specs, _ = read_inputs(inputs)
    output = Path(output_dir) if output_dir is not None else Path(tempfile.mkdtemp(prefix="rosetta-convert-"))
    with run_environment(run.timeout, run.verbose):
        names = reference_model_names(model)
        if names is not None:
            from rosetta.verify.matrix import convert_reference

            manifest = convert_reference(names, targets, via, output, run, export=export, force=force)
            return Conversion({manifest["chain"][-1]: output}, Report([], "rosetta convert"), output, manifest)
        from rosetta.verify.files import ConvertRequest, convert_and_verify_file

        check_models([model])
        request = ConvertRequest(tuple(targets), output, via, export, force, verify, locate)
        done = convert_and_verify_file(model, request, run, bounds, inputs=specs, executor=executor_for(run))
    title = f"rosetta convert {done.model_label}" + (f" ({done.policy.describe()})" if verify else "")
    report = Report(done.results, title, {"model": done.model_file, "output": str(output),
                                          "tolerance": done.policy.to_json(), "verified": verify})
    return Conversion({name: output / name for name in done.written}, report, output)


def bench(workloads: str | Sequence[str] = "all", targets: str | Sequence[str] = "all", *, steps: int | None = None,
          epochs: int | None = None, baseline: str = "reference", rounds: int = 3, workers: int = 1,
          settings: RunSettings | None = None, **options) -> BenchReport:
    """Time the DLF workloads ("cnn-train", "gru-train", "resnet50-features", comma-separated, a list, or "all")
    in each target's framework (the PyTorch reference always timed too), each cell in a process of its own, as
    `rosetta bench` does: `steps` (or `epochs`) per cell, `baseline` "native" (each converted model against the
    framework's hand-written one, alternating for `rounds` rounds), `workers` > 1 (training data-parallel).
    Options: the speed variant (precision "fp32", "tf32", "amp-fp16", "amp-bf16"; channels_last, compile, eager,
    cuda_graphs, resident_data), data (the DLF data sets' folder; default synthetic), overhead (default True),
    plot_dir, and the RunSettings fields but seed, max_memory and trust_code: device "cpu" or "cuda", batch
    (default: DLF's), ... Returns a BenchReport: its rows (bench.run.BenchResult), the --json payload, what the
    command prints, and with `plot_dir` one PNG chart per workload."""
    _check_parameters(bench, locals())
    run, options = _run_and_options("bench", settings, options)
    from rosetta.bench.plan import bench_workloads
    from rosetta.bench.run import BenchOptions
    from rosetta.report.bench import bench_said

    speed = {"precision": options.get("precision", "fp32"),
             **{switch: bool(options.get(switch, False))
                for switch in ("channels_last", "compile", "eager", "cuda_graphs", "resident_data")}}
    timing = BenchOptions(steps=steps, epochs=epochs, data=_path(options.get("data")),
                          overhead=bool(options.get("overhead", True)), baseline=baseline, rounds=rounds, speed=speed,
                          workers=workers, plot_dir=_path(options.get("plot_dir")))
    runs_on = executor_for(run)
    with run_environment(run.timeout, run.verbose):
        done = bench_workloads(_listed(workloads), _listed(targets), timing, run, runs_on)
    said = bench_said(done, run, timing, runs_on.describe())
    return BenchReport(done.results, said.payload, said.head, said.tail, f"rosetta bench ({run.device})")


@dataclass
class ConformanceRun:
    """What `conformance` did: every (case, target) row as JSON, the lines to say, and the exit status."""

    rows: list[dict]
    renderables: list
    status: int

    def print(self, console=None) -> None:
        from rich.console import Console

        console = console or Console()
        for item in self.renderables:
            console.print(item, highlight=False)


def conformance(targets: str | Sequence[str] = "all", suite: str | Sequence[str] = "node", *,
                modes: str | Sequence[str] = "all", ops: str | Sequence[str] | None = None,
                cases: str | Sequence[str] | None = None, check: str | os.PathLike | bool | None = None,
                resume: bool = False, report_dir: str | os.PathLike | None = None,
                settings: RunSettings | None = None, **options) -> ConformanceRun:
    """ONNX's backend test cases through every ONNX-route target, as `rosetta conformance` runs them: `suite`
    ("node", "pytorch-converted", "pytorch-operator", "simple", comma-separated, or "all") in `modes` ("plain":
    every input a graph input; "initializers": what real models hold as constants bound; or "all"), the cases of `ops`
    or named `cases`; `check` (True: the committed expectations, or a file) compares every pair's verdict with
    the expected one; `resume` keeps the rows of the results file; `report_dir` gets conformance.md and the heat
    map. Options: write_expectations (a file for this run's verdicts), command (as the report names the run),
    and the RunSettings fields results_file (rewritten as it goes), work_dir, progress, verbose, executor, jobs,
    address, timeout (rosetta.verify.conformance.run does the work)."""
    _check_parameters(conformance, locals())
    run, options = _run_and_options("conformance", settings, options)
    from rosetta.convert.targets import parse_target_list
    from rosetta.report.conformance import conformance_said, summary
    from rosetta.verify.conformance.run import CaseSelection, Expectations, run_suites

    chosen = parse_target_list(listed(targets))
    selection = CaseSelection.given(suite, modes, ops, cases)
    expected = Expectations(check if isinstance(check, bool) else _path(check), _path(options.get("write_expectations")))
    with run_environment(run.timeout, run.verbose):
        done = run_suites(chosen, selection, run, resume=resume, expected=expected, executor=executor_for(run),
                          summarize=summary)
    said = conformance_said(done, _path(report_dir), options.get("command", "rosetta conformance"))
    return ConformanceRun(done.rows, said, done.status)


@dataclass
class Listing:
    """What `rosetta models` and `rosetta env` show: rich renderables to print, and the JSON they write."""

    renderables: list
    payload: dict
    failed: bool = False  # env: a framework the README promises cannot be imported

    def print(self, console=None) -> None:
        from rich.console import Console

        console = console or Console()
        for item in self.renderables:
            console.print(item, highlight=False)

    def to_json(self) -> dict:
        return self.payload


def models() -> Listing:
    """The reference models: inputs, outputs, parameter counts, DLF hyper-parameters."""
    from rosetta.models import get_model
    from rosetta.models import list_models as registered
    from rosetta.report.tables import models_table

    specs = [get_model(name) for name in registered()]
    return Listing([models_table(specs)], {"models": [spec.to_json() for spec in specs]})


def environment() -> Listing:
    """Each framework's version, the devices it sees, its CUDA/cuDNN build and settings, read in the process
    that runs it; the converters' versions."""
    from rosetta.report.environment import environment_said

    return Listing(*environment_said())


def list_workloads() -> list[str]:
    """The DLF workloads `bench` times."""
    from rosetta.bench.workloads import WORKLOADS

    return list(WORKLOADS.keys())


def parse_input(text: str):
    """An input spec, "name:SHAPE:DTYPE[:LOW:HIGH]" (e.g. "image:Nx3x32x32:float32"), as a TensorSpec."""
    _check_parameters(parse_input, locals())
    from rosetta.sources.signature import parse_input_option

    return parse_input_option(text)


def check_settings() -> None:
    """The environment variables rosetta reads (ROSETTA_WORKER_TIMEOUT), checked before any work."""
    from rosetta.errors import EnvironmentFailed
    from rosetta.execution import timeout_seconds

    try:
        timeout_seconds()
    except EnvironmentFailed as error:
        raise BadInput(str(error)) from None


def check_writable(path: str | os.PathLike | None, folder: bool = False) -> None:
    """Refuse, before any work, a file (or folder) that results cannot be written to."""
    from rosetta.output import check_writable_file, check_writable_folder

    if path is not None:
        (check_writable_folder if folder else check_writable_file)(Path(path))


def write_json(path: str | os.PathLike, payload: dict) -> None:
    """`payload` as strict JSON to `path`, atomically."""
    from rosetta.atomic import atomic_write_json

    atomic_write_json(Path(path), payload)


def list_models() -> list[str]:
    """The reference models' names (rosetta.models)."""
    from rosetta.models import list_models as registered

    return list(registered())


def list_targets(route: str = "onnx") -> list[str]:
    """The targets a route reaches."""
    _check_parameters(list_targets, locals())
    from rosetta.convert.targets import list_targets as registered

    return ["onnx"] + registered(route) if route == "onnx" else registered(route)


def _path(value) -> Path | None:
    return None if value is None else Path(value)


def _refuse_unused(options: dict, what: str) -> None:
    """Refuse, before any work, the options that this kind of run does not take."""
    if options:
        raise BadInput(f"option(s) {', '.join(sorted(options))}: not for a {what}; see help(rosetta.verify)")


# the kinds a caller may catch, re-exported for `except rosetta.WorkerDied:` and the like
__all__ += ["RosettaError", "BadInput", "CannotConvert", "VerificationFailed", "WorkerDied"]
# what the command line's help says (rosetta/cli/)
__all__ += ["EXPORT_DEFAULTS", "DEFAULT_TIMEOUT_S", "MODEL_FORMATS"]

# `import rosetta.verify.files as files` looks `files` up on rosetta.verify, this function, then falls back to
# sys.modules[f"{its __name__}.files"]: the qualified name makes that the subpackage's module (rosetta/__init__.py)
for _function in (verify, convert, bench, models):
    _function.__name__ = f"rosetta.{_function.__name__}"

