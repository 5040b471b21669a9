"""The float64 reference of a PyTorch module (`.double()`), checked leaf module by leaf module before it is
believed (frameworks.reference_check): the float32 module runs with hooks on every leaf module, and each call
of a leaf is run again by the float64 module's leaf of the same name on the float32 call's inputs, made float64.
The two outputs differ by the float32 kernel's rounding only, unless one of the two computes another function."""

from __future__ import annotations

from rosetta.frameworks.reference_check import FLOAT32_EPS, NodeCheck, ReferenceCheck, local_ulps
from rosetta.frameworks.torch_layers import leaf_modules, run_with_leaf_hooks

TINY = 1.1754943508222875e-38  # the smallest normal float32


def check_float64_module(module32, module64, tensors32: list) -> ReferenceCheck:
    """Run `module32` on `tensors32` with every leaf module checked against its twin in `module64`."""
    import torch

    check = ReferenceCheck(implementation=f"PyTorch {torch.__version__} in float64 (.double())",
                           against="PyTorch in float32", unit="leaf module",
                           # hooks see modules only: what a forward computes itself (a residual add, noise drawn
                           # in the dtype it runs in) is no piece, so the floor keeps its ceiling
                           uncovered="a forward's own code between its leaf modules")
    twins = dict(module64.named_modules())
    inputs: dict[str, list] = {}

    def before(name):
        def hook(_, args, kwargs):  # the float32 call's inputs in float64: a copy, before an in-place op runs
            inputs.setdefault(name, []).append((_to_float64(args), _to_float64(kwargs)))
        return hook

    def after(name):
        def hook(leaf, args, kwargs, output):
            wide_args, wide_kwargs = inputs[name].pop()
            try:
                local = twins[name](*wide_args, **wide_kwargs)
            except Exception:  # noqa: BLE001 - a leaf that cannot run on its own: counted, not judged
                check.unchecked += 1
                return
            pairs = [(a, b) for a, b in zip(_tensors(local), _tensors(output)) if b.is_floating_point()]
            if not pairs:
                return
            ulps = max(_ulps(a, b) for a, b in pairs)
            record = NodeCheck(name, type(leaf).__name__, ulps, "torch")
            check.nodes += 1
            if ulps > check.bound:
                record.by = "parted"
                check.parted = check.parted or record
            elif check.worst is None or ulps > check.worst.ulps:
                check.worst = record
        return hook

    leaves = [(name, leaf) for name, leaf in leaf_modules(module32.named_modules()) if name in twins]
    run_with_leaf_hooks(module32, leaves, before, after, tensors32, with_kwargs=True)
    return check


def _ulps(wide, narrow) -> float:
    """local_ulps with torch's threads: the difference and the scale on the tensors, numpy only for non-finite."""
    import math

    import torch

    if wide.shape != narrow.shape or not wide.numel():
        return local_ulps(wide.cpu().numpy(), narrow.float().cpu().numpy())
    largest = float(torch.sub(wide, narrow).abs_().max())  # one temporary, in float64
    if not math.isfinite(largest):
        return local_ulps(wide.cpu().numpy(), narrow.float().cpu().numpy())
    return largest / max(FLOAT32_EPS * max(float(wide.max()), -float(wide.min())), TINY)


def _to_float64(value):
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().to(torch.float64) if value.is_floating_point() else value.detach().clone()
    if isinstance(value, (list, tuple)):
        return type(value)(_to_float64(v) for v in value)
    if isinstance(value, dict):
        return {k: _to_float64(v) for k, v in value.items()}
    return value


def _tensors(value) -> list:
    """The tensors of a module's output (a tensor, or tuples, lists and dicts of them), in order."""
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors(v)]
    return []

