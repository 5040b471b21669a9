"""The one exception type for errors a user can cause; the CLI prints its message on one line and exits 2.

Three kinds of failure are kept apart, because each means something else about the model (results.py): a
converter that refuses a model (CANNOT), a crash or a hang (WorkerDied) and the machine failing the run
(EnvironmentFailed: out of memory, a full disk, a bad setting), both ERROR; wrong numbers are a FAIL."""

import errno
import re


class RosettaError(Exception):
    """A problem with the user's input or environment, with a one-line message saying what to do."""


class Unsupported(RosettaError):
    """What was asked is not something this tool or target does (e.g. training an inference-only format):
    the cell's verdict is CANNOT, whatever the stage."""


class WorkerDied(RosettaError):
    """A job's worker process crashed, was killed or hung: the cell's verdict is ERROR, not the converter's CANNOT."""


class UntrustedModel(RosettaError):
    """A model file that carries code (a Lambda layer, a pickle, a factory, SavedModel ops outside the allow-list)
    given without --trust-code (`trust_code=True`): nothing in it ran."""


class BadInput(RosettaError):
    """An input spec or input arrays that do not fit the model (name, shape, dtype, range)."""


class CannotConvert(Unsupported):
    """A converter refused the model or lacks one of its ops: a CANNOT row, or raised by Report.raise_for_verdict."""


class FrameworkMissing(Unsupported):
    """A framework or converter rosetta needs for a target is not installed: that target's rows are CANNOT."""


class WorkerCrashed(WorkerDied):
    """A worker process died under a job (a segfault, SIGKILL by the out-of-memory killer, an abort)."""


class WorkerTimedOut(WorkerDied):
    """A job ran past --timeout (`timeout=`): its worker was killed."""


class VerificationFailed(RosettaError):
    """Report.raise_for_verdict: a row FAILed (or was INCONCLUSIVE, or ERROR): the message is the first such row's
    verdict with its figures and, where located, the layer it diverges at; `report` holds every row."""

    def __init__(self, message: str, report=None) -> None:
        super().__init__(message)
        self.report = report


class EnvironmentFailed(RosettaError):
    """The machine failed the run, not the model: out of memory, a full disk, a malformed setting. A row's
    verdict is ERROR with this cause, never the converter's CANNOT; outside any row, one line and exit 3."""


_DISK_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}
# how frameworks word the same faults when they wrap them in their own exceptions (or a worker's reply)
# (protobuf's arena, ONNX Runtime's and MXNet's "Failed to allocate ...", PyTorch's CPU allocator, TensorFlow's
# and XLA's RESOURCE_EXHAUSTED, numpy's "Unable to allocate", C++'s bad_alloc)
_MEMORY_WORDS = ("MemoryError", "bad_alloc", "Cannot allocate memory", "Failed to allocate", "Arena alloc failed",
                 "can't allocate memory", "OOM when allocating", "out of memory", "Out of memory", "Unable to allocate",
                 "RESOURCE_EXHAUSTED", "ResourceExhausted", "cudaErrorMemoryAllocation")
# (and PyTorch's zip writer, whose short write on a full disk says only "unexpected pos 576 vs 534" from
# inline_container.cc, or "PytorchStreamWriter failed writing file")
_DISK_WORDS = ("No space left on device", "Disk quota exceeded", "File too large", "file write failed",
               "PytorchStreamWriter failed writing file")
_SHORT_WRITE = re.compile(r"inline_container\.cc.*unexpected pos \d+ vs \d+", re.S)


