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
_NAMED = re.compile(r"(?<![\w.-])(" + _NAMES + r")=(?=(.?))")
_NEXT_NAMED = re.compile(r"/(" + _NAMES + r")=")  # atol=/rtol=: two flags, no value between


def as_flags(message: str) -> str:
    """`message` with each `name=` of a parameter said as its flag: `--flag VALUE` where a value follows the
    `=`, `--flag` where the words go on."""
    def flag(match: re.Match) -> str:
        following = match.group(2)
        valued = bool(following) and (following.isalnum() or following in "'\"[{(<*.-/~") and \
            not _NEXT_NAMED.match(message, match.end())
        return FLAGS[match.group(1)] + (" " if valued else "")
    return _NAMED.sub(flag, message)
