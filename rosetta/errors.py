"""The one exception type for errors a user can cause; the CLI prints its message on one line and exits 2."""

import re


class RosettaError(Exception):
    """A problem with the user's input or environment, with a one-line message saying what to do."""


class Unsupported(RosettaError):
    """What was asked is not something this tool or target does (e.g. training an inference-only format):
    the cell's verdict is CANNOT, whatever the stage."""


class WorkerDied(RosettaError):
    """A job's worker process crashed, was killed or hung: the cell's verdict is ERROR, not the converter's CANNOT."""


def one_line(error: BaseException) -> str:
    """'Type: the line of the message that says what went wrong', for a row's reason (the traceback goes to its
    detail); rosetta's own errors are already written for the user and keep just their first line."""
    text = str(error).strip().splitlines()
    if isinstance(error, RosettaError) and text:
        return text[0]
    name, cause = type(error).__name__, cause_line(str(error))
    cause = cause[len(name) + 1:].strip() if cause.startswith(f"{name}:") else cause
    return f"{name}: {cause}" if cause else name


_FRAME = re.compile(r"^(Traceback \(most recent call last\)|File \"|\[bt\]|\d+: |Stack trace|\^+$|~+$|During handling"
                    r"|The above exception)")
_WRAPPER = re.compile(r"^(Exception encountered when calling|Error in (converting|calling)|\w*Error:?$)")


def cause_line(message: str) -> str:
    """The line of a framework's message that names the cause. Frameworks wrap it: MXNet puts a C++ stack
    before its `Check failed: ...`, Keras puts 'Exception encountered when calling layer X' before it and the
    call's arguments after. So: drop stack frames, the code lines under them, wrappers and Keras's argument
    list; then a message that held a stack gives its last line (where the cause is raised), another its first."""
    lines, had_stack, code_under_frame = [], False, False
    for raw in message.splitlines():
        line = raw.strip()
        if line.startswith(("Call arguments received", "operator attributes:")):  # Keras's, MXNet's appendix
            break
        if not line:
            continue
        if _FRAME.match(line):
            had_stack, code_under_frame = True, line.startswith("File ")
            continue
        if code_under_frame and raw[:1].isspace():  # the source line a traceback prints under its File line
            code_under_frame = False
            continue
        code_under_frame = False
        if not _WRAPPER.match(line):
            lines.append(line)
    checks = [line for line in lines if "Check failed" in line] or [line for line in lines if "failed" in line]
    if checks:
        return checks[-1]
    if not lines:
        return message.strip().splitlines()[0].strip() if message.strip() else ""
    return lines[-1] if had_stack else lines[0]