def environment_cause(error: BaseException) -> str:
    """'out of memory (...)' or 'disk full (...)' when `error`, or an error it was raised from, is the machine
    failing; '' when it is not (a converter's refusal, a bug, wrong input)."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, EnvironmentFailed):
            return str(error)
        if isinstance(error, MemoryError) or (isinstance(error, OSError) and error.errno == errno.ENOMEM):
            return f"out of memory ({one_line(error)}); free memory, lower batch= or use a larger machine"
        if isinstance(error, OSError) and error.errno in _DISK_FULL:
            return f"disk full ({describe_os_error(error)}); free space there or choose another folder"
        text = describe_os_error(error) if isinstance(error, OSError) and _copy_failures(error) else str(error)
        if any(word in text for word in _DISK_WORDS) or _SHORT_WRITE.search(text):
            said = text if _copy_failures(error) else one_line(error)
            return f"disk full ({said}); free space there (TMPDIR for temporary files) or choose another folder"
        if any(word in text for word in _MEMORY_WORDS):
            return f"out of memory ({one_line(error)}); free memory, lower batch= or use a larger machine"
        error = error.__cause__ if error.__cause__ is not None or error.__suppress_context__ else error.__context__
    return ""


def is_fault(error: BaseException) -> bool:
    """Whether `error` says nothing about the model: a crash, a hang or the machine failing (ERROR), not a
    converter's refusal (CANNOT)."""
    return isinstance(error, (WorkerDied, EnvironmentFailed)) or bool(environment_cause(error))


def vanished_folder(*folders) -> EnvironmentFailed | None:
    """The machine's fault, naming the folder, where one of `folders` (a --work-dir, a folder of it) no longer
    exists after a step in it failed: another process removed it mid-run. The step then fails on a missing
    file, often one it does not name ("No such file or directory: ''"), which is not a converter's refusal of
    the model (CANNOT) but the run's ERROR."""
    import os

    for folder in folders:
        if not os.path.isdir(folder):
            return EnvironmentFailed(f"the folder {folder} was removed during the run (by another process?); "
                                     "rosetta works in it: keep it until the run ends")
    return None


def describe_os_error(error: OSError) -> str:
    """'No space left on device: out/r.json': the reason and the file, where the error names one (for
    shutil.copytree's error, which lists every file it could not copy, the first, and how many more)."""
    failures = _copy_failures(error)
    if failures:
        _, destination, why = failures[0]
        more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
        return f"{_strerror(why)}: {destination}{more}"
    reason = error.strerror or str(error)
    names = [str(name) for name in (error.filename, error.filename2) if name]
    return f"{reason}: {' -> '.join(names)}" if names else reason


def _copy_failures(error: BaseException) -> list[tuple[str, str, str]]:
    """shutil.copytree's (source, destination, why) for each file it could not copy: its shutil.Error (an
    OSError without an errno) carries them as a list, which printed as it is makes a message of Python reprs."""
    import shutil

    if not (isinstance(error, shutil.Error) and error.args and isinstance(error.args[0], list)):
        return []
    return [tuple(str(part) for part in entry) for entry in error.args[0]
            if isinstance(entry, (tuple, list)) and len(entry) == 3]


def _strerror(why: str) -> str:
    """'No space left on device' from "[Errno 28] No space left on device: 'out/x'", as OSError's str writes it."""
    match = re.fullmatch(r"\[Errno -?\d+\] (.*?)(: '.*'( -> '.*')?)?", why.strip(), re.S)
    return match.group(1) if match else cause_line(why)


def joined_lines(error: BaseException, limit: int = 400) -> str:
    """The whole message on one line (for a message whose sentence runs over lines, as the ONNX checker's
    does around a node's dump), cut at `limit` characters."""
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def one_line(error: BaseException) -> str:
    """'Type: the line of the message that says what went wrong', for a row's reason (the traceback goes to its
    detail); rosetta's own errors are already written for the user and keep just their first line. Plain text:
    a framework's terminal codes (Keras bolds its messages with ESC[1m) are taken out."""
    text = plain(str(error)).strip().splitlines()
    if isinstance(error, RosettaError) and text:
        return text[0]
    if _copy_failures(error):
        return f"copy failed: {describe_os_error(error)}"
    name, cause = type(error).__name__, cause_line(plain(str(error)))
    cause = cause[len(name) + 1:].strip() if cause.startswith(f"{name}:") else cause
    return f"{name}: {cause}" if cause else name


_TERMINAL_CODES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-_]|[\x00-\x08\x0b-\x1f\x7f]")


def plain(text: str) -> str:
    """`text` without terminal escape sequences (colours, bold, cursor moves) and other control characters
    (newlines and tabs kept): what a framework meant for a terminal, as a line for a table, a log or JSON."""
    return _TERMINAL_CODES.sub("", text)


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
