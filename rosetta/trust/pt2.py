"""What a torch.export archive (.pt2) may hold without --trust-code, checked on the zip's JSON before torch
reads it.

torch's deserializer evaluates three kinds of text from the archive as Python:
- every symbolic-shape expression (`expr_str`, written by sympy's `srepr`, e.g.
  `Mul(Integer(3), Symbol('s77', positive=True, integer=True))`) goes to `sympy.sympify`, which calls `eval`;
- every shape guard (`guards_code`, e.g. `L['x'].size()[1] != 4`) is compiled with `exec` when the program
  becomes a module;
- every node's `target` is looked up by attribute from `torch`, `math` or `operator`.
So each expression must parse as a small arithmetic grammar (symbols, integers, + - * // %, Min, Max,
comparisons), each guard as comparisons of input sizes, and each target must be an operator of the aten or
prims libraries (less the few that read or write files), a higher-order operator or a symbolic-shape
operator. Pickles in the archive are refused by rosetta.frameworks.torch (load_exported).
"""

from __future__ import annotations

import ast
import json
import re
import zipfile
from pathlib import Path
from typing import Iterator

from rosetta.errors import RosettaError, UntrustedModel
from rosetta.trust import TRUST_HINT

# sympy classes `srepr` writes for integer shape arithmetic and its comparisons (SymBool), and torch's own
# integer functions (torch.utils._sympy.functions) that stay within + - * // % min max.
EXPRESSION_CALLS = frozenset({
    "Symbol", "Integer", "Add", "Mul", "FloorDiv", "CleanDiv", "CeilDiv", "Mod", "PythonMod", "ModularIndexing",
    "Max", "Min", "Eq", "Ne", "LessThan", "StrictLessThan", "GreaterThan", "StrictGreaterThan", "And", "Or", "Not",
})
EXPRESSION_NAMES = frozenset({"true", "false", "oo", "zoo", "nan", "int_oo"})  # sympy constants srepr may write
SYMBOL_NAME = re.compile(r"^[a-z]{1,4}\d+$")  # s77, u0, zuf3: torch's symbol prefixes and a counter
SYMBOL_ASSUMPTIONS = frozenset({"integer", "positive", "nonnegative", "negative", "nonpositive", "real", "finite"})
GUARD_METHODS = frozenset({"size", "stride", "storage_offset", "dim"})
TARGET_PREFIXES = ("torch.ops.aten.", "torch.ops.prims.", "torch.ops.higher_order.")
SYMBOLIC_TARGETS = re.compile(r"^(_operator\.[a-z_]+|math\.trunc|torch\.sym_[a-z]+)$")
FILE_OPERATORS = frozenset({"save", "from_file", "load", "_load"})  # aten ops that read or write files


def check_archive(path: Path, label: str) -> None:
    """Refuse, with one line, an archive whose JSON holds an expression, guard or target outside the grammar."""
    for member, key, text in _texts(path, label):
        problem = _problem(key, text)
        if problem:
            raise UntrustedModel(f"{label} holds {problem} in {member} ({text[:80]!r}), which torch would evaluate "
                               f"as Python when loading it; {TRUST_HINT}")


def _texts(path: Path, label: str) -> Iterator[tuple[str, str, str]]:
    """(member, key, text) for every expression, guard and node target in the archive's JSON files."""
    try:
        archive = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as error:
        raise RosettaError(f"{label} is not a readable torch.export file ({error})") from None
    with archive:
        for info in archive.infolist():
            if not info.filename.endswith(".json"):
                continue
            try:
                document = json.loads(archive.read(info))
            except (ValueError, UnicodeDecodeError):
                raise RosettaError(f"{label}: {info.filename} is not valid JSON; not a torch.export file") from None
            for key, text in _walk(document):
                yield info.filename, key, text


