"""ONNX -> Keras 3: rosetta's own layer mapper, producing a trainable `.keras` file of built-in layers only.

Why our own: onnx2tf's output holds its weights as constants (untrainable by design), onnx2keras has no GRU
and mishandles Dropout, nobuco is tied to Keras 2. The mapper covers the ops of the reference models and of
common users' CNNs and MLP blocks: Conv (1-, 2-, 3-D; grouped, depthwise), ConvTranspose, MaxPool,
AveragePool, GlobalAveragePool/GlobalMaxPool/ReduceMean, BatchNormalization, LayerNormalization, Pad (zeros),
Resize/Upsample (integer scales), Concat, Flatten/Reshape, Gemm/MatMul, Add/Sub/Mul/Div, Pow, Clip (ReLU6),
Relu, Sigmoid, Tanh, Softmax, HardSigmoid, HardSwish, Gelu, Gather as embedding or as a time-step pick, GRU
with linear_before_reset=1, LSTM (any direction, zero initial states), MatMul of two tensors (attention), Slice,
Cast, linear Resize with align_corners (a fixed interpolation matrix per axis), Transpose, Squeeze/Unsqueeze,
Dropout, Identity. Any other op, or an attribute the mapper cannot honour exactly, is an error naming the op.

Shapes read at run time (Shape -> Gather/Slice/Concat/Mul... -> Reshape, ConstantOfShape/Expand zero states) are
followed at conversion time: every size is known except the batch, held as a BatchDim (a multiple of it), so
the arithmetic folds to constants or to a Reshape with -1 for the one axis that holds the batch; a Reshape
that merges the batch with another axis (attention's heads) is keras.ops.reshape, and the model still takes
any batch size. tf2onnx's Embedding index wrap (where(i < 0, i + n, i)) is dropped: Gather reads negative
indices from the end already, as Keras' Embedding does.

Before mapping, nodes whose inputs are all constants are evaluated (ONNX's reference evaluator), and the
multi-node forms exporters write are fused into one node each: LayerNorm spelled as ReduceMean/Sub/Pow/Sqrt/Div
(torch below opset 17, or written out by hand), GELU spelled with Erf (Keras has no erf or sqrt layer to map them one by one),
and MatMul + Add of a constant vector (torch's Linear on 3-D inputs), so that each becomes one layer whose
weights stay trainable.

Layouts. Keras on CPU convolves channels-last, and Keras tensors always keep the batch on axis 0. Each ONNX
tensor is tracked as a Keras tensor plus `axes`: for each ONNX (logical) axis, the Keras axis that holds
it, or None for a size-1 axis that has no Keras axis. So an NCHW tensor lives as NHWC with axes (0, 3, 1, 2),
an NCW one as NWC with (0, 2, 1), a Transpose only rewrites `axes` (no layer), and a Permute layer is
inserted only where an op needs a particular order. Flattening a channels-last tensor gives features in
(h, w, c) order where the ONNX graph has (c, h, w): when only Dense layers read the flat tensor, their kernel
rows are permuted instead of the data (`feature_order`), otherwise the tensor is permuted back before flattening.

Weights: Conv kernels OI(spatial) -> (spatial)IO, with explicit ZeroPadding when ONNX pads are not what
"same" means; depthwise kernels (C*m, 1, spatial) -> (spatial, C, m); ConvTranspose kernels (I, O, spatial)
-> (spatial, O, I), its pads cropped after a "valid" transposed convolution; Gemm kernels transposed as
transB says; GRU kernels (z, r, h in both ONNX and Keras) transposed, input and recurrent biases stacked as
Keras' reset_after=True expects. BatchNorm's ONNX momentum is Keras' momentum. A constant operand of an
elementwise op (x * c, x + c, x / c, c - x) is held by a Rescaling layer (x * scale + offset), so it is a
constant in Keras too, not a trainable weight.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from rosetta.errors import RosettaError
from rosetta.manifest import Manifest, sha256_of

ARTIFACT = "model.keras"


@dataclass
class Mapped:
    """An ONNX tensor as a Keras tensor: `axes[i]` is the Keras axis of ONNX axis i (None: virtual size 1)."""

    tensor: object
    axes: tuple
    feature_order: np.ndarray | None = None  # 2-D only: Keras feature j is ONNX feature feature_order[j]
    nonnegative: bool = False  # known >= 0 (ReLU output): zero padding equals -inf padding for MaxPool
    batch_multiple: int | None = None  # the Keras axis of unknown size holds this many times the batch (None:
    # as the op's first tensor input; set by the reshapes that merge the batch with another axis)


@dataclass(frozen=True)
class BatchDim:
    """A size known at conversion time only as `multiple` times the batch size: what Shape gives for the
    dynamic batch axis, so that shape arithmetic (torch's attention, tf2onnx's LSTM zero states) can be
    followed exactly. Only the arithmetic that keeps it a multiple of the batch is defined."""

    multiple: int

    def __mul__(self, other):
        if isinstance(other, (int, np.integer)):
            return BatchDim(self.multiple * int(other))
        raise RosettaError("keras mapper: shape arithmetic multiplies the batch size by itself")

    __rmul__ = __mul__

    def __floordiv__(self, other):
        if isinstance(other, (int, np.integer)) and other > 0 and self.multiple % int(other) == 0:
            return BatchDim(self.multiple // int(other))
        raise RosettaError("keras mapper: shape arithmetic divides the batch size by a number it is not a multiple of")

    def __add__(self, other):
        if isinstance(other, BatchDim):
            return BatchDim(self.multiple + other.multiple)
        raise RosettaError("keras mapper: shape arithmetic adds a number to the batch size")

    __radd__ = __add__


@dataclass
class Filled:
    """A tensor of one repeated value whose shape holds the batch size (ConstantOfShape or Expand of a
    run-time shape): the zero initial states torch and tf2onnx build for recurrent layers."""

    value: np.ndarray  # 0-d, of the tensor's element type
    shape: list  # int or BatchDim per axis


_READS_SYMBOLIC = {"Reshape", "LSTM", "GRU", "Resize"}  # their handlers read shapes and zero states computed at run time
_INT_TYPES = (2, 3, 4, 5, 6, 7, 12, 13)  # onnx.TensorProto's (u)int8/16/32/64
_MAX_INDEX = 2 ** 31 - 1


def _has_batch(values) -> bool:
    return any(isinstance(v, BatchDim) for v in np.ravel(np.asarray(values, dtype=object)))


def _product(dims) -> tuple:
    """(multiple of the batch or None, product of the known sizes) of a list of sizes."""
    multiple, known = None, 1
    for d in dims:
        if isinstance(d, BatchDim):
            if multiple is not None:
                raise RosettaError("keras mapper: a shape holds the batch size twice")
            multiple = d.multiple
        else:
            known *= int(d)
    return multiple, known


def _onnx_slice(start: int, end: int, step: int, size: int) -> slice:
    """ONNX Slice's clamping of (start, end, step) on an axis of `size`, as a Python slice of the same elements."""
    if step == 0:
        raise RosettaError("keras mapper: Slice with step 0")
    start, end = start + size if start < 0 else start, end + size if end < 0 else end
    if step > 0:
        start, end = min(max(start, 0), size), min(max(end, 0), size)
        return slice(start, end, step)
    start, end = min(max(start, 0), size - 1), min(max(end, -1), size - 1)
    return slice(start, None if end == -1 else end, step)


def _whole_axis(start: int, end: int, step: int) -> bool:
    return step == 1 and start in (0, -(2 ** 63)) and end >= _MAX_INDEX


def _identity(rank: int) -> tuple:
    return tuple(range(rank))


def _channels_last(rank: int) -> tuple:
    """The axes of an ONNX (N, C, spatial...) tensor held as Keras (N, spatial..., C)."""
    return (0, rank - 1) + tuple(range(1, rank - 1))


NCHW_AS_NHWC = _channels_last(4)


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _pairs(begins, ends):
    """(begin, end) per spatial axis as Keras' ZeroPadding/Cropping layers take it (a bare pair in 1-D)."""
    pairs = tuple((int(b), int(e)) for b, e in zip(begins, ends))
    return pairs[0] if len(pairs) == 1 else pairs


def _nearest_is_repeat(coordinate_mode: str, nearest_mode: str, factor: int, length: int | None) -> bool:
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


