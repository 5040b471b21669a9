"""Pooling: MaxPool and AveragePool as one Pooling each (padding inside it, ceil_mode as its 'full' convention,
AveragePool's count_include_pad honoured), and GlobalMaxPool and GlobalAveragePool of any rank (the importer's 2-D
Pooling fails on tf2onnx's GlobalMaxPooling1D and on a video's 5-D features). What Pooling cannot compute (dilations, a last window ONNX's ceil_mode drops) is
refused before the import (refusals.py)."""

from __future__ import annotations

from rosetta.convert.onnx.to_mxnet.registry import add_converter, mxnet_own, symbols
from rosetta.errors import RosettaError


@add_converter("GlobalMaxPool", 1)
def global_max_pool(attrs, inputs, importer):
    """ONNX GlobalMaxPool of any rank: the max over every axis but N and C, kept. MXNet's own converter
    writes a 2-D Pooling, which fails on (N, C, L) (tf2onnx's GlobalMaxPooling1D)."""
    return symbols().max(inputs[0], axis=(0, 1), exclude=True, keepdims=True), attrs, inputs


@add_converter("GlobalAveragePool", 1)
def global_average_pool(attrs, inputs, importer):
    """ONNX GlobalAveragePool of any rank: the mean over every axis but N and C, kept. MXNet's own converter
    writes a 2-D Pooling, which fails on a video's (N, C, T, H, W) ("dimensions are invalid")."""
    return symbols().mean(inputs[0], axis=(0, 1), exclude=True, keepdims=True), attrs, inputs


def _pooling(pool_type: str, attrs, inputs, **options):
    """One Pooling of MXNet with ONNX's kernel, strides and symmetric pads; ceil_mode as the 'full' convention,
    where refusals.py lets it through (ONNX drops a last window that would start in the end padding, MXNet
    does not)."""
    kernel = tuple(attrs["kernel_shape"])
    pads = tuple(attrs.get("pads", (0,) * 2 * len(kernel)))
    return symbols().Pooling(inputs[0], kernel=kernel, stride=tuple(attrs.get("strides", (1,) * len(kernel))),
                             pad=pads[:len(kernel)], pool_type=pool_type,
                             pooling_convention="full" if attrs.get("ceil_mode", 0) else "valid", **options)


def _symmetric(attrs) -> bool:
    pads = tuple(attrs.get("pads", ()))
    return pads[:len(pads) // 2] == pads[len(pads) // 2:]


@add_converter("MaxPool", 1)
def max_pool(attrs, inputs, importer):
    """ONNX MaxPool with the same padding at both ends of each axis -> one Pooling with `pad`, whose padded
    positions never win the max, as ONNX's do not; the importer writes an edge-mode Pad before every padded
    Pooling (ResNet-50's stem: 4 % of its time), which is kept for pads that differ at the two ends (an edge
    value never exceeds the max either)."""
    if _symmetric(attrs):
        return _pooling("max", attrs, inputs), attrs, inputs
    return mxnet_own("MaxPool")(attrs, inputs, importer)


@add_converter("AveragePool", 1)
def average_pool(attrs, inputs, importer):
    """ONNX AveragePool -> Pooling with ONNX's count_include_pad (default 0; MXNet's default counts the pads,
    which the importer left in place: a silently smaller average at the borders). Pads that differ at the two
    ends (auto_pad SAME_UPPER/SAME_LOWER made explicit, TF-style 'same' exports): `_asymmetric_average`."""
    if not _symmetric(attrs):
        return _asymmetric_average(attrs, inputs), attrs, inputs
    return _pooling("avg", attrs, inputs, count_include_pad=bool(attrs.get("count_include_pad", 0))), attrs, inputs


def _asymmetric_average(attrs, inputs):
    """AveragePool whose pads differ at the two ends (Pooling pads both ends alike): the zeros padded first by
    `pad` (MXNet's pads a 4-D or 5-D tensor only: 2-D and 3-D pooling), then a Pooling without pads; with
    count_include_pad 0 the window's sum over its count of real elements, as the average of the padded x over
    the average of the padded ones (the same window, so the window's size cancels)."""
    sym = symbols()
    kernel = tuple(attrs["kernel_shape"])
    if len(kernel) not in (2, 3):
        raise RosettaError(f"AveragePool of {len(kernel)} spatial axes with pads that differ at the two ends cannot "
                           f"be converted to mxnet: MXNet's pad takes 4-D and 5-D tensors only")
    pads = tuple(attrs["pads"])
    width = (0, 0, 0, 0) + tuple(v for begin, end in zip(pads[:len(kernel)], pads[len(kernel):]) for v in (begin, end))

    def pooled(x):
        padded = sym.pad(x, mode="constant", constant_value=0, pad_width=width)
        return _pooling("avg", {**attrs, "pads": (0,) * len(pads)}, [padded], count_include_pad=True)

    if attrs.get("count_include_pad", 0):
        return pooled(inputs[0])
    return sym.broadcast_div(pooled(inputs[0]), pooled(sym.ones_like(inputs[0])))