def _walk(value, key: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(value, dict):
        for name, item in value.items():
            if name in ("expr_str", "target") and isinstance(item, str):
                yield name, item
            elif name == "guards_code" and isinstance(item, list):
                yield from (("guards_code", guard) for guard in item)
            else:
                yield from _walk(item, name)
    elif isinstance(value, list):
        for item in value:
            yield from _walk(item, key)


def _problem(key: str, text) -> str:
    """'' when `text` is allowed for `key`, else what it is."""
    if not isinstance(text, str):
        return f"a {key} that is not text"
    if key == "target":
        return "" if _allowed_target(text) else f"node target {text!r}, not a pure tensor operator"
    what = "a shape expression (expr_str)" if key == "expr_str" else "a shape guard (guards_code)"
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError):
        return f"{what} that does not parse"
    allowed = _allowed_expression(tree.body) if key == "expr_str" else _allowed_guard(tree.body)
    return "" if allowed else f"{what} outside the shape-arithmetic grammar"


def _allowed_target(text: str) -> bool:
    if SYMBOLIC_TARGETS.match(text):
        return True
    if not text.startswith(TARGET_PREFIXES):
        return False
    parts = text.split(".")
    return all(p.isidentifier() for p in parts) and len(parts) <= 6 and parts[3] not in FILE_OPERATORS


def _is_int(node) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) is int


def _allowed_expression(node) -> bool:
    """sympy srepr of integer shape arithmetic: calls of EXPRESSION_CALLS on such expressions or integers."""
    if _is_int(node):
        return True
    if isinstance(node, ast.Name):
        return node.id in EXPRESSION_NAMES
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in EXPRESSION_CALLS):
        return False
    name = node.func.id
    if name == "Symbol":
        return (len(node.args) == 1 and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str) and bool(SYMBOL_NAME.match(node.args[0].value))
                and all(k.arg in SYMBOL_ASSUMPTIONS and isinstance(k.value, ast.Constant)
                        and type(k.value.value) is bool for k in node.keywords))
    if name == "Integer":
        return len(node.args) == 1 and not node.keywords and _is_int(node.args[0])
    return not node.keywords and all(_allowed_expression(arg) for arg in node.args)


_GUARD_OPERATORS = (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod, ast.Eq, ast.NotEq, ast.Lt, ast.LtE,
                    ast.Gt, ast.GtE, ast.And, ast.Or, ast.Not, ast.USub)


def _allowed_guard(node) -> bool:
    """Comparisons of input sizes: L['x'].size()[1] != 4, combined with and/or/not and integer arithmetic."""
    if _is_int(node) or (isinstance(node, ast.Constant) and type(node.value) is bool):
        return True
    if isinstance(node, ast.Compare):
        return all(isinstance(op, _GUARD_OPERATORS) for op in node.ops) and \
            all(_allowed_guard(n) for n in [node.left, *node.comparators])
    if isinstance(node, ast.BoolOp):
        return isinstance(node.op, _GUARD_OPERATORS) and all(_allowed_guard(n) for n in node.values)
    if isinstance(node, ast.BinOp):
        return isinstance(node.op, _GUARD_OPERATORS) and _allowed_guard(node.left) and _allowed_guard(node.right)
    if isinstance(node, ast.UnaryOp):
        return isinstance(node.op, _GUARD_OPERATORS) and _allowed_guard(node.operand)
    return _input_size(node)


def _input_size(node) -> bool:
    """L['x'], L['x'][0], L['x'].size()[1], L['x'].stride()[0], L['x'].dim() ..."""
    if isinstance(node, ast.Name):
        return node.id == "L"
    if isinstance(node, ast.Subscript):
        key = node.slice
        return isinstance(key, ast.Constant) and type(key.value) in (int, str) and _input_size(node.value)
    if isinstance(node, ast.Call):
        return (isinstance(node.func, ast.Attribute) and node.func.attr in GUARD_METHODS and not node.args
                and not node.keywords and _input_size(node.func.value))
    return False
