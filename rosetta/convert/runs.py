"""A converted artifact counts as converted once its target's runtime has run it: a converter that writes an
artifact the runtime then rejects (MXNet's "expects padding on the first two axes to be zero" on a Pad its
importer wrote, "dimensions are invalid" on a 3-D model) has not converted the model, and says so as a
CANNOT with the runtime's reason, found at conversion time, instead of an ERROR at verification. One place for
every target and route: `run_converted`, called after each conversion of a user's model (convert.user) and of
a conformance case (verify.conformance).

A CANNOT is a converter saying no; an exception raised inside rosetta's own code is a bug, an ERROR naming its
type and rosetta's frame (`internal_error`), decided by where it was raised."""

from __future__ import annotations

import re
import traceback
from pathlib import Path

from rosetta.errors import RosettaError, Unsupported, WorkerDied, is_fault, one_line


class RuntimeRejected(Unsupported):
    """The target's runtime refused to load or run a converted artifact: the converter's failure (CANNOT)."""


def runtime_reason(framework: str, error: BaseException) -> str:
    """The part of a runtime's message that says why: ONNX Runtime ends a refusal with what it supports ("...
    is till opset 26."), after C++ source paths; other runtimes' cause line (errors.cause_line)."""
    if framework != "onnxruntime":
        return one_line(error).removeprefix(f"{framework} inference failed: ")  # the worker pool's wrapper
    sentences = [s.strip() for s in str(error).replace("\n", " ").split(". ") if s.strip()]
    return (sentences[-1] if sentences else str(error)).rstrip(".")[:300]


def run_converted(framework: str, folder: Path, feeds: dict, threads: int = 0, trust_code: bool = False) -> dict:
    """The artifact in `folder` loaded by `framework`'s runner (as verification loads it) and run once on
    `feeds`: its outputs. A runtime that refuses it raises RuntimeRejected naming the runtime and its reason; a
    worker that crashes or hangs, the machine out of memory or disk, or a bug in rosetta's own code (a runner, a
    converter of rosetta's that onnx2torch calls: internal_error) stays what it is (ERROR): no refusal."""
    from rosetta.convert.targets import load_verify_runner

    try:
        return load_verify_runner(framework, Path(folder), threads, trust_code).predict(feeds)
    except (WorkerDied, Unsupported):
        raise
    except Exception as error:  # noqa: BLE001 - whatever the runtime raises is its refusal, but the machine failing
        if is_fault(error) or internal_error(error):  # out of memory or disk, or a bug in rosetta's runner: ERROR
            raise
        raise RuntimeRejected(f"{framework} refused the converted model: {runtime_reason(framework, error)}") from None


# "  File "/path/rosetta/convert/x.py", line 12, in f": a frame of a traceback as traceback.format_exc writes it
_FRAME_LINE = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+)', re.M)
_EXCEPTION_LINE = re.compile(r"^(?P<type>[A-Za-z_][\w.]*)(:|$)")


def internal_error(error: BaseException) -> str:
    """'IndexError at rosetta/convert/onnx/dynamic_batch.py:88: index 0 is out of bounds ...' when `error` was
    raised inside rosetta's own code (its innermost frame is in the rosetta package) and is not one of rosetta's
    errors (written for the user: a refusal, a usage error) or NotImplementedError (what a converter, or
    rosetta's shim of one, says of what it does not do): a bug, whose row is an ERROR, never a converter's
    CANNOT. '' for anything else: an exception raised inside a converter or framework is its refusal.

    Decided by where the exception was raised, not by its message. An error that crossed from a worker arrives
    as a RosettaError whose `detail` is the worker's traceback: read from that."""
    if is_fault(error):
        return ""
    detail = getattr(error, "detail", "") or ""
    if isinstance(error, RosettaError):
        if not detail:
            return ""
        return _internal_in_text(detail, _message_of(error))
    frames = traceback.extract_tb(error.__traceback__)
    if not frames or isinstance(error, NotImplementedError):
        return ""
    innermost = frames[-1]
    where = _rosetta_path(innermost.filename)
    if where is None:
        return ""
    return f"{type(error).__name__} at {where}:{innermost.lineno}{_message_suffix(error)}"


def _internal_in_text(detail: str, message: str) -> str:
    """internal_error for a worker's traceback text (the last exception block: its innermost frame, its type)."""
    frames = list(_FRAME_LINE.finditer(detail))
    if not frames:
        return ""
    # after the innermost frame: its code lines (indented), then the exception's own first line
    after = [line for line in detail[frames[-1].end():].splitlines()[1:] if line.strip()]
    match = next((_EXCEPTION_LINE.match(line) for line in after if not line[:1].isspace()), None)
    if match is None:
        return ""
    kind = match.group("type")
    if kind.startswith("rosetta.") or kind.rsplit(".", 1)[-1] == "NotImplementedError":
        return ""
    where = _rosetta_path(frames[-1].group("file"))
    if where is None:
        return ""
    return f"{kind.rsplit('.', 1)[-1]} at {where}:{frames[-1].group('line')}: {message}".rstrip(": ")


def _message_of(error: BaseException) -> str:
    """A worker's wrapped message without the pool's 'conversion onnx -> keras failed: Type:' prefix."""
    text = str(error).splitlines()[0] if str(error) else ""
    text = re.sub(r"^.*? failed: ", "", text, count=1)
    return re.sub(r"^[A-Za-z_][\w.]*: ", "", text, count=1)


def _message_suffix(error: BaseException) -> str:
    cause = one_line(error)
    name = type(error).__name__
    cause = cause[len(name):].lstrip(": ") if cause.startswith(name) else cause
    return f": {cause}" if cause else ""


def _rosetta_path(filename: str) -> str | None:
    """'rosetta/convert/x.py' for a file of the rosetta package, None for any other (a converter's, a user's)."""
    root = Path(__file__).resolve().parents[1]  # the rosetta package: this file is rosetta/convert/runs.py
    try:
        relative = Path(filename).resolve().relative_to(root)
    except (ValueError, OSError):
        return None
    return str(Path("rosetta") / relative)