def _same_pads(sizes: list, kernel: list, strides: list) -> list:
    """The pads [begin..., end...] that TensorFlow's (and so Keras') padding='same' uses."""
    totals = [max((math.ceil(n / s) - 1) * s + k - n, 0) for n, k, s in zip(sizes, kernel, strides)]
    return [t // 2 for t in totals] + [t - t // 2 for t in totals]


def _as_parameter(value: np.ndarray, shape: list):
    """A constant broadcast to `shape` (leading size-1 axes dropped), or None when it does not broadcast so."""
    value = np.asarray(value)
    while value.ndim > len(shape) and value.shape[0] == 1:
        value = value[0]
    try:
        return np.broadcast_to(value, shape).astype(np.float32)
    except ValueError:
        return None


@dataclass
class KerasGraphBuilder:
    model: object  # onnx ModelProto
    keras: object
    values: dict = field(default_factory=dict)  # ONNX name -> Mapped
    constants: dict = field(default_factory=dict)  # ONNX name -> np.ndarray
    shapes: dict = field(default_factory=dict)  # ONNX name -> static shape (None for unknown dims)
    consumers: dict = field(default_factory=dict)  # ONNX name -> [op types reading it]
    symbolic: dict = field(default_factory=dict)  # ONNX name -> object array holding BatchDims, or Filled
    opsets: dict = field(default_factory=dict)
    counter: int = 0

    # ---- helpers -------------------------------------------------------------------------------------
    def name(self, op: str) -> str:
        self.counter += 1
        return f"{op.lower()}{self.counter}"  # no "_": Keras auto-names its ops (keras.ops.reshape) "reshape_4"

    def spatial_layer(self, kind: str, spatial: int, short_name: str, *args, **kwargs):
        """keras.layers.<kind> for 1, 2 or 3 spatial axes: ('Conv{}D', 2) is Conv2D."""
        if spatial not in (1, 2, 3):
            raise RosettaError(f"keras mapper: {kind.format('N')} over {spatial} spatial axes is not supported")
        return getattr(self.keras.layers, kind.format(spatial))(*args, name=self.name(short_name), **kwargs)

    def materialize(self, mapped: Mapped, wanted: tuple) -> Mapped:
        """The same ONNX tensor with its Keras axes in the order `wanted` (same virtual axes)."""
        if mapped.axes == wanted:
            return mapped
        if any(a is not None and w is None for a, w in zip(mapped.axes, wanted)) or len(mapped.axes) != len(wanted):
            raise RosettaError(f"keras mapper: cannot move between layouts {mapped.axes} and {wanted}")
        if any(a is None and w is not None for a, w in zip(mapped.axes, wanted)):
            mapped = self.realize(mapped, [i for i, (a, w) in enumerate(zip(mapped.axes, wanted)) if a is None and w is not None])
            if mapped.axes == wanted:
                return mapped
        if mapped.feature_order is not None:
            raise RosettaError("keras mapper: a channels-last flattened tensor is used by an op other than Dense")
        real = [(w, a) for w, a in zip(wanted, mapped.axes) if w is not None]
        source_of = dict(real)  # new keras position -> old keras position
        if source_of.get(0) != 0:  # Permute keeps Keras axis 0; a transpose that moves it is an op
            tensor = self.keras.ops.transpose(mapped.tensor, tuple(source_of[p] for p in range(len(real))))
        else:
            permutation = tuple(source_of[p] for p in range(1, len(real)))
            tensor = self.keras.layers.Permute(permutation, name=self.name("permute"))(mapped.tensor)
        return Mapped(tensor, wanted, None, mapped.nonnegative, mapped.batch_multiple)

    def realize(self, mapped: Mapped, logical_axes: list) -> Mapped:
        """Virtual size-1 axes given Keras axes of their own, appended last (a 1-D conv exported as 2-D)."""
        if mapped.feature_order is not None:
            raise RosettaError("keras mapper: a channels-last flattened tensor is used by an op other than Dense")
        shape = list(mapped.tensor.shape)
        if None in shape[1:]:
            tensor = self.keras.ops.reshape(mapped.tensor, [-1] + shape[1:] + [1] * len(logical_axes))
        else:
            tensor = self.keras.layers.Reshape(shape[1:] + [1] * len(logical_axes), name=self.name("reshape"))(mapped.tensor)
        added = {axis: len(shape) + i for i, axis in enumerate(logical_axes)}
        return Mapped(tensor, tuple(added.get(i, k) for i, k in enumerate(mapped.axes)), None, mapped.nonnegative,
                      mapped.batch_multiple)

    def logical_order(self, mapped: Mapped) -> Mapped:
        """The tensor with its real Keras axes in ONNX order (virtual axes stay virtual: same element order)."""
        order = iter(range(len(mapped.axes)))
        return self.materialize(mapped, tuple(None if k is None else next(order) for k in mapped.axes))

    def dims(self, name: str) -> list:
        """The ONNX shape of a mapped tensor, an int or a BatchDim per axis, read from its Keras tensor."""
        x = self.values[name]
        shape = list(x.tensor.shape)
        if sum(d is None for d in shape) > 1:
            raise RosettaError(f"keras mapper: {name!r} has more than one axis of unknown size")
        return [1 if k is None else BatchDim(x.batch_multiple or 1) if shape[k] is None else int(shape[k])
                for k in x.axes]

    def shape_value(self, name: str, what: str) -> list:
        """A small integer tensor known at conversion time, its elements ints or BatchDims."""
        if name in self.constants:
            return [int(v) for v in np.ravel(self.constants[name])]
        value = self.symbolic.get(name)
        if isinstance(value, np.ndarray):
            return list(value.ravel())
        raise RosettaError(f"keras mapper: {what} ({name!r}) must be known at conversion time (a constant, or "
                           f"computed from shapes)")

    def is_zero(self, name: str) -> bool:
        """Whether a tensor is all zeros: a constant, or filled (ConstantOfShape/Expand of a run-time shape)."""
        if name in self.constants:
            return not np.any(self.constants[name])
        value = self.symbolic.get(name)
        return isinstance(value, Filled) and not np.any(value.value)

    def static_shape(self, name: str) -> list:
        """ONNX shape inference's sizes, completed from the Keras tensor where inference lost them (after a
        Reshape to a shape computed at run time); None for the batch."""
        shape = self.shapes.get(name)
        if name in self.values:
            try:
                mapped = [None if isinstance(d, BatchDim) else d for d in self.dims(name)]
            except RosettaError:
                mapped = None
            if mapped is not None and (shape is None or len(shape) != len(mapped)):
                shape = mapped
            elif mapped is not None:
                shape = [m if s is None else s for s, m in zip(shape, mapped)]
        if shape is None:
            raise RosettaError(f"keras mapper: the shape of {name!r} is unknown (run ONNX shape inference)")
        return shape

    def constant(self, name: str, what: str) -> np.ndarray:
        if name not in self.constants:
            raise RosettaError(f"keras mapper: {what} ({name!r}) must be a constant or initializer")
        return self.constants[name]

    def optional_constant(self, node, index: int, what: str):
        return self.constant(node.input[index], what) if len(node.input) > index and node.input[index] else None

    def keras_constant(self, x: Mapped, x_name: str, value: np.ndarray, op: str):
        """A constant operand of an elementwise op with `x`, laid out to broadcast against x's Keras tensor
        (batch axis dropped); a float when it is one number."""
        value = np.asarray(value, dtype=np.float32)
        if value.size == 1:
            return float(value.reshape(()))
        rank = len(x.axes)
        if value.ndim > rank:
            raise RosettaError(f"keras mapper: {op} with a constant of higher rank than its tensor operand")
        value = value.reshape((1,) * (rank - value.ndim) + value.shape)
        sizes = self.shapes.get(x_name) or [None] * rank
        for axis, (size, tensor_size) in enumerate(zip(value.shape, sizes)):
            if size != 1 and (axis == 0 or x.axes[axis] in (None, 0) or size != tensor_size):
                raise RosettaError(f"keras mapper: {op}'s constant operand must broadcast to the shape of its "
                                   f"tensor operand without enlarging it or varying over the batch")
        real = [axis for axis, k in enumerate(x.axes) if k is not None]
        value = value.reshape([value.shape[axis] for axis in real]).transpose(np.argsort([x.axes[a] for a in real]))
        if x.feature_order is not None:
            value = value[:, x.feature_order]  # follow the Keras feature order of a channels-last flatten
        return value[0]

    # ---- shape arithmetic, followed at conversion time ----------------------------------------------
    def symbolic_input(self, name: str):
        return self.constants[name] if name in self.constants else self.symbolic[name]

    def evaluate_symbolic(self, node, a) -> list:
        """A node computing on shapes (ints and BatchDims) or on Filled tensors, evaluated here: the result is a
        constant once no batch size is left in it. Its inputs are constants or symbolic values."""
        op = node.op_type
        inputs = [self.symbolic_input(name) if name else None for name in node.input]
        first = inputs[0]
        if isinstance(first, Filled):
            return [self.evaluate_filled(node, a, first)]
        if any(isinstance(v, Filled) for v in inputs) and op != "Expand":
            raise RosettaError(f"keras mapper: {op} of a filled tensor of run-time shape is not supported")
        data = np.asarray(first, dtype=object) if first is not None else None
        if op in ("Identity", "Cast"):
            if op == "Cast" and a["to"] not in _INT_TYPES:
                raise RosettaError("keras mapper: Cast of the batch size to a non-integer type is not supported")
            return [data]
        if op == "Gather":
            return [np.take(data, np.asarray(inputs[1]).astype(np.int64), axis=a.get("axis", 0))]
        if op == "Concat":
            return [np.concatenate([np.asarray(v, dtype=object) for v in inputs], axis=a["axis"])]
        if op == "Unsqueeze":
            axes = a.get("axes", inputs[1] if len(inputs) > 1 else None)
            rank = data.ndim + len(np.ravel(axes))
            return [np.expand_dims(data, tuple(sorted(int(x) % rank for x in np.ravel(axes))))]
        if op == "Squeeze":
            axes = a.get("axes", inputs[1] if len(inputs) > 1 else None)
            return [np.squeeze(data, None if axes is None else tuple(int(x) % data.ndim for x in np.ravel(axes)))]
        if op == "Reshape":
            target = [int(v) for v in np.ravel(inputs[1])]
            if not a.get("allowzero", 0):
                target = [data.shape[i] if d == 0 else d for i, d in enumerate(target)]
            return [data.reshape(target)]
        if op == "Slice":
            starts, ends = (np.ravel(v).astype(np.int64) for v in inputs[1:3])
            axes = np.ravel(inputs[3]).astype(np.int64) if len(inputs) > 3 and inputs[3] is not None \
                else np.arange(len(starts))
            steps = np.ravel(inputs[4]).astype(np.int64) if len(inputs) > 4 and inputs[4] is not None \
                else np.ones(len(starts), np.int64)
            index = [slice(None)] * data.ndim
            for start, end, axis, step in zip(starts, ends, axes, steps):
                index[int(axis) % data.ndim] = _onnx_slice(int(start), int(end), int(step), data.shape[int(axis)])
            return [data[tuple(index)]]
        if op in ("Mul", "Div", "Add", "Sub"):
            def arithmetic(x, y):
                if op == "Mul":
                    return x * y
                if op == "Add":
                    return x + y
                if op == "Sub":
                    if isinstance(x, BatchDim) or isinstance(y, BatchDim):
                        raise RosettaError("keras mapper: shape arithmetic subtracts from the batch size")
                    return x - y
                if isinstance(y, BatchDim):
                    raise RosettaError("keras mapper: shape arithmetic divides by the batch size")
                if isinstance(x, BatchDim):
                    return x // y
                return int(x / y) if isinstance(x, float) or isinstance(y, float) else \
                    (abs(int(x)) // abs(int(y))) * (1 if (x >= 0) == (y >= 0) else -1)  # ONNX truncates

            other = np.asarray(inputs[1], dtype=object)
            if any(isinstance(v, (float, np.floating)) for v in np.ravel(np.concatenate([np.ravel(data), np.ravel(other)]))):
                raise RosettaError(f"keras mapper: {op} of the batch size and a float is not supported")
            return [np.frompyfunc(arithmetic, 2, 1)(data, other)]
        if op == "ConstantOfShape":
            value = a.get("value")
            from onnx import numpy_helper

            fill = numpy_helper.to_array(value).reshape(()) if value is not None else np.zeros((), np.float32)
            return [Filled(fill, list(data.ravel()))]
        if op == "Expand":
            value, shape = inputs[0], list(np.ravel(np.asarray(inputs[1], dtype=object)))
            value = np.asarray(value)
            if isinstance(inputs[0], Filled) or value.size != 1 or len(shape) < value.ndim:
                raise RosettaError("keras mapper: Expand to a run-time shape is supported for one repeated value only")
            return [Filled(value.reshape(()), shape)]
        raise RosettaError(f"keras mapper: {op} on a shape holding the run-time batch size is not supported")

    def evaluate_filled(self, node, a, filled: Filled) -> Filled:
        """Ops that move a filled tensor around without changing its value: only its shape is followed."""
        op, shape = node.op_type, list(filled.shape)
        if op in ("Identity", "Cast"):
            dtype = filled.value.dtype if op == "Identity" else \
                __import__("onnx").helper.tensor_dtype_to_np_dtype(a["to"])
            return Filled(filled.value.astype(dtype), shape)
        if op in ("Unsqueeze", "Squeeze"):
            axes = a.get("axes") or [int(v) for v in np.ravel(self.constant(node.input[1], f"{op} axes"))]
            if op == "Squeeze":
                return Filled(filled.value, [d for i, d in enumerate(shape) if i not in {x % len(shape) for x in axes}])
            for axis in sorted(x % (len(shape) + len(axes)) for x in axes):
                shape.insert(axis, 1)
            return Filled(filled.value, shape)
        if op == "Transpose":
            return Filled(filled.value, [shape[p] for p in a.get("perm", list(reversed(range(len(shape)))))])
        if op == "Slice":
            starts, ends = (np.ravel(self.constant(n, "Slice bounds")) for n in node.input[1:3])
            axes = np.ravel(self.constant(node.input[3], "Slice axes")) if len(node.input) > 3 and node.input[3] \
                else np.arange(len(starts))
            steps = np.ravel(self.constant(node.input[4], "Slice steps")) if len(node.input) > 4 and node.input[4] \
                else np.ones(len(starts), np.int64)
            for start, end, axis, step in zip(starts, ends, axes, steps):
                axis = int(axis) % len(shape)
                if isinstance(shape[axis], BatchDim):
                    if not _whole_axis(int(start), int(end), int(step)):
                        raise RosettaError("keras mapper: Slice of the batch axis is not supported")
                    continue
                shape[axis] = len(range(shape[axis])[_onnx_slice(int(start), int(end), int(step), shape[axis])])
            return Filled(filled.value, shape)
        raise RosettaError(f"keras mapper: {op} of a filled tensor of run-time shape is not supported")

    def store_symbolic(self, name: str, value):
        """A symbolic result becomes a constant (and later nodes fold) once it no longer holds the batch size."""
        if isinstance(value, Filled):
            if not _has_batch(value.shape):
                self.constants[name] = np.full([int(d) for d in value.shape], value.value)
                return
        elif not _has_batch(value):
            self.constants[name] = np.asarray(value).astype(np.int64)
            return
        self.symbolic[name] = value

    def op_Shape(self, node, a):
        dims = np.empty(len(self.values[node.input[0]].axes), dtype=object)
        dims[:] = self.dims(node.input[0])
        start, end = a.get("start", 0), a.get("end")
        self.store_symbolic(node.output[0], dims[_onnx_slice(start, _MAX_INDEX if end is None else end, 1, len(dims))])
        return []

    def op_ConstantOfShape(self, node, a):
        raise RosettaError("keras mapper: ConstantOfShape of a shape not known at conversion time is not supported")

    def op_Expand(self, node, a):
        raise RosettaError("keras mapper: Expand of a tensor is not supported (only of one value, to a shape "
                           "known at conversion time)")

    def op_Cast(self, node, a):
        """Cast of a tensor: exact in keras.ops.cast (float to int truncates toward zero, as ONNX says)."""
        import onnx

        x = self.values[node.input[0]]
        dtype = onnx.helper.tensor_dtype_to_np_dtype(a["to"]).name
        if str(x.tensor.dtype) == dtype:
            return [x]
        return [Mapped(self.keras.ops.cast(x.tensor, dtype), x.axes, x.feature_order, x.nonnegative)]

    def op_Slice(self, node, a):
        """Slice of a tensor by constant bounds, as Keras tensor indexing (the batch axis only whole)."""
        x = self.values[node.input[0]]
        rank = len(x.axes)
        starts, ends = ([int(v) for v in np.ravel(self.constant(n, "Slice bounds"))] for n in node.input[1:3])
        axes = [int(v) % rank for v in np.ravel(self.optional_constant(node, 3, "Slice axes"))] \
            if len(node.input) > 3 and node.input[3] else list(range(len(starts)))
        steps = [int(v) for v in np.ravel(self.optional_constant(node, 4, "Slice steps"))] \
            if len(node.input) > 4 and node.input[4] else [1] * len(starts)
        dims = self.dims(node.input[0])
        index = [slice(None)] * len([k for k in x.axes if k is not None])
        for start, end, axis, step in zip(starts, ends, axes, steps):
            if isinstance(dims[axis], BatchDim):
                if not _whole_axis(start, end, step):
                    raise RosettaError("keras mapper: Slice of the batch axis is not supported")
                continue
            picked = _onnx_slice(start, end, step, dims[axis])
            if x.axes[axis] is None:
                if len(range(1)[picked]) != 1:
                    raise RosettaError("keras mapper: Slice to an empty tensor is not supported")
                continue
            if x.feature_order is not None:
                raise RosettaError("keras mapper: Slice of a channels-last flattened tensor is not supported")
            index[x.axes[axis]] = picked
        if all(i == slice(None) for i in index):
            return [x]
        return [Mapped(x.tensor[tuple(index)], x.axes, None, x.nonnegative)]

    # ---- ops -----------------------------------------------------------------------------------------
    def op_Identity(self, node, a):
        return [self.values[node.input[0]]]

    def op_Dropout(self, node, a):
        rate = a.get("ratio", 0.5)
        if len(node.input) > 1 and node.input[1]:
            rate = float(self.constant(node.input[1], "Dropout ratio"))
        if len(node.input) > 2 and node.input[2] and bool(self.constant(node.input[2], "Dropout training_mode")):
            raise RosettaError("keras mapper: Dropout with training_mode true (dropout at inference too) has no "
                               "Keras layer that honours it; export in eval or preserve mode")
        x = self.values[node.input[0]]
        return [Mapped(self.keras.layers.Dropout(rate, name=self.name("dropout"))(x.tensor), x.axes, x.feature_order)]

    def op_Relu(self, node, a):
        x = self.values[node.input[0]]
        return [Mapped(self.keras.layers.ReLU(name=self.name("relu"))(x.tensor), x.axes, x.feature_order, True)]

    def op_Clip(self, node, a):
        low, high = a.get("min"), a.get("max")  # attributes before opset 11, inputs since
        if len(node.input) > 1 and node.input[1]:
            low = float(self.constant(node.input[1], "Clip min"))
        if len(node.input) > 2 and node.input[2]:
            high = float(self.constant(node.input[2], "Clip max"))
        x = self.values[node.input[0]]
        if low is None and high is None:
            return [x]
        if low == 0 and (high is None or high >= 0):  # ReLU, ReLU6
            tensor = self.keras.layers.ReLU(max_value=high, name=self.name("relu"))(x.tensor)
            return [Mapped(tensor, x.axes, x.feature_order, True)]
        if (low, high) == (-1, 1):
            tensor = self.keras.layers.Activation("hard_tanh", name=self.name("hard_tanh"))(x.tensor)
            return [Mapped(tensor, x.axes, x.feature_order)]
        raise RosettaError(f"keras mapper: Clip(min={low}, max={high}) is not supported: only Clip(0, max) "
                           f"(ReLU, ReLU6) and Clip(-1, 1) are built-in Keras layers")

    def _activation(self, node, function: str):
        x = self.values[node.input[0]]
        return [Mapped(self.keras.layers.Activation(function, name=self.name(function))(x.tensor), x.axes, x.feature_order)]

    def op_Sigmoid(self, node, a):
        return self._activation(node, "sigmoid")

    def op_Tanh(self, node, a):
        return self._activation(node, "tanh")

    def op_HardSigmoid(self, node, a):
        # ONNX: max(0, min(1, alpha * x + beta)), computed in that order by a Rescaling and a ReLU capped at 1
        x = self.values[node.input[0]]
        scaled = self.keras.layers.Rescaling(a.get("alpha", 0.2), a.get("beta", 0.5), name=self.name("rescale"))(x.tensor)
        tensor = self.keras.layers.ReLU(max_value=1.0, name=self.name("relu"))(scaled)
        return [Mapped(tensor, x.axes, x.feature_order, True)]

    def op_HardSwish(self, node, a):
        return self._activation(node, "hard_silu")  # x * relu6(x + 3) / 6, ONNX's x * HardSigmoid(1/6, 0.5)(x)

    def op_Gelu(self, node, a):
        if _text(a.get("approximate", "none")) != "none":
            raise RosettaError("keras mapper: Gelu with approximate='tanh' is not supported (Keras' 'gelu' "
                               "activation is the exact one)")
        return self._activation(node, "gelu")

    def op_Erf(self, node, a):
        raise RosettaError("keras mapper: Erf is supported only inside GELU, x * 0.5 * (1 + erf(x / sqrt(2))): "
                           "Keras has no built-in erf layer")

    def op_Sqrt(self, node, a):
        raise RosettaError("keras mapper: Sqrt is supported only inside a LayerNorm pattern "
                           "((x - mean) / sqrt(variance + eps)): Keras has no built-in sqrt layer")

    def op_Softmax(self, node, a):
        x = self.values[node.input[0]]
        axis = x.axes[a.get("axis", -1)]
        return [Mapped(self.keras.layers.Softmax(axis=axis, name=self.name("softmax"))(x.tensor), x.axes)]

    def _elementwise(self, node, op: str):
        """Add/Sub/Mul (Div only by a constant): Keras' merge layers for two tensors, a Rescaling
        (x * scale + offset) for a constant operand, which gives x + c, x - c, c - x and x * c exactly."""
        first_name, second_name = node.input[:2]
        if first_name in self.constants or second_name in self.constants:
            constant_first = first_name in self.constants
            x_name = second_name if constant_first else first_name
            x = self.values[x_name]
            c = self.keras_constant(x, x_name, self.constants[first_name if constant_first else second_name], op)
            if op == "Div" and (constant_first or np.any(np.asarray(c) == 0)):
                raise RosettaError("keras mapper: Div of a constant by a tensor, or by a constant holding zeros, is "
                                   "not supported (Keras has no built-in reciprocal layer)")
            scale, offset = {"Add": (1.0, c), "Sub": (-1.0, c) if constant_first else (1.0, -c),
                             "Mul": (c, 0.0), "Div": (1 / c, 0.0)}[op]  # x / c as x * (1 / c): within an ulp
            tensor = self.keras.layers.Rescaling(scale, offset, name=self.name("rescale"))(x.tensor)
            keeps_sign = op in ("Mul", "Div", "Add") and bool(np.all(np.asarray(c) >= 0))
            return [Mapped(tensor, x.axes, x.feature_order, x.nonnegative and keeps_sign)]
        if op == "Div":
            raise RosettaError("keras mapper: Div of two tensors is not supported (Keras has no built-in divide "
                               "layer); only Div by a constant")
        first = self.values[first_name]
        second = self.values[second_name]
        if first.feature_order is not None or second.feature_order is not None:
            if not (first.axes == second.axes and np.array_equal(first.feature_order, second.feature_order)):
                raise RosettaError(f"keras mapper: {op} of flattened tensors in different feature orders")
        second = self.materialize(second, first.axes)
        layer = {"Add": self.keras.layers.Add, "Sub": self.keras.layers.Subtract,
                 "Mul": self.keras.layers.Multiply}[op](name=self.name(op))
        tensor = layer([first.tensor, second.tensor])
        return [Mapped(tensor, first.axes, first.feature_order,
                       op != "Sub" and first.nonnegative and second.nonnegative)]

    def op_Add(self, node, a):
        return self._elementwise(node, "Add")

    def op_Sub(self, node, a):
        return self._elementwise(node, "Sub")

    def op_Mul(self, node, a):
        return self._elementwise(node, "Mul")

    def op_Div(self, node, a):
        return self._elementwise(node, "Div")

    def op_Pow(self, node, a):
        exponent = self.constant(node.input[1], "Pow exponent")
        if exponent.size != 1 or float(exponent.reshape(())) not in (1.0, 2.0, 3.0):
            raise RosettaError("keras mapper: Pow is supported with a constant exponent of 1, 2 or 3 only (Keras "
                               "has no built-in power layer; sqrt is mapped inside LayerNorm patterns)")
        x = self.values[node.input[0]]
        times = int(exponent.reshape(()))
        if times == 1:
            return [x]
        tensor = self.keras.layers.Multiply(name=self.name("pow"))([x.tensor] * times)
        return [Mapped(tensor, x.axes, x.feature_order, times % 2 == 0 or x.nonnegative)]

    def op_Concat(self, node, a):
        if any(name in self.constants for name in node.input):
            raise RosettaError("keras mapper: Concat with a constant input is not supported")
        parts = [self.values[name] for name in node.input]
        first = parts[0]
        axis = a["axis"] % len(first.axes)
        if isinstance(self.dims(node.input[0])[axis], BatchDim) or first.axes[axis] is None or \
                any(p.feature_order is not None for p in parts):
            raise RosettaError("keras mapper: Concat along the batch or a virtual axis, or of channels-last "
                               "flattened tensors, is not supported")
        if len(parts) == 1:
            return [first]
        tensors = [first.tensor] + [self.materialize(p, first.axes).tensor for p in parts[1:]]
        tensor = self.keras.layers.Concatenate(axis=first.axes[axis], name=self.name("concat"))(tensors)
        return [Mapped(tensor, first.axes, None, all(p.nonnegative for p in parts))]

    def _zero_padding(self, x: Mapped, pads: list) -> Mapped:
        """ZeroPaddingND of a channels-last tensor by ONNX spatial pads [begin..., end...]."""
        spatial = len(pads) // 2
        layer = self.spatial_layer("ZeroPadding{}D", spatial, "pad", _pairs(pads[:spatial], pads[spatial:]))
        return Mapped(layer(x.tensor), x.axes, None, x.nonnegative)

    def _explicit_padding(self, x: Mapped, pads: list, kernel: list, strides: list, dilations=None) -> tuple[Mapped, str]:
        """ONNX pads [begin..., end...] -> 'same' where that is what they mean, else ZeroPadding + 'valid'."""
        if not any(pads):
            return x, "valid"
        spatial = len(kernel)
        effective = [(k - 1) * d + 1 for k, d in zip(kernel, dilations or [1] * spatial)]
        same = all(s == 1 for s in strides) and all(
            e % 2 == 1 and begin == end == e // 2 for e, begin, end in zip(effective, pads[:spatial], pads[spatial:]))
        if same:
            return x, "same"
        return self._zero_padding(x, pads), "valid"

    def op_Pad(self, node, a):
        x = self.values[node.input[0]]
        rank = len(x.axes)
        mode = _text(a.get("mode", "constant"))
        pads = [int(v) for v in self.constant(node.input[1], "Pad pads")] if len(node.input) > 1 and node.input[1] \
            else list(a.get("pads", []))  # an attribute before opset 11
        value = a.get("value", 0.0)
        if len(node.input) > 2 and node.input[2]:
            value = float(self.constant(node.input[2], "Pad constant_value").reshape(()))
        axes = list(range(rank))
        if len(node.input) > 3 and node.input[3]:
            axes = [int(v) % rank for v in self.constant(node.input[3], "Pad axes")]
        if mode != "constant" or value != 0:
            raise RosettaError(f"keras mapper: Pad mode={mode!r} value={value} is not supported: only zero padding "
                               f"(Keras has no built-in reflect or edge padding layer)")
        begins, ends = [0] * rank, [0] * rank
        for index, axis in enumerate(axes):
            begins[axis], ends[axis] = pads[index], pads[len(axes) + index]
        padded = [axis for axis in range(rank) if begins[axis] or ends[axis]]
        if not padded:
            return [x]
        if any(p < 0 for p in begins + ends) or 0 in padded or any(x.axes[axis] in (None, 0) for axis in padded):
            raise RosettaError("keras mapper: Pad with negative pads, or of the batch or a virtual axis, is not "
                               "supported")
        keras_rank = sum(k is not None for k in x.axes)
        if x.axes.index(keras_rank - 1) in padded:  # ZeroPaddingND pads Keras axes 1..-2: keep the last unpadded
            if 1 in padded or None in x.axes:
                raise RosettaError("keras mapper: Pad of every non-batch axis is not supported")
            x = self.materialize(x, _channels_last(rank))
        by_keras_axis = {k: (begins[axis], ends[axis]) for axis, k in enumerate(x.axes) if k is not None}
        middle = [by_keras_axis[k] for k in range(1, keras_rank - 1)]
        layer = self.spatial_layer("ZeroPadding{}D", keras_rank - 2, "pad", _pairs(*zip(*middle)))
        return [Mapped(layer(x.tensor), x.axes, None, x.nonnegative)]

    def op_Conv(self, node, a):
        weight = self.constant(node.input[1], "Conv weight")
        bias = self.optional_constant(node, 2, "Conv bias")
        spatial = weight.ndim - 2
        if _text(a.get("auto_pad", "NOTSET")) != "NOTSET":
            raise RosettaError("keras mapper: Conv auto_pad is not supported (export with explicit pads)")
        strides, dilations = list(a.get("strides", [1] * spatial)), list(a.get("dilations", [1] * spatial))
        if max(strides) > 1 and max(dilations) > 1:
            raise RosettaError("keras mapper: Conv with both strides and dilations > 1 is not supported by Keras")
        x = self.materialize(self.values[node.input[0]], _channels_last(spatial + 2))
        group = a.get("group", 1)
        kernel = list(weight.shape[2:])
        x, padding = self._explicit_padding(x, list(a.get("pads", [0] * 2 * spatial)), kernel, strides, dilations)
        spatial_axes = list(range(2, 2 + spatial))
        common = dict(strides=strides, padding=padding, dilation_rate=dilations, use_bias=bias is not None)
        if group > 1 and weight.shape[1] == 1 and spatial < 3:  # one group per input channel: depthwise
            multiplier = weight.shape[0] // group
            layer = self.spatial_layer("DepthwiseConv{}D", spatial, "depthwise", kernel, depth_multiplier=multiplier,
                                       **common)
            # ONNX output channel c * m + j reads input channel c, as Keras' depthwise kernel [..., c, j] does
            kernel_weights = weight.reshape((group, multiplier) + tuple(kernel)).transpose(spatial_axes + [0, 1])
        else:
            layer = self.spatial_layer("Conv{}D", spatial, "conv", weight.shape[0], kernel, groups=group, **common)
            kernel_weights = weight.transpose(spatial_axes + [1, 0])  # O I spatial -> spatial I O
        tensor = layer(x.tensor)
        layer.set_weights([kernel_weights] + ([bias] if bias is not None else []))
        return [Mapped(tensor, _channels_last(spatial + 2))]

    def op_ConvTranspose(self, node, a):
        weight = self.constant(node.input[1], "ConvTranspose weight")
        bias = self.optional_constant(node, 2, "ConvTranspose bias")
        spatial = weight.ndim - 2
        if a.get("group", 1) != 1 or "output_shape" in a or _text(a.get("auto_pad", "NOTSET")) != "NOTSET":
            raise RosettaError("keras mapper: ConvTranspose is supported with group=1 and explicit pads only "
                               "(no output_shape, no auto_pad)")
        strides, dilations = list(a.get("strides", [1] * spatial)), list(a.get("dilations", [1] * spatial))
        output_padding = list(a.get("output_padding", [0] * spatial))
        if (max(strides) > 1 and max(dilations) > 1) or any(p >= s for p, s in zip(output_padding, strides) if p):
            raise RosettaError("keras mapper: ConvTranspose with both strides and dilations > 1, or output_padding "
                               ">= strides, is not supported by Keras")
        x = self.materialize(self.values[node.input[0]], _channels_last(spatial + 2))
        # 'valid' is the full transposed convolution, output_padding adding rows at the end as in ONNX;
        # ONNX's pads then remove rows at both ends
        layer = self.spatial_layer("Conv{}DTranspose", spatial, "conv_transpose", weight.shape[1], list(weight.shape[2:]),
                                   strides=strides, padding="valid", output_padding=output_padding,
                                   dilation_rate=dilations, use_bias=bias is not None)
        tensor = layer(x.tensor)
        layer.set_weights([weight.transpose(list(range(2, 2 + spatial)) + [1, 0])]  # I O spatial -> spatial O I
                          + ([bias] if bias is not None else []))
        pads = list(a.get("pads", [0] * 2 * spatial))
        if any(pads):
            tensor = self.spatial_layer("Cropping{}D", spatial, "crop", _pairs(pads[:spatial], pads[spatial:]))(tensor)
        return [Mapped(tensor, _channels_last(spatial + 2))]

    def _pool_attributes(self, node, a) -> tuple[list, list, list]:
        kernel = list(a["kernel_shape"])
        spatial = len(kernel)
        if a.get("ceil_mode", 0) or any(d != 1 for d in a.get("dilations", [1] * spatial)) \
                or _text(a.get("auto_pad", "NOTSET")) != "NOTSET" or (len(node.output) > 1 and node.output[1]):
            raise RosettaError(f"keras mapper: {node.op_type} with ceil_mode, dilations, auto_pad or indices is not "
                               f"supported")
        return kernel, list(a.get("strides", [1] * spatial)), list(a.get("pads", [0] * 2 * spatial))

    def op_MaxPool(self, node, a):
        kernel, strides, pads = self._pool_attributes(node, a)
        x = self.materialize(self.values[node.input[0]], _channels_last(len(kernel) + 2))
        if any(pads):
            if not x.nonnegative:
                # ONNX pads MaxPool with -inf; ZeroPadding pads with 0, equal only for inputs known to be >= 0.
                raise RosettaError("keras mapper: padded MaxPool on an input not known to be non-negative")
            x = self._zero_padding(x, pads)
        layer = self.spatial_layer("MaxPooling{}D", len(kernel), "maxpool", kernel, strides=strides, padding="valid")
        return [Mapped(layer(x.tensor), x.axes, None, x.nonnegative)]

    def op_AveragePool(self, node, a):
        kernel, strides, pads = self._pool_attributes(node, a)
        x = self.materialize(self.values[node.input[0]], _channels_last(len(kernel) + 2))
        padding = "valid"
        if any(pads) and a.get("count_include_pad", 0):
            x = self._zero_padding(x, pads)  # the padded zeros count in the average, as in ONNX
        elif any(pads):
            # count_include_pad=0 averages over the real elements only, as Keras' 'same' does, where the pads agree
            if pads != _same_pads(self.static_shape(node.input[0])[2:], kernel, strides):
                raise RosettaError("keras mapper: AveragePool with count_include_pad=0 is supported only with the "
                                   "pads of Keras' padding='same'")
            padding = "same"
        layer = self.spatial_layer("AveragePooling{}D", len(kernel), "avgpool", kernel, strides=strides, padding=padding)
        return [Mapped(layer(x.tensor), x.axes, None, x.nonnegative)]

    def op_BatchNormalization(self, node, a):
        x = self.values[node.input[0]]
        if x.axes[1] is None or x.feature_order is not None:
            raise RosettaError("keras mapper: BatchNormalization over a virtual or permuted feature axis")
        scale, bias, mean, var = (self.constant(n, "BatchNormalization parameter") for n in node.input[1:5])
        # ONNX momentum (running = running * momentum + batch * (1 - momentum)) is Keras' convention too;
        # torch's momentum 0.1 is exported as 0.9.
        layer = self.keras.layers.BatchNormalization(axis=x.axes[1], epsilon=a.get("epsilon", 1e-5),
                                                     momentum=a.get("momentum", 0.9), name=self.name("batchnorm"))
        tensor = layer(x.tensor)
        layer.set_weights([scale, bias, mean, var])
        return [Mapped(tensor, x.axes)]

    def op_LayerNormalization(self, node, a):
        if any(self.consumers.get(name) for name in node.output[1:] if name):
            raise RosettaError("keras mapper: LayerNormalization's Mean and InvStdDev outputs are not supported")
        x = self.values[node.input[0]]
        rank = len(x.axes)
        normalized = list(range(a.get("axis", -1) % rank, rank))
        if 0 in normalized or any(x.axes[axis] is None for axis in normalized) or x.feature_order is not None:
            raise RosettaError("keras mapper: LayerNormalization over the batch or a virtual axis, or of a "
                               "channels-last flattened tensor, is not supported")
        shape = [self.static_shape(node.input[0])[axis] for axis in normalized]
        keras_order = np.argsort([x.axes[axis] for axis in normalized])  # Keras keeps gamma in its axis order

        def parameter(index: int, what: str):
            value = self.optional_constant(node, index, what)
            if value is None:
                return None
            broadcast = _as_parameter(value, shape) if None not in shape else None
            if broadcast is None:
                raise RosettaError(f"keras mapper: {what} must have the normalized shape {shape}")
            return broadcast.transpose(keras_order)

        scale = parameter(1, "LayerNormalization scale")
        bias = parameter(2, "LayerNormalization bias")
        layer = self.keras.layers.LayerNormalization(axis=[x.axes[axis] for axis in normalized],
                                                     epsilon=a.get("epsilon", 1e-5), center=bias is not None,
                                                     scale=scale is not None, name=self.name("layernorm"))
        tensor = layer(x.tensor)
        layer.set_weights([w for w in (scale, bias) if w is not None])
        return [Mapped(tensor, x.axes)]

    def _global_pool(self, node, x: Mapped, reduced: list, keepdims: bool, kind: str) -> list:
        """Average/max over every axis but the batch and one kept axis: GlobalAveragePoolingND or
        GlobalMaxPoolingND with the kept axis last (channels for NCHW, features for (N, T, D))."""
        rank = len(x.axes)
        kept = [axis for axis in range(1, rank) if axis not in reduced]
        if 0 in reduced or len(kept) != 1 or None in x.axes or not 3 <= rank <= 5:
            raise RosettaError(f"keras mapper: {node.op_type} is supported over all axes but the batch and one "
                               f"other of a 3- to 5-D tensor only")
        if x.axes[kept[0]] != rank - 1 or x.axes[0] != 0:  # the pooling layers keep Keras axis 0
            others = iter(range(1, rank - 1))
            x = self.materialize(x, tuple(0 if axis == 0 else rank - 1 if axis == kept[0] else next(others)
                                          for axis in range(rank)))
        layer = self.spatial_layer(f"Global{kind}Pooling{{}}D", rank - 2, f"global_{kind.lower()}", keepdims=keepdims)
        return [Mapped(layer(x.tensor), x.axes if keepdims else (0, 1), None, x.nonnegative)]

    def op_GlobalAveragePool(self, node, a):
        x = self.values[node.input[0]]
        return self._global_pool(node, x, list(range(2, len(x.axes))), True, "Average")

    def op_GlobalMaxPool(self, node, a):
        x = self.values[node.input[0]]
        return self._global_pool(node, x, list(range(2, len(x.axes))), True, "Max")

    def op_ReduceMean(self, node, a):
        axes = a.get("axes")
        if axes is None and len(node.input) > 1 and node.input[1]:
            axes = [int(v) for v in np.atleast_1d(self.constant(node.input[1], "ReduceMean axes"))]
        x = self.values[node.input[0]]
        reduced = sorted(axis % len(x.axes) for axis in (axes or range(len(x.axes))))
        return self._global_pool(node, x, reduced, bool(a.get("keepdims", 1)), "Average")

    def _flatten(self, node, x: Mapped) -> list:
        shape = self.static_shape(node.input[0])
        if None in x.axes[1:] and x.axes[0] is not None:  # size-1 virtual axes do not change the flat order
            shape = [d for d, k in zip(shape, x.axes) if k is not None]
            x = Mapped(x.tensor, tuple(k for k in x.axes if k is not None), x.feature_order, x.nonnegative)
        rank = len(x.axes)
        if x.axes == _identity(rank) or rank == 2 and x.axes == (0, 1):
            tensor = self.keras.layers.Flatten(name=self.name("flatten"))(x.tensor) if rank > 2 else x.tensor
            return [Mapped(tensor, (0, 1), x.feature_order, x.nonnegative)]
        if None in x.axes or None in shape[1:]:
            raise RosettaError("keras mapper: flatten of a tensor with virtual axes or unknown sizes")
        # ONNX flattens in logical order; Keras in its own. Record how they differ for the Dense that reads it.
        logical_index = np.arange(int(np.prod(shape[1:]))).reshape(shape[1:])
        keras_order = [logical for _, logical in sorted((k, l) for l, k in enumerate(x.axes) if l != 0)]
        order = logical_index.transpose([l - 1 for l in keras_order]).ravel()
        readers = self.consumers.get(node.output[0], [])
        if np.array_equal(order, np.arange(order.size)) or (readers and all(r in ("Gemm", "MatMul") for r in readers)):
            tensor = self.keras.layers.Flatten(name=self.name("flatten"))(x.tensor)
            return [Mapped(tensor, (0, 1), None if np.array_equal(order, np.arange(order.size)) else order, x.nonnegative)]
        x = self.materialize(x, _identity(rank))
        return [Mapped(self.keras.layers.Flatten(name=self.name("flatten"))(x.tensor), (0, 1), None, x.nonnegative)]

    def op_Flatten(self, node, a):
        if a.get("axis", 1) != 1:
            raise RosettaError("keras mapper: Flatten with axis != 1 is not supported")
        return self._flatten(node, self.values[node.input[0]])

    def op_Reshape(self, node, a):
        """A Reshape that keeps the batch on an axis of its own is a Reshape layer (the batch axis first in
        Keras); one that merges the batch with another axis (attention's heads) is keras.ops.reshape with -1
        for the merged axis, exact because ONNX requires the sizes to multiply to the same count."""
        target = self.shape_value(node.input[1], "Reshape shape")
        x = self.values[node.input[0]]
        source = self.dims(node.input[0])
        if node.input[1] in self.constants and source[0] == BatchDim(1) and x.axes[0] == 0 and (
                len(target) == 2 and target[0] in (0, -1) or (len(target) == 2 and target[1] == -1)):
            return self._flatten(node, x)
        if not a.get("allowzero", 0):
            target = [source[i] if not isinstance(d, BatchDim) and d == 0 else d for i, d in enumerate(target)]
        total_multiple, total = _product(source)
        if any(not isinstance(d, BatchDim) and d == -1 for d in target):
            known_multiple, known = _product([d for d in target if isinstance(d, BatchDim) or d != -1])
            if total_multiple is None or known_multiple is not None:
                missing = (total * (total_multiple or 1)) // (known * (known_multiple or 1))
            else:
                missing = BatchDim(total_multiple * total) // known  # the batch x the static sizes, over the known
            target = [missing if not isinstance(d, BatchDim) and d == -1 else d for d in target]
        target_multiple, _ = _product(target)
        batch = [i for i, d in enumerate(source) if isinstance(d, BatchDim)]
        merged = [i for i, d in enumerate(target) if isinstance(d, BatchDim)]
        if total_multiple is None or target_multiple is None:
            raise RosettaError("keras mapper: Reshape of a tensor without a batch axis, or into one without it")
        b, c = batch[0], merged[0]
        if total_multiple == target_multiple and _product(source[:b])[1] == _product(target[:c])[1] \
                and x.axes[b] is not None:
            # the axes before the batch and those after it are reshaped separately: a Reshape layer
            order = iter(range(1, len(source)))
            x = self.materialize(x, tuple(0 if i == b else None if k is None else next(order)
                                          for i, k in enumerate(x.axes)))
            kept = [int(d) for i, d in enumerate(target) if i != c]
            tensor = self.keras.layers.Reshape(kept, name=self.name("reshape"))(x.tensor)
            order = iter(range(1, len(target)))
            return [Mapped(tensor, tuple(0 if i == c else next(order) for i in range(len(target))),
                          batch_multiple=target_multiple)]
        x = self.logical_order(x)
        tensor = self.keras.ops.reshape(x.tensor, [-1 if isinstance(d, BatchDim) else int(d) for d in target])
        return [Mapped(tensor, _identity(len(target)), batch_multiple=target_multiple)]

    def _upsample(self, node, x: Mapped, scales: list, mode: str, coordinate_mode: str, nearest_mode: str) -> list:
        """Resize/Upsample by integer factors on the spatial axes: UpSamplingND (repeat, or bilinear in 2-D)."""
        op, rank = node.op_type, len(x.axes)
        factors = [int(round(s)) for s in scales[2:]]
        if len(scales) != rank or list(scales[:2]) != [1, 1] or not 3 <= rank <= 5 or \
                any(f < 1 or abs(s - f) > 1e-6 for s, f in zip(scales[2:], factors)):
            raise RosettaError(f"keras mapper: {op} is supported by integer factors on the spatial axes of a 3- to "
                               f"5-D tensor only (scales {list(scales)})")
        lengths = (self.shapes.get(node.input[0]) or [None] * rank)[2:]
        repeats = all(_nearest_is_repeat(coordinate_mode, nearest_mode, f, n) for f, n in zip(factors, lengths))
        if mode == "nearest" and repeats:
            interpolation = "nearest"
        elif mode == "linear" and rank == 4 and coordinate_mode in ("half_pixel", "pytorch_half_pixel"):
            interpolation = "bilinear"  # Keras' bilinear samples at half-pixel centres, as these modes do
        else:
            raise RosettaError(f"keras mapper: {op} mode={mode!r} with coordinate_transformation_mode="
                               f"{coordinate_mode!r} and nearest_mode={nearest_mode!r} is not supported: only "
                               f"nearest that repeats, or linear with half_pixel in 2-D")
        x = self.materialize(x, _channels_last(rank))
        options = {"interpolation": interpolation} if rank == 4 else {}
        layer = self.spatial_layer("UpSampling{}D", rank - 2, "upsample", factors if rank > 3 else factors[0], **options)
        return [Mapped(layer(x.tensor), x.axes, None, x.nonnegative)]

    def op_Resize(self, node, a):
        x = self.values[node.input[0]]
        rank = len(x.axes)
        scale_index = 1 if len(node.input) == 2 else 2  # opset 10: (X, scales); since 11: (X, roi, scales, sizes)
        scales = self.optional_constant(node, scale_index, "Resize scales")
        axes = [int(axis) % rank for axis in a.get("axes", range(rank))]
        if len(node.input) > 3 and node.input[3] in self.symbolic:  # sizes copying the batch from Shape(x)
            wanted, dims = self.shape_value(node.input[3], "Resize sizes"), self.dims(node.input[0])
            resized = [(axis, size) for axis, size in zip(axes, wanted) if size != dims[axis]]
            if any(isinstance(size, BatchDim) for _, size in resized):
                raise RosettaError("keras mapper: Resize of the batch axis is not supported")
            axes, sizes = [axis for axis, _ in resized], np.array([size for _, size in resized], np.int64)
        else:
            sizes = self.optional_constant(node, 3, "Resize sizes")
        if scales is None or scales.size == 0:
            if sizes is None or _text(a.get("keep_aspect_ratio_policy", "stretch")) != "stretch":
                raise RosettaError("keras mapper: Resize needs constant scales, or constant sizes with "
                                   "keep_aspect_ratio_policy='stretch'")
            source = self.static_shape(node.input[0])
            if any(source[axis] is None for axis in axes):
                raise RosettaError("keras mapper: Resize by sizes of an input of unknown size")
            scales = [size / source[axis] for size, axis in zip(sizes, axes)]
        full = [1.0] * rank
        for axis, scale in zip(axes, np.ravel(scales)):
            full[axis] = float(scale)
        if scale_index == 2 and _text(a.get("mode", "nearest")) == "linear" and \
                _text(a.get("coordinate_transformation_mode", "half_pixel")) == "align_corners":
            source = self.static_shape(node.input[0])
            if full[:2] != [1.0, 1.0] or not 3 <= rank <= 5 or None in source[2:]:
                raise RosettaError("keras mapper: Resize with align_corners is supported on the spatial axes of a 3- "
                                   "to 5-D tensor of known size only")
            lengths = [int(size) for size in sizes] if sizes is not None and sizes.size else None
            if lengths is not None:
                targets = {axis: size for axis, size in zip(axes, lengths)}
                lengths = [targets.get(axis, source[axis]) for axis in range(2, rank)]
            else:
                lengths = [int(math.floor(n * f)) for n, f in zip(source[2:], full[2:])]
            return [self._resize_linear_align_corners(x, source[2:], lengths)]
        if scale_index == 1:  # Resize-10 is Upsample-9 renamed: asymmetric sampling, nearest by floor
            return self._upsample(node, x, full, _text(a.get("mode", "nearest")), "asymmetric", "floor")
        return self._upsample(node, x, full, _text(a.get("mode", "nearest")),
                              _text(a.get("coordinate_transformation_mode", "half_pixel")),
                              _text(a.get("nearest_mode", "round_prefer_floor")))

    def _resize_linear_align_corners(self, x: Mapped, lengths: list, resized: list) -> Mapped:
        """Linear Resize with align_corners, one spatial axis at a time (linear interpolation is separable):
        output i reads input i * (n - 1) / (m - 1), interpolated between its two neighbours, which is a fixed
        (n, m) matrix: a Dense without bias on that axis, not trainable since ONNX's Resize has no weights."""
        x = self.materialize(x, _channels_last(len(x.axes)))
        tensor, rank = x.tensor, len(x.axes)
        for spatial, (n, m) in enumerate(zip(lengths, resized)):
            if n == m:
                continue  # align_corners maps each index to itself
            matrix = np.zeros((n, m), np.float64)
            for i in range(m):
                position = min(i * (n - 1) / (m - 1), n - 1) if m > 1 else 0.0
                low = int(math.floor(position))
                high, weight = min(low + 1, n - 1), position - low
                matrix[low, i] += 1 - weight
                matrix[high, i] += weight
            axis = 1 + spatial
            order = [k for k in range(1, rank) if k != axis] + [axis]
            tensor = self.keras.layers.Permute(order, name=self.name("permute"))(tensor)
            layer = self.keras.layers.Dense(m, use_bias=False, trainable=False, name=self.name("interpolate"))
            tensor = layer(tensor)
            layer.set_weights([matrix.astype(np.float32)])
            back = [order.index(k) + 1 for k in range(1, rank)]
            tensor = self.keras.layers.Permute(back, name=self.name("permute"))(tensor)
        return Mapped(tensor, x.axes, None, x.nonnegative)

    def op_Upsample(self, node, a):
        scales = a.get("scales")  # an attribute in opset 7, an input in opset 9
        if scales is None:
            scales = self.constant(node.input[1], "Upsample scales")
        if _text(a.get("mode", "nearest")) != "nearest":
            raise RosettaError("keras mapper: Upsample mode='linear' is not supported (its asymmetric sampling is "
                               "not Keras' bilinear)")
        return self._upsample(node, self.values[node.input[0]], [float(s) for s in np.ravel(scales)], "nearest",
                              "asymmetric", "floor")

    def _dense(self, x: Mapped, kernel: np.ndarray, bias) -> Mapped:
        """Dense acts on the Keras last axis: it must hold the ONNX last axis (features)."""
        if x.axes[-1] != max(k for k in x.axes if k is not None) or x.axes[0] != 0:
            x = self.materialize(x, _identity(len(x.axes)))
        if x.feature_order is not None:
            kernel = kernel[x.feature_order]  # rows follow the Keras feature order of a channels-last flatten
        layer = self.keras.layers.Dense(kernel.shape[1], use_bias=bias is not None, name=self.name("dense"))
        tensor = layer(x.tensor)
        layer.set_weights([kernel] + ([bias] if bias is not None else []))
        return Mapped(tensor, x.axes)

    def op_Gemm(self, node, a):
        if a.get("transA", 0):
            raise RosettaError("keras mapper: Gemm with transA=1 is not supported")
        weight = self.constant(node.input[1], "Gemm B")
        kernel = (weight.T if a.get("transB", 0) else weight) * a.get("alpha", 1.0)
        bias = None
        if len(node.input) > 2 and node.input[2]:
            bias = np.broadcast_to(self.constant(node.input[2], "Gemm C") * a.get("beta", 1.0), (kernel.shape[1],)).copy()
        return [self._dense(self.values[node.input[0]], kernel.astype(np.float32), bias)]

    def op_MatMul(self, node, a):
        if node.input[0] in self.values and node.input[1] in self.values:
            return [self._matmul_of_tensors(node)]
        if node.input[1] not in self.constants or self.constants[node.input[1]].ndim != 2:
            raise RosettaError("keras mapper: MatMul is supported by a constant 2-D weight only (a Dense layer)")
        bias = self.optional_constant(node, 2, "MatMul bias")  # a third input only from _fuse_matmul_bias
        return [self._dense(self.values[node.input[0]], self.constants[node.input[1]], bias)]

    def op_Gather(self, node, a):
        axis = a.get("axis", 0)
        if node.input[0] in self.constants:  # a lookup table: an embedding
            table = self.constants[node.input[0]]
            indices = self.values[node.input[1]]
            if axis != 0 or table.ndim != 2 or indices.axes != _identity(len(indices.axes)):
                raise RosettaError("keras mapper: Gather from a constant must be an embedding lookup (axis 0, 2-D table)")
            layer = self.keras.layers.Embedding(table.shape[0], table.shape[1], name=self.name("embedding"))
            tensor = layer(indices.tensor)
            layer.set_weights([table])
            return [Mapped(tensor, _identity(len(indices.axes) + 1))]
        # picking one index along an axis (e.g. the last time step): Cropping1D on Keras axis 1 of a 3-D tensor
        index = self.constant(node.input[1], "Gather indices")
        x = self.values[node.input[0]]
        if index.ndim != 0:
            raise RosettaError("keras mapper: Gather of a tensor by a non-scalar index is not supported")
        if len([k for k in x.axes if k is not None]) != 3 or x.axes[axis] is None or \
                x.tensor.shape[0] is not None:
            return [self._take(node, x, axis, int(index))]
        keras_axis = x.axes[axis]
        if keras_axis not in (1, 2):
            raise RosettaError("keras mapper: Gather along the batch axis is not supported")
        if keras_axis == 2:
            wanted = tuple({1: 2, 2: 1}.get(k, k) for k in x.axes)
            x = self.materialize(x, wanted)
        size = self.static_shape(node.input[0])[axis]
        i = int(index) % size
        cropped = self.keras.layers.Cropping1D((i, size - 1 - i), name=self.name("pick"))(x.tensor)
        features = self.static_shape(node.input[0])[[l for l, k in enumerate(x.axes) if k == 2][0]]
        tensor = self.keras.layers.Reshape((features,), name=self.name("reshape"))(cropped)
        remaining = [k for l, k in enumerate(x.axes) if l != axis]
        return [Mapped(tensor, tuple(None if k is None else (k if k < 1 else k - 1) for k in remaining))]

    def _take(self, node, x: Mapped, axis: int, index: int) -> Mapped:
        """One index along a (non-batch) axis, as keras.ops.take (attention's q, k, v from one tensor)."""
        dims = self.dims(node.input[0])
        if isinstance(dims[axis], BatchDim) or x.feature_order is not None:
            raise RosettaError("keras mapper: Gather along the batch axis, or of a channels-last flattened "
                               "tensor, is not supported")
        if not -dims[axis] <= index < dims[axis]:
            raise RosettaError("keras mapper: Gather index out of range")
        keras_axis = x.axes[axis]
        remaining = [k for i, k in enumerate(x.axes) if i != axis]
        if keras_axis is None:
            return Mapped(x.tensor, tuple(remaining), None, x.nonnegative)
        tensor = self.keras.ops.take(x.tensor, index % dims[axis], axis=keras_axis)
        return Mapped(tensor, tuple(None if k is None else k - (k > keras_axis) for k in remaining), None,
                      x.nonnegative)

    def _matmul_of_tensors(self, node) -> Mapped:
        """MatMul of two tensors (attention's scores and weighted values): keras.ops.matmul, which follows
        numpy's matmul broadcasting, as ONNX does; both operands in ONNX axis order."""
        first, second = (self.values[name] for name in node.input[:2])
        if first.feature_order is not None or second.feature_order is not None or \
                None in first.axes or None in second.axes:
            raise RosettaError("keras mapper: MatMul of two tensors with size-1 axes held virtually, or of a "
                               "channels-last flattened tensor, is not supported")
        first, second = self.logical_order(first), self.logical_order(second)
        if len(first.axes) != len(second.axes) or len(first.axes) < 2:
            raise RosettaError("keras mapper: MatMul of two tensors of different ranks is not supported")
        tensor = self.keras.ops.matmul(first.tensor, second.tensor)
        return Mapped(tensor, _identity(len(first.axes)))

    def op_Transpose(self, node, a):
        x = self.values[node.input[0]]
        perm = a.get("perm", list(reversed(range(len(x.axes)))))
        return [Mapped(x.tensor, tuple(x.axes[p] for p in perm), x.feature_order, x.nonnegative)]

    def _axes_argument(self, node, a, what: str) -> list:
        if "axes" in a:
            return list(a["axes"])
        return [int(v) for v in np.atleast_1d(self.constant(node.input[1], f"{what} axes"))]

    def op_Squeeze(self, node, a):
        x = self.values[node.input[0]]
        axes = sorted(ax % len(x.axes) for ax in self._axes_argument(node, a, "Squeeze"))
        if any(x.axes[ax] is not None for ax in axes):
            # dropping size-1 Keras axes keeps the element order: the others keep their relative order
            dropped = sorted(x.axes[ax] for ax in axes if x.axes[ax] is not None)
            shape = list(x.tensor.shape)
            if 0 in dropped or None in shape[1:]:
                tensor = self.keras.ops.squeeze(x.tensor, axis=tuple(dropped))
            else:
                kept = [d for k, d in enumerate(shape) if k not in dropped][1:]
                tensor = self.keras.layers.Reshape(kept, name=self.name("squeeze"))(x.tensor)
            renumber = lambda k: None if k is None else k - sum(d < k for d in dropped)  # noqa: E731
            return [Mapped(tensor, tuple(renumber(k) for i, k in enumerate(x.axes) if i not in axes))]
        return [Mapped(x.tensor, tuple(k for i, k in enumerate(x.axes) if i not in axes), x.feature_order, x.nonnegative)]

    def op_Unsqueeze(self, node, a):
        x = self.values[node.input[0]]
        axes = list(x.axes)
        rank = len(axes) + len(self._axes_argument(node, a, "Unsqueeze"))
        for ax in sorted(ax % rank for ax in self._axes_argument(node, a, "Unsqueeze")):
            axes.insert(ax, None)
        return [Mapped(x.tensor, tuple(axes), x.feature_order, x.nonnegative)]

    def op_GRU(self, node, a):
        if a.get("linear_before_reset", 0) != 1:
            raise RosettaError("keras mapper: GRU with linear_before_reset=0 (Keras' reset_after=True is =1)")
        if a.get("direction", b"forward") not in (b"forward", "forward") or a.get("layout", 0) != 0:
            raise RosettaError("keras mapper: only forward GRUs with layout=0 are supported")
        if len(node.input) > 4 and node.input[4] or len(node.input) > 5 and node.input[5] and \
                not self.is_zero(node.input[5]):
            raise RosettaError("keras mapper: GRU with sequence_lens or a non-zero initial state is not supported")
        x = self.materialize(self.values[node.input[0]], (1, 0, 2))  # ONNX (T, N, I) -> Keras (N, T, I)
        w = self.constant(node.input[1], "GRU W")[0]
        r = self.constant(node.input[2], "GRU R")[0]
        hidden = a["hidden_size"]
        b = self.constant(node.input[3], "GRU B")[0] if len(node.input) > 3 and node.input[3] else np.zeros(6 * hidden, np.float32)
        layer = self.keras.layers.GRU(hidden, return_sequences=True, return_state=True, reset_after=True,
                                      name=self.name("gru"))
        sequence, state = layer(x.tensor)
        # Keras splits kernels as (z, r, h): the ONNX gate order, so only transposes are needed.
        layer.set_weights([w.T, r.T, np.stack([b[: 3 * hidden], b[3 * hidden:]])])
        return [Mapped(sequence, (1, None, 0, 2)), Mapped(state, (None, 0, 1))]

    def op_LSTM(self, node, a):
        """keras.layers.LSTM per direction (Bidirectional for both) with the ONNX weights: gates reordered from
        ONNX's (i, o, f, c) to Keras' (i, f, c, o), the input and recurrent biases summed into Keras' one bias
        (they are only ever added). Y is (T, directions, N, H), Y_h and Y_c (directions, N, H)."""
        direction = _text(a.get("direction", "forward"))
        directions = 2 if direction == "bidirectional" else 1
        activations = [_text(f) for f in a.get("activations", [])]
        if a.get("layout", 0) != 0 or "clip" in a or a.get("input_forget", 0) or \
                activations not in ([], ["Sigmoid", "Tanh", "Tanh"] * directions) or "activation_alpha" in a:
            raise RosettaError("keras mapper: LSTM with layout=1, clip, input_forget or other activations than "
                               "(Sigmoid, Tanh, Tanh) is not supported")
        optional = lambda index: len(node.input) > index and node.input[index]  # noqa: E731
        if optional(4):
            raise RosettaError("keras mapper: LSTM with sequence_lens is not supported")
        if any(optional(index) and not self.is_zero(node.input[index]) for index in (5, 6, 7)):
            raise RosettaError("keras mapper: LSTM with a non-zero initial state or peepholes is not supported "
                               "(Keras' LSTM layer starts from zeros and has no peepholes)")
        hidden = a["hidden_size"]
        w, r = self.constant(node.input[1], "LSTM W"), self.constant(node.input[2], "LSTM R")
        b = self.constant(node.input[3], "LSTM B") if optional(3) else np.zeros((directions, 8 * hidden), np.float32)
        keras_gates = [0, 2, 3, 1]  # Keras' i, f, c, o among ONNX's i, o, f, c

        def weights(d: int) -> list:
            gates = lambda m: m.reshape((4, hidden) + m.shape[1:])[keras_gates].reshape((4 * hidden,) + m.shape[1:])  # noqa: E731
            return [gates(w[d]).T, gates(r[d]).T, gates(b[d][: 4 * hidden] + b[d][4 * hidden:])]

        x = self.materialize(self.values[node.input[0]], (1, 0, 2))  # ONNX (T, N, I) -> Keras (N, T, I)
        options = dict(return_sequences=True, return_state=True)
        if direction == "bidirectional":
            layer = self.keras.layers.Bidirectional(self.keras.layers.LSTM(hidden, **options), merge_mode=None,
                                                    name=self.name("lstm"))
            forward, backward, h_forward, c_forward, h_backward, c_backward = layer(x.tensor)
            layer.set_weights(weights(0) + weights(1))
            stack = lambda pair, axis: self.keras.ops.stack(pair, axis=axis)  # noqa: E731
            return [Mapped(stack([forward, backward], 2), (1, 2, 0, 3)),
                    Mapped(stack([h_forward, h_backward], 1), (1, 0, 2)),
                    Mapped(stack([c_forward, c_backward], 1), (1, 0, 2))]
        if direction not in ("forward", "reverse"):
            raise RosettaError(f"keras mapper: LSTM direction={direction!r} is not supported")
        layer = self.keras.layers.LSTM(hidden, go_backwards=direction == "reverse", name=self.name("lstm"), **options)
        sequence, h, c = layer(x.tensor)
        layer.set_weights(weights(0))
        if direction == "reverse":  # Keras gives the outputs in processing order; ONNX at their time step
            sequence = self.keras.ops.flip(sequence, axis=1)
        return [Mapped(sequence, (1, None, 0, 2)), Mapped(h, (None, 0, 1)), Mapped(c, (None, 0, 1))]

    # ---- graph ---------------------------------------------------------------------------------------
    def build(self):
        import onnx
        from onnx import numpy_helper

        keras = self.keras
        inferred = onnx.shape_inference.infer_shapes(self.model)
        for value in list(inferred.graph.value_info) + list(inferred.graph.input) + list(inferred.graph.output):
            dims = value.type.tensor_type.shape.dim
            self.shapes[value.name] = [d.dim_value if d.HasField("dim_value") else None for d in dims]
        self.constants = {init.name: numpy_helper.to_array(init) for init in self.model.graph.initializer}
        opsets = {("" if o.domain == "ai.onnx" else o.domain): o.version for o in self.model.opset_import}
        self.opsets = opsets
        nodes = _fold_constants(list(self.model.graph.node), self.constants, opsets)
        nodes = _fuse_patterns(nodes, self.constants, self.shapes, {value.name for value in self.model.graph.output})
        unsupported = sorted({node.op_type for node in nodes if not hasattr(self, f"op_{node.op_type}")})
        if unsupported:
            raise RosettaError(f"ONNX op {', '.join(unsupported)} cannot be converted to keras: rosetta's Keras "
                               f"mapper has no converter for {'it' if len(unsupported) == 1 else 'them'}")
        for node in nodes:
            for name in node.input:
                self.consumers.setdefault(name, []).append(node.op_type)
        for value in self.model.graph.output:
            self.consumers.setdefault(value.name, []).append("graph output")
        inputs = []
        for value in self.model.graph.input:
            if value.name in self.constants:
                continue
            shape = self.static_shape(value.name)
            dtype = onnx.helper.tensor_dtype_to_np_dtype(value.type.tensor_type.elem_type).name
            tensor = keras.Input(shape=tuple(shape[1:]), dtype=dtype, name=value.name)
            inputs.append(tensor)
            self.values[value.name] = Mapped(tensor, _identity(len(shape)), batch_multiple=1)
        for node in nodes:
            attributes = {attr.name: onnx.helper.get_attribute_value(attr) for attr in node.attribute}
            names = [name for name in node.input if name]
            if names and all(name in self.constants for name in names) and \
                    not _fold_constants([node], self.constants, opsets):
                continue  # its inputs became constants once the shapes they were computed from were known
            if any(name in self.symbolic for name in names):
                if not any(name in self.values for name in names):
                    for name, value in zip(node.output, self.evaluate_symbolic(node, attributes)):
                        if name:
                            self.store_symbolic(name, value)
                    continue
                if node.op_type not in _READS_SYMBOLIC:
                    raise RosettaError(f"keras mapper: {node.op_type} of a tensor and a value computed from the "
                                       f"run-time shape is not supported")
            tensors = [self.values[name] for name in names if name in self.values]
            handler = getattr(self, f"op_{node.op_type}")
            for name, mapped in zip(node.output, handler(node, attributes)):
                if name:
                    if mapped.batch_multiple is None:
                        mapped = replace(mapped, batch_multiple=tensors[0].batch_multiple if tensors else 1)
                    self.values[name] = mapped
        outputs = []
        for value in self.model.graph.output:
            mapped = self.values[value.name]
            if None in mapped.axes or mapped.feature_order is not None:
                raise RosettaError(f"keras mapper: output {value.name!r} would need a reshape the mapper does not make")
            outputs.append(self.materialize(mapped, _identity(len(mapped.axes))).tensor)
        return keras.Model(inputs=inputs, outputs=outputs if len(outputs) > 1 else outputs[0], name="rosetta")

    def tensor_map(self) -> dict[str, dict]:
        """{ONNX tensor: where the Keras model computes it}: the layer whose output it is, which of that layer's
        outputs, and how its axes (and a 2-D tensor's features) are ordered there. Recorded in the artifact's
        manifest (converter "tensors"), so that the converted model's intermediate values can be read in ONNX's
        layout (rosetta verify --locate). Tensors a layer does not output as they are (a constant, a batch merged into another axis)
        are left out."""
        found = {}
        for name, mapped in self.values.items():
            history = getattr(mapped.tensor, "_keras_history", None)
            if history is None or mapped.batch_multiple not in (None, 1) or name in self.constants:
                continue
            layer, _, index = history
            found[name] = {"layer": layer.name, "output": int(index), "axes": list(mapped.axes),
                           **({"feature_order": [int(i) for i in mapped.feature_order]}
                              if mapped.feature_order is not None else {})}
        return found


_RANDOM_OPS = {"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Multinomial", "Bernoulli"}


def _fold_constants(nodes: list, constants: dict, opsets: dict) -> list:
    """Evaluate every node whose inputs are all constants, adding its outputs to `constants` (e.g. a shared
    BatchNorm weight's Identity, or Pad's pads, which torch's exporter leaves as a ConstantOfShape/Concat/
    Slice/Cast chain); returns the nodes left to map."""
    from onnx import numpy_helper

    remaining = []
    for node in nodes:
        inputs = [name for name in node.input if name]
        if node.op_type in _RANDOM_OPS or not all(name in constants for name in inputs) or \
                (not inputs and node.op_type != "Constant"):
            remaining.append(node)
            continue
        if node.op_type == "Identity":
            results = [constants[inputs[0]]]
        elif node.op_type == "Constant" and node.attribute[0].name == "value":
            results = [numpy_helper.to_array(node.attribute[0].t)]
        else:
            from onnx.reference import ReferenceEvaluator

            try:
                results = ReferenceEvaluator(node, opsets=opsets).run(None, {name: constants[name] for name in inputs})
            except Exception:  # an op the reference evaluator lacks: left for the mapper to name
                remaining.append(node)
                continue
        for name, value in zip(node.output, results):
            if name:
                constants[name] = np.asarray(value)
    return remaining


@dataclass
class _GraphView:
    """Who makes and who reads each tensor, for recognising the multi-node patterns exporters write."""

    nodes: list
    constants: dict
    shapes: dict
    graph_outputs: set

    def __post_init__(self):
        self.producer = {name: node for node in self.nodes for name in node.output if name}
        self.readers = {}
        for node in self.nodes:
            for name in dict.fromkeys(node.input):
                if name:
                    self.readers.setdefault(name, []).append(node)

    def made_by(self, name: str, op_type: str):
        node = self.producer.get(name)
        return node if node is not None and node.op_type == op_type else None

    def sole_reader(self, name: str, op_type: str):
        """The one node reading `name`, if it is an `op_type` and `name` is not also a graph output."""
        readers = self.readers.get(name, [])
        if len(readers) == 1 and readers[0].op_type == op_type and name not in self.graph_outputs:
            return readers[0]
        return None

    def scalar(self, name: str):
        value = self.constants.get(name)
        return float(value.reshape(())) if value is not None and value.size == 1 else None

    @staticmethod
    def other_input(node, name: str):
        """The other operand of a binary node reading `name`."""
        if node is None or len(node.input) != 2 or name not in node.input:
            return None
        return node.input[1] if node.input[0] == name else node.input[0]


def _reduce_mean_axes(view: _GraphView, node):
    """The (sorted, non-negative) axes of a keepdims ReduceMean, or None."""
    import onnx

    attributes = {attr.name: onnx.helper.get_attribute_value(attr) for attr in node.attribute}
    rank = len(view.shapes.get(node.input[0]) or [])
    axes = attributes.get("axes")
    if axes is None and len(node.input) > 1 and node.input[1] in view.constants:
        axes = [int(v) for v in np.atleast_1d(view.constants[node.input[1]])]
    if not attributes.get("keepdims", 1) or not axes or not rank:
        return None
    return sorted(axis % rank for axis in axes)


def _match_layer_normalization(view: _GraphView, sqrt):
    """(x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps) [* scale] [+ bias], with the means over the trailing
    axes: torch's LayerNorm below opset 17, and the usual hand-written form."""
    import onnx

    if sqrt.op_type != "Sqrt":
        return None
    epsilon, variance, add_epsilon = 0.0, sqrt.input[0], view.made_by(sqrt.input[0], "Add")
    if add_epsilon is not None:
        for first, second in (add_epsilon.input, add_epsilon.input[::-1]):
            if view.scalar(second) is not None and view.sole_reader(first, "Add") is add_epsilon:
                epsilon, variance = view.scalar(second), first
        if variance == sqrt.input[0]:
            return None
    reduce_variance = view.made_by(variance, "ReduceMean")
    if reduce_variance is None or view.sole_reader(variance, "Add" if add_epsilon else "Sqrt") is None \
            or view.sole_reader(sqrt.input[0], "Sqrt") is not sqrt:
        return None
    square = view.producer.get(reduce_variance.input[0])
    if square is None or view.sole_reader(reduce_variance.input[0], "ReduceMean") is not reduce_variance or not (
            square.op_type == "Mul" and square.input[0] == square.input[1]
            or square.op_type == "Pow" and view.scalar(square.input[1]) == 2.0):
        return None
    centered = square.input[0]
    subtract = view.made_by(centered, "Sub")
    reduce_mean = view.made_by(subtract.input[1], "ReduceMean") if subtract is not None else None
    divide = view.sole_reader(sqrt.output[0], "Div")
    if reduce_mean is None or reduce_mean.input[0] != subtract.input[0] or divide is None \
            or list(divide.input) != [centered, sqrt.output[0]] \
            or view.sole_reader(subtract.input[1], "Sub") is not subtract or centered in view.graph_outputs \
            or {id(n) for n in view.readers.get(centered, [])} != {id(square), id(divide)}:
        return None
    x = subtract.input[0]
    shape = view.shapes.get(x) or []
    axes = _reduce_mean_axes(view, reduce_mean)
    trailing = list(range(len(shape) - len(axes or []), len(shape)))
    if not axes or axes != _reduce_mean_axes(view, reduce_variance) or axes != trailing:
        return None
    matched = [reduce_mean, subtract, square, reduce_variance] + ([add_epsilon] if add_epsilon else []) + [sqrt, divide]
    output, inputs = divide.output[0], [x, "", ""]
    normalized_shape = shape[axes[0]:]
    for slot, op_type in ((1, "Mul"), (2, "Add")):  # the affine part, when its parameters are constants
        affine = view.sole_reader(output, op_type)
        value = view.constants.get(view.other_input(affine, output)) if affine is not None else None
        parameter = _as_parameter(value, normalized_shape) if value is not None and None not in normalized_shape else None
        if parameter is None:
            continue
        name = f"{affine.output[0]}/{'scale' if slot == 1 else 'bias'}"
        view.constants[name] = parameter
        inputs[slot], output = name, affine.output[0]
        matched.append(affine)
    return matched, onnx.helper.make_node("LayerNormalization", inputs, [output], axis=axes[0], epsilon=epsilon)


def _match_gelu(view: _GraphView, erf):
    """x * 0.5 * (1 + erf(x / sqrt(2))), multiplied in any of the orders exporters write (torch: Div, Erf,
    Add, Mul by x, Mul by 0.5)."""
    import onnx

    if erf.op_type != "Erf" or view.sole_reader(erf.input[0], "Erf") is not erf:
        return None
    scaled, x = view.producer.get(erf.input[0]), None
    if scaled is not None and scaled.op_type == "Div" and \
            math.isclose(view.scalar(scaled.input[1]) or 0, math.sqrt(2), rel_tol=1e-6):
        x = scaled.input[0]
    elif scaled is not None and scaled.op_type == "Mul":
        for first, second in (scaled.input, scaled.input[::-1]):
            if math.isclose(view.scalar(second) or 0, math.sqrt(0.5), rel_tol=1e-6):
                x = first
    plus_one = view.sole_reader(erf.output[0], "Add")
    if x is None or plus_one is None or view.scalar(view.other_input(plus_one, erf.output[0])) != 1.0:
        return None
    product = view.sole_reader(plus_one.output[0], "Mul")
    factor = view.other_input(product, plus_one.output[0])
    matched = [scaled, erf, plus_one, product]
    if factor is None:
        return None
    if factor == x or view.scalar(factor) == 0.5:  # (1 + erf) * x then * 0.5, or (1 + erf) * 0.5 then * x
        last = view.sole_reader(product.output[0], "Mul")
        other = view.other_input(last, product.output[0])
        if other is None or (view.scalar(other) != 0.5 if factor == x else other != x):
            return None
        matched.append(last)
    else:  # (x * 0.5) * (1 + erf)
        half = view.made_by(factor, "Mul")
        if half is None or view.sole_reader(factor, "Mul") is not product or \
                view.scalar(view.other_input(half, x) or "") != 0.5:
            return None
        matched.insert(0, half)
    return matched, onnx.helper.make_node("Gelu", [x], [matched[-1].output[0]])


def _match_matmul_bias(view: _GraphView, matmul):
    """MatMul by a constant matrix then Add of a constant vector (torch's Linear on inputs of rank > 2):
    one Dense with a trainable bias, given to MatMul as a third input."""
    import onnx

    if matmul.op_type != "MatMul" or matmul.input[1] not in view.constants or view.constants[matmul.input[1]].ndim != 2:
        return None
    add = view.sole_reader(matmul.output[0], "Add")
    bias = view.constants.get(view.other_input(add, matmul.output[0])) if add is not None else None
    units = view.constants[matmul.input[1]].shape[1]
    if bias is None or bias.size != units or bias.shape[-1] != units:
        return None
    name = f"{add.output[0]}/bias"
    view.constants[name] = bias.reshape(units).astype(np.float32)
    return [matmul, add], onnx.helper.make_node("MatMul", [matmul.input[0], matmul.input[1], name], [add.output[0]])


def _below_zero(view: _GraphView, name: str):
    """(indices, [nodes]) when `name` is Less(indices, 0), the indices possibly Cast first (exact for the sign)."""
    less = view.made_by(name, "Less")
    if less is None or view.scalar(less.input[1]) != 0:
        return None
    cast = view.made_by(less.input[0], "Cast")
    return (cast.input[0], [cast, less]) if cast is not None else (less.input[0], [less])


def _match_index_wrap(view: _GraphView, gather):
    """Gather(table, where(i < 0, i + n, i)) with n the gathered axis' size, written as Where or as tf2onnx's
    Cast(i < 0) * (i + n) + Cast(not(i < 0)) * i: ONNX's Gather already reads a negative index from the end
    (and so does Keras' Embedding), so the pattern is dropped and Gather reads i."""
    import onnx

    if gather.op_type != "Gather" or gather.input[0] not in view.constants:
        return None
    axis = next((onnx.helper.get_attribute_value(x) for x in gather.attribute if x.name == "axis"), 0)
    size = view.constants[gather.input[0]].shape[axis]

    def plus_size(name: str, indices: str):
        add = view.made_by(name, "Add")
        return add if add is not None and view.other_input(add, indices) is not None and \
            view.scalar(view.other_input(add, indices)) == size else None

    wrapped, found = gather.input[1], None
    where = view.made_by(wrapped, "Where")
    if where is not None:
        below = _below_zero(view, where.input[0])
        if below is not None and where.input[2] == below[0] and plus_size(where.input[1], below[0]) is not None:
            found = below[1] + [view.producer[where.input[1]], where]
    total = view.made_by(wrapped, "Add")
    for first, second in ([total.input, total.input[::-1]] if total is not None else []):
        negative, positive = view.made_by(first, "Mul"), view.made_by(second, "Mul")
        if found is not None or negative is None or positive is None:
            continue
        for cast_name, added in (negative.input, negative.input[::-1]):
            cast = view.made_by(cast_name, "Cast")
            below = _below_zero(view, cast.input[0]) if cast is not None else None
            add = plus_size(added, below[0]) if below is not None else None
            kept = view.other_input(positive, below[0]) if below is not None else None
            keep_cast = view.made_by(kept, "Cast") if kept is not None else None
            negation = view.made_by(keep_cast.input[0], "Not") if keep_cast is not None else None
            if add is not None and negation is not None and negation.input[0] == cast.input[0]:
                found = below[1] + [cast, add, negative, negation, keep_cast, positive, total]
                break
    if found is None:
        return None
    matched = list({id(n): n for n in found}.values())
    inside = {id(n) for n in matched} | {id(gather)}
    for node in matched:  # only the pattern reads what it computes
        for output in node.output:
            if output in view.graph_outputs or any(id(r) not in inside for r in view.readers.get(output, [])):
                return None
    replacement = onnx.helper.make_node("Gather", [gather.input[0], _below_zero_indices(view, matched)],
                                        list(gather.output), axis=axis)
    return matched + [gather], replacement


def _below_zero_indices(view: _GraphView, matched: list) -> str:
    less = next(node for node in matched if node.op_type == "Less")
    cast = view.made_by(less.input[0], "Cast")
    return cast.input[0] if cast is not None else less.input[0]


def _fuse_patterns(nodes: list, constants: dict, shapes: dict, graph_outputs: set) -> list:
    """Replace each LayerNorm, GELU and MatMul + bias pattern by one node, placed where its last node was
    (its inputs are made before its first node; only its last node's output is read outside it)."""
    for match in (_match_layer_normalization, _match_gelu, _match_matmul_bias, _match_index_wrap):
        view = _GraphView(nodes, constants, shapes, graph_outputs)
        position = {id(node): index for index, node in enumerate(nodes)}
        dropped, replacements = set(), {}
        for node in nodes:
            found = None if id(node) in dropped else match(view, node)
            if found is None or any(id(m) in dropped for m in found[0]):
                continue
            matched, replacement = found
            dropped.update(id(m) for m in matched)
            replacements[id(max(matched, key=lambda m: position[id(m)]))] = replacement
        nodes = [replacements.get(id(node), node) for node in nodes
                 if id(node) in replacements or id(node) not in dropped]
    return nodes


def onnx_to_keras_model(model, keras, tensors: dict | None = None):
    """The Keras model of an ONNX model; `tensors`, if given, receives KerasGraphBuilder.tensor_map()."""
    from rosetta.convert.onnx.rewrites import drop_zero_initial_states

    builder = KerasGraphBuilder(drop_zero_initial_states(model), keras)
    built = builder.build()
    if tensors is not None:
        tensors.update(builder.tensor_map())
    return built


def convert(source: Path, staging: Path, options: dict) -> Manifest:
    import onnx

    from rosetta.frameworks.keras import import_keras

    keras = import_keras()
    previous = Manifest.read(source)
    from rosetta.convert.onnx.rewrites import constant_reshape_shapes

    tensors: dict = {}
    model = onnx_to_keras_model(constant_reshape_shapes(onnx.load(str(previous.artifact_path(source)))), keras, tensors)
    target = Path(staging) / ARTIFACT
    model.save(str(target))
    trainable = int(sum(np.prod(w.shape) for w in model.trainable_weights))
    return Manifest(
        artifact=ARTIFACT, format="keras", source=previous.source,
        converter={"name": "rosetta.convert.onnx.to_keras", "version": keras.__version__,
                   "framework_version": f"{keras.__version__} ({keras.backend.backend()} backend)",
                   "options": {}, "trainable_parameters": trainable, "tensors": tensors},
        inputs=previous.inputs, outputs=previous.outputs, sha256=sha256_of(target), opset=previous.opset,
    )
