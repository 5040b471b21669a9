"""What each target's bridge registers, read from the registries, for a report of per-target coverage (the
conformance run may show it beside its verdicts): the op converters of the Keras mapper, of the torch bridge
(added to onnx2torch or correcting it) and of the MXNet bridge (added to MXNet's importer or correcting it), each
{op type: the opsets its converters start at}, and the rewrites every target's pipeline runs, by name."""

from __future__ import annotations



def registered_ops(target: str) -> dict[str, list[int]]:
    """{op type: since versions} of the converters `target`'s bridge registers ({} for a target without one:
    tensorflow is onnx2tf behind rewrites). The torch bridge's import imports torch and onnx2torch."""
    if target == "keras":
        from rosetta.convert.onnx.to_keras import ops  # noqa: F401 - registers every converter
        from rosetta.convert.onnx.to_keras.registry import registered
    elif target == "torch":
        from rosetta.convert.onnx.to_torch import registered
    elif target == "mxnet":
        from rosetta.convert.onnx.to_mxnet import arithmetic  # noqa: F401 - the package registers every converter
        from rosetta.convert.onnx.to_mxnet.registry import registered
    else:
        return {}
    return registered()


def rewrites(target: str) -> list[str]:
    """The rewrites `target`'s pipeline runs before its converter, in order ([] for a target without one)."""
    import importlib

    from rosetta.convert.onnx.rewrites import names

    module = {"keras": "to_keras", "torch": "to_torch", "mxnet": "to_mxnet", "tensorflow": "to_tensorflow"}.get(target)
    return names(importlib.import_module(f"rosetta.convert.onnx.{module}").REWRITES) if module else []
