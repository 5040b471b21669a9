"""rosetta: convert deep-learning models between frameworks, prove the copy is the same function, time it.

    import rosetta
    report = rosetta.verify(reference_model, ported_model, inputs=["image:Nx3x32x32:float32"])
    conversion = rosetta.convert("model.onnx", to="torch,keras", output_dir="out")
    timings = rosetta.bench("cnn-train", targets="torch,keras")

The functions and result objects live in rosetta.api and are imported on first use, so that `import rosetta`
(and every worker process, which imports this package) stays light; the error kinds in rosetta.errors."""

import os
import sys
import types

from rosetta.version import __version__

# ONNX Runtime's own telemetry (on in its Linux wheels of late: 1.31 here) writes a session file, $TMPDIR/.ses,
# and a device id at import, and would send events: rosetta runs offline and leaves no file behind, so it is off
# unless the user set the variable (workers inherit it)
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

__all__ = ["verify", "convert", "bench", "conformance", "models", "environment", "Report", "Row", "Conversion",
           "BenchReport", "ConformanceRun", "Listing", "RunSettings", "Tolerance", "list_models", "list_targets",
           "list_workloads", "parse_input",
           "RosettaError", "BadInput", "UntrustedModel", "Unsupported", "CannotConvert", "FrameworkMissing",
           "WorkerDied", "WorkerCrashed", "WorkerTimedOut", "VerificationFailed", "EnvironmentFailed", "__version__"]
_ERRORS = {"RosettaError", "BadInput", "UntrustedModel", "Unsupported", "CannotConvert", "FrameworkMissing",
           "WorkerDied", "WorkerCrashed", "WorkerTimedOut", "VerificationFailed", "EnvironmentFailed"}


# rosetta.verify, .convert, .bench and .models are the API's functions, and also the names of the subpackages that
# do the work (rosetta/verify/, ...). Importing a subpackage sets the parent's attribute to it; this package keeps
# its functions instead (the subpackages stay in sys.modules, where `from rosetta.verify import files` finds them).
_FUNCTIONS_OVER_PACKAGES = ("verify", "convert", "bench", "models")


class _Package(types.ModuleType):
    def __setattr__(self, name: str, value) -> None:
        if name in _FUNCTIONS_OVER_PACKAGES and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __getattr__(name: str):
    """rosetta.verify and the rest of the public surface, imported from rosetta.api when first asked for."""
    if name in _ERRORS:
        from rosetta import errors

        return getattr(errors, name)
    if name in __all__:
        from rosetta import api  # the package's public face: the one import of a layer above (tests/test_layers)

        return getattr(api, name)
    if name == "testing":
        import importlib

        return importlib.import_module("rosetta.testing")
    raise AttributeError(f"module 'rosetta' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__) | {"testing"})
