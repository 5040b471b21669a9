"""The command line's names for the library's parameters, in one table: the library's messages name a parameter
as `name=` (`resume= needs results_file=FILE`), and the command line says its flag instead (`--resume needs
--json FILE`), so that each reader is told what they typed."""

from __future__ import annotations

import re

FLAGS = {
    # the run settings (rosetta.RunSettings) and the tolerance (rosetta.Tolerance)
    "batch": "--batch", "seed": "--seed", "threads": "--threads", "device": "--device", "max_memory": "--max-memory",
    "trust_code": "--trust-code", "progress": "--no-progress", "executor": "--executor", "jobs": "--jobs",
    "address": "--address", "timeout": "--timeout", "work_dir": "--work-dir", "results_file": "--json",
    "atol": "--atol", "rtol": "--rtol", "tolerance": "--tolerance-multiple", "multiple": "--tolerance-multiple",
    # what each command names
    "models": "--model", "targets": "--targets", "to": "--to", "via": "--via", "inputs": "--input",
    "inputs_file": "--inputs", "load_outputs": "--load-outputs", "save_inputs": "--save-inputs",
    "save_outputs": "--save-outputs", "layer_map": "--layer-map", "locate": "--locate", "pair": "--pair",
    "train_steps": "--train-steps", "train_batch": "--train-batch", "labels": "--labels", "seeds": "--seed", "force": "--force",
    "opset": "--opset", "exporter": "--exporter", "training": "--training", "verify": "--no-verify",
    "workloads": "--workload", "steps": "--steps", "epochs": "--epochs", "data": "--data", "workers": "--workers",
    "baseline": "--baseline", "rounds": "--rounds", "precision": "--precision", "channels_last": "--channels-last",
    "compile": "--compile", "eager": "--eager", "cuda_graphs": "--cuda-graphs", "resident_data": "--resident-data",
    "plot_dir": "--plot-dir", "suite": "--suite", "modes": "--modes", "ops": "--ops", "cases": "--cases",
    "check": "--check", "resume": "--resume", "report_dir": "--report", "write_expectations": "--write-expectations",
}

_NAMES = "|".join(sorted(map(re.escape, FLAGS), key=len, reverse=True))
# name=, then: a switch's True or False; a quoted word (a shell needs no quotes for it); or whatever follows
_NAMED = re.compile(r"(?<![\w.-])(" + _NAMES + r")=(?:(True|False)(?![\w.])|'([\w.-]+)'(?![\w'])|(?=(.?)))")
_NEXT_NAMED = re.compile(r"/(" + _NAMES + r")=")  # atol=/rtol=: two flags, no value between


def as_flags(message: str) -> str:
    """`message` with each `name=` of a parameter said as its flag: `--flag VALUE` where a value follows the
    `=` (`device='cuda'`: `--device cuda`), `--flag` where the words go on or where a switch is on
    (`trust_code=True`: `--trust-code`; `verify=False`: `--no-verify`)."""
    def flag(match: re.Match) -> str:
        name, switch, word, following = match.groups()
        said = FLAGS[name]
        if switch is not None:  # the flag where it says this setting, else the words as they are
            return said if (switch == "False") == said.startswith("--no-") else match.group(0)
        if word is not None:
            return f"{said} {word}"
        valued = bool(following) and (following.isalnum() or following in "'\"[{(<*.-/~") and \
            not _NEXT_NAMED.match(message, match.end())
        return said + (" " if valued else "")
    return _NAMED.sub(flag, message)


def said_with_flags(done):
    """What a command prints and writes of a result (rosetta.Report, Conversion, BenchReport, ConformanceRun),
    each row's reason and each line said with flags (as_flags): the one place where the command line rewords the
    library's results, its tables and the JSON it writes alike."""
    from dataclasses import replace

    from rosetta.api import BenchReport, ConformanceRun, Conversion, Report

    if isinstance(done, Report):
        return replace(done, rows=[replace(row, reason=as_flags(row.reason), locate=_reason_said(row.locate),
                                           outputs=[_output_said(output) for output in row.outputs])
                                   for row in done.rows])
    if isinstance(done, Conversion):
        return replace(done, report=said_with_flags(done.report))
    if isinstance(done, BenchReport):
        return replace(done, results=[replace(row, reason=as_flags(row.reason)) for row in done.results],
                       head=[as_flags(line) for line in done.head], tail=[as_flags(line) for line in done.tail])
    if isinstance(done, ConformanceRun):
        # its check lines open with the parameter's name alone ("check: ..."), the others name it as `name=`
        lines = [as_flags("check=: " + line.removeprefix("check: ") if line.startswith("check: ") else line)
                 if isinstance(line, str) else line for line in done.renderables]
        return replace(done, rows=[_reason_said(row) for row in done.rows], renderables=lines)
    raise TypeError(f"no rows to say with flags in {type(done).__name__}")


def _reason_said(row: dict) -> dict:
    """A row as JSON (a conformance row, a located row's report) with its reason said with flags."""
    return {**row, "reason": as_flags(row["reason"])} if isinstance(row.get("reason"), str) else row


def _output_said(output):
    """One output's comparison (verify.results.OutputComparison, or a training check's) with its reason and its
    doubt about the reference said with flags: the JSON writes them beside the row's reason."""
    from dataclasses import fields, is_dataclass, replace

    if not is_dataclass(output):
        return output
    said = {field.name: as_flags(getattr(output, field.name)) for field in fields(output)
            if field.name in ("reason", "reference_doubt") and isinstance(getattr(output, field.name), str)}
    return replace(output, **said)
