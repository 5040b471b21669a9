"""The library's shape: no function takes more than ten parameters (the options every run shares travel as
rosetta.settings' RunSettings and Tolerance), and no library error names a command-line flag: it names the
parameter (`resume= needs results_file=FILE`), and cli/flags.py says the flag."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from rosetta.errors import RosettaError

PACKAGE = Path(__file__).resolve().parents[1] / "rosetta"
MOST_PARAMETERS = 10
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")

# Errors that still name a flag, each with why it is left: a module another change owns. (A reason that becomes a
# result row's text names the parameter too: the command line says the flag in its tables and JSON, through
# cli/flags.py's said_with_flags.) This list may only shrink: the test fails on a new one, and on an entry that
# no longer names a flag (take it out).
STILL_NAMING_FLAGS: dict[tuple[str, str], str] = {}

# Library texts besides errors (row reasons, notes, settings, strings held in a variable before they are raised)
# that say one of the command line's flags, each with why it is about a command line rather than said to an API
# user. Help texts live in cli/, which is not read; docstrings are not read.
COMMAND_LINES: dict[tuple[str, str], str] = {
    ("rosetta/execution/pool.py", "--jobs"): "the worker process's own argv (python -m rosetta.execution.worker)",
    ("rosetta/execution/worker.py", "--jobs"): "the worker process reading its own argv",
    ("rosetta/verify/evaluator_check.py", "--json"): "the command line of scripts/check_onnx_evaluator.py, quoted "
                                                      "in the page it writes",
}


def library_modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    arguments = function.args
    names = [a.arg for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs]
    names += [a.arg for a in (arguments.vararg, arguments.kwarg) if a is not None]
    return [name for name in names if name not in ("self", "cls")]


def too_many_parameters(path: Path) -> list[str]:
    return [f"{path.name}:{node.lineno} {node.name} ({len(parameters(node))})"
            for node in ast.walk(ast.parse(path.read_text(), str(path)))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and len(parameters(node)) > MOST_PARAMETERS]


def flags_raised(path: Path) -> set[str]:
    """The flags named by the text of each `raise` in `path` (every string constant of the raised expression)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Raise) and node.exc is not None:
            flags = sorted({flag for constant in ast.walk(node.exc) if isinstance(constant, ast.Constant)
                            and isinstance(constant.value, str) for flag in FLAG.findall(constant.value)})
            if flags:
                found.add(" ".join(flags))
    return found


def command_line_flags() -> set[str]:
    """Every long option of the `rosetta` command and of each of its subcommands."""
    import argparse

    from rosetta.cli import build_parser

    flags, parsers = set(), [build_parser()]
    while parsers:
        parser = parsers.pop()
        for action in parser._actions:
            flags.update(option for option in action.option_strings if option.startswith("--"))
            if isinstance(action, argparse._SubParsersAction):
                parsers.extend(action.choices.values())
    return flags - {"--help", "--version", "--verbose"}


def flags_said(path: Path, flags: set[str]) -> set[str]:
    """The command-line flags (of `flags`) that a string constant of `path` says, one entry per constant (an
    f-string's parts are constants too); docstrings are not read."""
    tree = ast.parse(path.read_text(), str(path))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            said = sorted(set(FLAG.findall(node.value)) & flags)
            if said:
                found.add(" ".join(said))
    return found


def test_no_library_function_takes_more_than_ten_parameters():
    found = [f"{path.parent.relative_to(PACKAGE.parent)}/{line}" for path in library_modules()
             for line in too_many_parameters(path)]
    assert not found, f"functions of more than {MOST_PARAMETERS} parameters:\n" + "\n".join(found)


def test_no_library_error_names_a_flag():
    found = {(str(path.relative_to(PACKAGE.parent)), flags) for path in library_modules()
             if path.relative_to(PACKAGE).parts[0] != "cli" for flags in flags_raised(path)}
    new = sorted(found - set(STILL_NAMING_FLAGS))
    assert not new, "library errors that name a flag (name the parameter, as `name=`; cli/flags.py says the " \
                    "flag):\n" + "\n".join(f"{path}: {flags}" for path, flags in new)
    gone = sorted(set(STILL_NAMING_FLAGS) - found)
    assert not gone, "no longer naming a flag: take them out of STILL_NAMING_FLAGS:\n" + "\n".join(map(str, gone))


