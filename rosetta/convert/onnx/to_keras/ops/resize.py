"""Resize and Upsample: by integer factors on the spatial axes as UpSamplingND (nearest that repeats, or
bilinear with half-pixel centres in 2-D), any other as what ONNX's reference computes axis by axis (`by_axes`:
copied positions or a fixed interpolation matrix, keras.ops). Resize-10 is Upsample-9 renamed (X, scales); from
opset 11 it reads (X, roi, scales, sizes), any of the last three omitted, and from 18 an `axes` attribute."""

from __future__ import annotations


import numpy as np

from rosetta.convert.onnx.to_keras.context import BatchDim, Mapped
from rosetta.convert.onnx.to_keras.layout import add, channels_last, materialize, realize
from rosetta.convert.onnx.to_keras.registry import add_converter
from rosetta.errors import RosettaError
from rosetta.frameworks.onnx_graph import resize_axes, text


def nearest_is_repeat(coordinate_mode: str, nearest_mode: str, factor: int, length: int | None) -> bool:
    """Whether ONNX's nearest Resize by an integer factor picks input i // factor for output i, which is what
    UpSampling (repeat) does: checked on the spec's formulas rather than assumed per mode."""
    if length is None:
        if coordinate_mode == "align_corners":
            return False
        length = 8  # the other transforms do not depend on the length, except for the clamp at the edges
    resized = np.arange(length * factor, dtype=np.float64)
    transforms = {
        "asymmetric": resized / factor,
        "half_pixel": (resized + 0.5) / factor - 0.5,
        "pytorch_half_pixel": (resized + 0.5) / factor - 0.5 if length * factor > 1 else 0 * resized,
        "tf_half_pixel_for_nn": (resized + 0.5) / factor,
        "align_corners": resized * (length - 1) / (length * factor - 1) if length * factor > 1 else 0 * resized,
    }
    rounders = {"floor": np.floor, "ceil": np.ceil,
                "round_prefer_floor": lambda v: np.ceil(v - 0.5), "round_prefer_ceil": lambda v: np.floor(v + 0.5)}
    if coordinate_mode not in transforms or nearest_mode not in rounders:
        return False
    picked = np.clip(rounders[nearest_mode](transforms[coordinate_mode]), 0, length - 1)
    return np.array_equal(picked, resized // factor)


def upsample(context, node, x: Mapped, scales: list, mode: str, coordinate_mode: str, nearest_mode: str) -> list:
    """Resize/Upsample by integer factors on the spatial axes: UpSamplingND (repeat, or bilinear in 2-D)."""
    op, rank = node.op_type, len(x.axes)
    factors = [int(round(s)) for s in scales[2:]]
    if len(scales) != rank or list(scales[:2]) != [1, 1] or not 3 <= rank <= 5 or \
            any(f < 1 or abs(s - f) > 1e-6 for s, f in zip(scales[2:], factors)):
        raise RosettaError(f"keras mapper: {op} is supported by integer factors on the spatial axes of a 3- to "
                           f"5-D tensor only (scales {list(scales)})")
    lengths = (context.shapes.get(node.input[0]) or [None] * rank)[2:]
    repeats = all(nearest_is_repeat(coordinate_mode, nearest_mode, f, n) for f, n in zip(factors, lengths))
    if mode == "nearest" and repeats:
        interpolation = "nearest"
    elif mode == "linear" and rank == 4 and coordinate_mode in ("half_pixel", "pytorch_half_pixel"):
        interpolation = "bilinear"  # Keras' bilinear samples at half-pixel centres, as these modes do
    else:
        raise RosettaError(f"keras mapper: {op} mode={mode!r} with coordinate_transformation_mode="
                           f"{coordinate_mode!r} and nearest_mode={nearest_mode!r} is not supported: only "
                           f"nearest that repeats, or linear with half_pixel in 2-D")
    x = materialize(context, x, channels_last(rank))
    options = {"interpolation": interpolation} if rank == 4 else {}
    layer = context.spatial_layer("UpSampling{}D", rank - 2, "upsample", factors if rank > 3 else factors[0],
                                  **options)
    return [Mapped(layer(x.tensor), x.axes, None, x.nonnegative)]


def by_axes(context, node) -> Mapped | None:
    """Any Resize or Upsample whose resized axes have static sizes and whose scales or sizes are constants, axis
    by axis as ONNX's reference computes it (onnx_graph.resize_axes): keras.ops.take of the copied positions
    (nearest), or a product with the constant interpolation matrix along that axis; None where it cannot."""
    shape, constants = context.static_shape(node.input[0]), context.constants
    if len(node.input) > 3 and node.input[3] in context.symbolic:  # sizes copying the batch from Shape(x)
        wanted, dims = context.shape_value(node.input[3], "Resize sizes"), context.dims(node.input[0])
        if any(isinstance(w, BatchDim) and w != d for w, d in zip(wanted, dims)):
            return None
        # the batch axis kept as it is: an axis of size 1 to 1, which every mode maps onto itself
        shape = [1 if isinstance(d, BatchDim) else s for s, d in zip(shape, dims)]
        constants = {**constants, node.input[3]: np.array([1 if isinstance(w, BatchDim) else int(w) for w in wanted])}
    plans = resize_axes(node, shape, constants, context.opset)
    if plans is None:
        return None
    x, ops = context.values[node.input[0]], context.keras.ops
    for plan in plans:
        if x.axes[plan.axis] is None:
            x = realize(context, x, [plan.axis])
        axis, tensor = x.axes[plan.axis], x.tensor
        if plan.indices is not None:
            tensor = ops.take(tensor, plan.indices, axis=axis)
        else:
            dtype = str(tensor.dtype)
            moved = ops.matmul(ops.moveaxis(tensor, axis, -1), plan.matrix.astype(dtype))
            if plan.offset is not None:
                moved = add(ops, moved, plan.offset.astype(dtype))
            tensor = ops.moveaxis(moved, -1, axis)
        x = Mapped(tensor, x.axes, None, x.nonnegative and plan.indices is not None)
    return x


def _with_fallback(context, node, fast) -> list:
    """fast() (an UpSampling layer), or where it cannot, by_axes."""
    try:
        return fast()
    except RosettaError:
        mapped = by_axes(context, node)
        if mapped is None:
            raise
        return [mapped]


@add_converter("Resize", 10)
def resize_scales(context, node, attrs):
    """Resize-10 is Upsample-9 renamed: asymmetric sampling, nearest by floor."""
    def fast():
        scales = [float(s) for s in np.ravel(context.constant(node.input[1], "Resize scales"))]
        return upsample(context, node, context.values[node.input[0]], scales, text(attrs.get("mode", "nearest")),
                        "asymmetric", "floor")
    return _with_fallback(context, node, fast)


@add_converter("Resize", 11, reads_symbolic=True)
def resize(context, node, attrs):
    """Resize from opset 11: by constant scales, or by sizes (constant, or copying the batch from Shape(x))."""
    return _with_fallback(context, node, lambda: _resize_fast(context, node, attrs))


def _resize_fast(context, node, attrs) -> list:
    x = context.values[node.input[0]]
    rank = len(x.axes)
    scales = context.optional_constant(node, 2, "Resize scales")
    axes = [int(axis) % rank for axis in attrs.get("axes", range(rank))]
    if len(node.input) > 3 and node.input[3] in context.symbolic:  # sizes copying the batch from Shape(x)
        wanted, dims = context.shape_value(node.input[3], "Resize sizes"), context.dims(node.input[0])
        resized = [(axis, size) for axis, size in zip(axes, wanted) if size != dims[axis]]
        if any(isinstance(size, BatchDim) for _, size in resized):
            raise RosettaError("keras mapper: Resize of the batch axis is not supported")
        axes, sizes = [axis for axis, _ in resized], np.array([size for _, size in resized], np.int64)
    else:
        sizes = context.optional_constant(node, 3, "Resize sizes")
    if scales is None or scales.size == 0:
        if sizes is None or text(attrs.get("keep_aspect_ratio_policy", "stretch")) != "stretch":
            raise RosettaError("keras mapper: Resize needs constant scales, or constant sizes with "
                               "keep_aspect_ratio_policy='stretch'")
        source = context.static_shape(node.input[0])
        if any(source[axis] is None for axis in axes):
            raise RosettaError("keras mapper: Resize by sizes of an input of unknown size")
        scales = [size / source[axis] for size, axis in zip(sizes, axes)]
    full = [1.0] * rank
    for axis, scale in zip(axes, np.ravel(scales)):
        full[axis] = float(scale)
    if attrs.get("antialias", 0) and min(full) < 1:
        raise RosettaError("keras mapper: Resize with antialias when downsampling has no Keras layer")
    return upsample(context, node, x, full, text(attrs.get("mode", "nearest")),
                    text(attrs.get("coordinate_transformation_mode", "half_pixel")),
                    text(attrs.get("nearest_mode", "round_prefer_floor")))


def _upsample_op(context, node, attrs, scales) -> list:
    def fast():
        if text(attrs.get("mode", "nearest")) != "nearest":
            raise RosettaError("keras mapper: Upsample mode='linear' is not supported (its asymmetric sampling is "
                               "not Keras' bilinear)")
        return upsample(context, node, context.values[node.input[0]], [float(s) for s in np.ravel(scales)],
                        "nearest", "asymmetric", "floor")
    return _with_fallback(context, node, fast)


@add_converter("Upsample", 7)
def upsample_attribute(context, node, attrs):
    """Upsample-7: its scales are an attribute."""
    return _upsample_op(context, node, attrs, attrs["scales"])


@add_converter("Upsample", 9)
def upsample_input(context, node, attrs):
    """Upsample-9: its scales are an input, a constant here."""
    return _upsample_op(context, node, attrs, context.constant(node.input[1], "Upsample scales"))
