"""docs/api.md from the code: every public name of `import rosetta`, its signature and the first paragraph of
its docstring. tests/test_api.py fails when the page and the code differ.

    python scripts/write_api_docs.py docs/api.md
"""

from __future__ import annotations

import dataclasses
import inspect
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

FUNCTIONS = ("verify", "convert", "bench", "conformance", "models", "environment", "list_models", "list_targets",
             "list_workloads", "parse_input")
RESULTS = ("Report", "Conversion", "BenchReport", "ConformanceRun", "Listing")
SETTINGS = ("RunSettings", "Tolerance")
ERRORS = ("RosettaError", "BadInput", "UntrustedModel", "Unsupported", "CannotConvert", "FrameworkMissing",
          "WorkerDied", "WorkerCrashed", "WorkerTimedOut", "EnvironmentFailed", "VerificationFailed")


def first(doc: str | None) -> str:
    return " ".join(inspect.cleandoc(doc or "").split("\n\n")[0].split())


def api_page() -> str:
    import rosetta.api as api
    import rosetta.errors as errors
    import rosetta.testing as testing

    lines = ["# The Python API (`import rosetta`)", "",
             "[rosetta](../README.md) · every public name, its signature and what it is for (written from the code by "
             "`python scripts/write_api_docs.py docs/api.md`). The command line is a thin layer over these functions "
             "(`rosetta/cli/`). Models are paths, `file.py:factory`, reference model names, or objects in memory "
             "(`torch.nn.Module`, `keras.Model`, an MXNet Gluon `HybridBlock`, `onnx.ModelProto`).", "", "## Functions", ""]
    for name in FUNCTIONS:
        function = getattr(api, name)
        lines += [f"### `rosetta.{name}{inspect.signature(function)}`", "", first(function.__doc__), ""]
        if name in api._OPTIONS:
            lines += [f"Its `**options`: {', '.join(f'`{o}`' for o in api._OPTIONS[name])}; any other keyword is "
                      "a `rosetta.BadInput` that lists these.", ""]
    lines += ["## Settings objects", "",
              "The options every run shares travel as two frozen objects, checked once where they are built (a "
              "`rosetta.BadInput` naming the field): `settings=rosetta.RunSettings(...)` and "
              "`tolerance=rosetta.Tolerance(...)`. Each RunSettings field may also be given to a function as a "
              "keyword of its own (`rosetta.verify(a, b, batch=4)`), over the object's field; `atol` and `rtol` "
              "likewise beside `tolerance`.", ""]
    for name in SETTINGS:
        cls = getattr(api, name)
        fields = ", ".join(f"`{f.name}={f.default!r}`" for f in dataclasses.fields(cls))
        lines += [f"### `rosetta.{name}`", "", " ".join(inspect.cleandoc(cls.__doc__ or "").split()), "",
                  f"Fields: {fields}.", ""]
    lines += [f"### `rosetta.testing.assert_same_function{inspect.signature(testing.assert_same_function)}`", "",
              first(testing.assert_same_function.__doc__), "", "## Result objects", ""]
    for name in RESULTS:
        cls = getattr(api, name)
        lines += [f"### `rosetta.{name}`", "", first(cls.__doc__), ""]
        for member, value in vars(cls).items():
            if member.startswith("_") and member not in ("__str__", "_repr_html_", "__iter__"):
                continue
            if isinstance(value, property):
                lines.append(f"- `{member}` (property): {first(value.__doc__)}")
            elif callable(value):
                said = first(value.__doc__) or {"__str__": "the table as text", "__iter__": "the rows"}.get(member, "")
                lines.append(f"- `{member}{inspect.signature(value)}`: {said}")
        lines.append("")
    lines += ["`rosetta.Row` is a result row (rosetta.verify.results.VerifyResult): model, route, target, verdict, "
              "reason, outputs (each with max_abs_error, error_ratio, noise_floor, cosine, ...), tolerance, reference "
              "(how the reference was checked), pairing, locate, training.", "", "## Errors", "",
              "Every error is a `rosetta.RosettaError` with a one-line message, the one the command line prints.", ""]
    lines += [f"- `rosetta.{name}` ({getattr(errors, name).__mro__[1].__name__}): {first(getattr(errors, name).__doc__)}"
              for name in ERRORS]
    lines += ["", "## Constants", "", "- `rosetta.api.MODEL_FORMATS`, `EXPORT_DEFAULTS`, `DEFAULT_TIMEOUT_S`: what the "
              "command line's help says."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    Path(sys.argv[1]).write_text(api_page())