def test_no_library_text_names_a_flag():
    """Not only raised texts: a row's reason, a note, a message kept in a variable or a constant before it is
    raised or returned names the parameter too (`batch=`, `device='cuda'`); the command line says the flag."""
    flags = command_line_flags()
    found = {(str(path.relative_to(PACKAGE.parent)), said) for path in library_modules()
             if path.relative_to(PACKAGE).parts[0] != "cli" for said in flags_said(path, flags)}
    new = sorted(found - set(COMMAND_LINES))
    assert not new, "library texts that name a command-line flag (name the parameter, as `name=`; cli/flags.py " \
                    "says the flag):\n" + "\n".join(f"{path}: {said}" for path, said in new)
    gone = sorted(set(COMMAND_LINES) - found)
    assert not gone, "no longer naming a flag: take them out of COMMAND_LINES:\n" + "\n".join(map(str, gone))


def test_the_text_check_sees_flags_in_constants_and_f_strings_but_not_docstrings(tmp_path):
    module = tmp_path / "m.py"
    module.write_text('"""Run with --batch 8."""\n'
                      'HINT = "pass --trust-code if you trust it"\n'
                      'def f(device):\n    """Says --seed."""\n'
                      '    reason = f"--device {device}: ran on cpu; see --not-a-flag and pip --no-deps"\n'
                      '    return reason, {"note": "lower --batch"}\n')
    assert command_line_flags() >= {"--batch", "--trust-code", "--device", "--input", "--via", "--atol", "--json"}
    assert flags_said(module, command_line_flags()) == {"--trust-code", "--device", "--batch"}


def test_the_checks_see_a_long_signature_and_a_flag(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f(self, a, b, c, d, e, f, g, h, i, j, *, k=0, **rest):\n"
                      "    raise ValueError(f'{a}: pass --trust-code ' 'or --max-memory GIB')\n"
                      "def g(self, a, b, c, d, e, f, g, h, i, j):\n    raise ValueError('a-b --c- x--y')\n")
    assert too_many_parameters(module) == ["m.py:1 f (12)"]
    assert flags_raised(module) == {"--max-memory --trust-code", "--c-"}


@pytest.mark.parametrize("message, said", [
    ("resume= needs results_file=FILE: the rows are read from it", "--resume needs --json FILE: the rows are read from it"),
    ("give either tolerance= or atol=/rtol=, not both", "give either --tolerance-multiple or --atol/--rtol, not both"),
    ("layer_map=/a/map.txt pairs layers for locate=: add locate=, or leave it out",
     "--layer-map /a/map.txt pairs layers for --locate: add --locate, or leave it out"),
    ("inputs='x:N': expected name:SHAPE:DTYPE", "--input 'x:N': expected name:SHAPE:DTYPE"),
    ("unknown suite nodes; choose from: node", "unknown suite nodes; choose from: node"),  # no parameter named
])
def test_the_command_line_says_its_flags_for_the_parameters(message, said):
    from rosetta.cli.flags import as_flags

    assert as_flags(message) == said


def test_the_refusals_that_become_row_reasons_name_parameters_and_are_said_with_flags():
    """A bench row's data-parallel refusals and a route's CANNOT name `workers=`, `cuda_graphs=`, `via=` in the
    library; the command line's tables and JSON say `--workers 2`, `--cuda-graphs`, `--via onnx`."""
    from types import SimpleNamespace

    from rosetta.bench.parallel import time_parallel
    from rosetta.bench.workloads import BenchCell
    from rosetta.cli.flags import as_flags
    from rosetta.frameworks.speed import SettingUnavailable
    from rosetta.sources.model import UserModel

    said = []
    for framework, speed, expected in [
            ("mxnet", {}, ("workers=2: no data-parallel path for mxnet", "--workers 2: no data-parallel path")),
            ("torch", {"cuda_graphs": True}, ("workers=2 with cuda_graphs=True or resident_data=True",
                                              "--workers 2 with --cuda-graphs or --resident-data: ")),
            ("torch", {"resident_data": True}, ("workers=2 with cuda_graphs=True", "--workers 2 with --cuda-graphs"))]:
        with pytest.raises(SettingUnavailable) as refused:  # refused before anything is launched
            time_parallel(BenchCell("cnn-train", "torch", framework, workers=2, speed=speed), None, {})
        said.append((str(refused.value), as_flags(str(refused.value))))
        assert said[-1][0].startswith(expected[0]) and said[-1][1].startswith(expected[1]), said[-1]
    onnx = UserModel(file=None, format="onnx", inputs=(), outputs=())
    with pytest.raises(RosettaError) as refused:
        onnx.chain_for(SimpleNamespace(route="mmdnn", chain=("torch", "mmdnn", "torch-code")))
    message = str(refused.value)
    assert message.endswith("use via='onnx'") and as_flags(message).endswith("use --via onnx"), message
