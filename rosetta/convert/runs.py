"""A converted artifact counts as converted once its target's runtime has run it: a converter that writes an
artifact the runtime then rejects (MXNet's "expects padding on the first two axes to be zero" on a Pad its
importer wrote, "dimensions are invalid" on a 3-D model) has not converted the model, and says so as a
CANNOT with the runtime's reason, found at conversion time, instead of an ERROR at verification. One place for
every target and route: `run_converted`, called after each conversion of a user's model (convert.user) and of
a conformance case (verify.conformance)."""

from __future__ import annotations

from pathlib import Path

from rosetta.errors import Unsupported, WorkerDied, is_fault, one_line


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
    worker that crashes or hangs, or the machine out of memory or disk, stays what it is (ERROR): no refusal."""
    from rosetta.convert.targets import load_verify_runner

    try:
        return load_verify_runner(framework, Path(folder), threads, trust_code).predict(feeds)
    except (WorkerDied, Unsupported):
        raise
    except Exception as error:  # noqa: BLE001 - whatever the runtime raises is its refusal, but the machine failing
        if is_fault(error):  # out of memory or disk: the run's ERROR, never the converter's CANNOT
            raise
        raise RuntimeRejected(f"{framework} refused the converted model: {runtime_reason(framework, error)}") from None
