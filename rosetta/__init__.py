"""rosetta: convert deep-learning models between frameworks, prove the copy is the same function, time it.

    import rosetta
    report = rosetta.verify(reference_model, ported_model, inputs=["image:Nx3x32x32:float32"])
    conversion = rosetta.convert("model.onnx", to="torch,keras", output_dir="out")
    timings = rosetta.bench("cnn-train", targets="torch,keras")

The functions and result objects live in rosetta.api and are imported on first use, so that `import rosetta`
(and every worker process, which imports this package) stays light; the error kinds in rosetta.errors."""

import os

__version__ = "0.1.0"

# ONNX Runtime's own telemetry (on in its Linux wheels of late: 1.31 here) writes a session file, $TMPDIR/.ses,
# and a device id at import, and would send events: rosetta runs offline and leaves no file behind, so it is off
# unless the user set the variable (workers inherit it)
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

__all__ = ["verify", "convert", "bench", "Report", "Row", "Conversion", "BenchReport", "list_models", "list_targets",
           "RosettaError", "BadInput", "UntrustedModel", "CannotConvert", "FrameworkMissing", "WorkerDied",
           "WorkerCrashed", "WorkerTimedOut", "VerificationFailed", "EnvironmentFailed", "__version__"]
_ERRORS = {"RosettaError", "BadInput", "UntrustedModel", "CannotConvert", "FrameworkMissing", "WorkerDied",
           "WorkerCrashed", "WorkerTimedOut", "VerificationFailed", "EnvironmentFailed"}


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
