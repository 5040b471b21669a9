"""What the op converters of the Keras mapper share: each ONNX tensor as a Keras tensor with its layout
(`Mapped`), sizes known only as multiples of the batch (`BatchDim`) and tensors of one value whose shape holds
the batch (`Filled`), and `MappingContext`, the state of one mapping: values, constants, static and symbolic
shapes, who reads each tensor, the model's opsets, the layer-name counter and the batch-axis rule."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from rosetta.errors import RosettaError


@dataclass
class Mapped:
    """An ONNX tensor as a Keras tensor: `axes[i]` is the Keras axis of ONNX axis i (None: virtual size 1)."""

    tensor: object
    axes: tuple
    feature_order: np.ndarray | None = None  # 2-D only: Keras feature j is ONNX feature feature_order[j]
    nonnegative: bool = False  # known >= 0 (ReLU output): zero padding equals -inf padding for MaxPool
    batch_multiple: int | None = None  # the Keras axis of unknown size holds this many times the batch (None:
    # as the op's first tensor input, the batch-axis rule of MappingContext.define)


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
    run-time shape): the zero initial states torch and tf2onnx build for recurrent layers; or a constant repeated
    along the batch (Expand of a constant: ViT's class token)."""

    value: np.ndarray  # 0-d, of the tensor's element type; or a constant of the shape's rank, broadcast to it
    shape: list  # int or BatchDim per axis


MAX_INDEX = 2 ** 31 - 1  # "to the end" of a Slice, for an axis of any size Keras holds


def has_batch(values) -> bool:
    return any(isinstance(v, BatchDim) for v in np.ravel(np.asarray(values, dtype=object)))


def product(dims) -> tuple:
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


def as_parameter(value: np.ndarray, shape: list):
    """A constant broadcast to `shape` (leading size-1 axes dropped), or None when it does not broadcast so."""
    value = np.asarray(value)
    while value.ndim > len(shape) and value.shape[0] == 1:
        value = value[0]
    try:
        return np.broadcast_to(value, shape).astype(np.float32)
    except ValueError:
        return None


@dataclass
class MappingContext:
    """One ONNX model being mapped to Keras layers: what every op converter reads and adds to."""

    model: object  # onnx ModelProto
    keras: object
    values: dict = field(default_factory=dict)  # ONNX name -> Mapped
    constants: dict = field(default_factory=dict)  # ONNX name -> np.ndarray
    shapes: dict = field(default_factory=dict)  # ONNX name -> static shape (None for unknown dims)
    consumers: dict = field(default_factory=dict)  # ONNX name -> [op types reading it]
    symbolic: dict = field(default_factory=dict)  # ONNX name -> object array holding BatchDims, or Filled
    opsets: dict = field(default_factory=dict)  # domain ("" for ai.onnx) -> version
    fused_from: dict = field(default_factory=dict)  # id(fused node) -> the ONNX nodes it replaced, in order
    counter: int = 0

    @property
    def opset(self) -> int:
        return self.opsets.get("", 1)

    def name(self, op: str) -> str:
        self.counter += 1
        return f"{op.lower()}{self.counter}"  # no "_": Keras auto-names its ops (keras.ops.reshape) "reshape_4"

    def spatial_layer(self, kind: str, spatial: int, short_name: str, *args, **kwargs):
        """keras.layers.<kind> for 1, 2 or 3 spatial axes: ('Conv{}D', 2) is Conv2D."""
        if spatial not in (1, 2, 3):
            raise RosettaError(f"keras mapper: {kind.format('N')} over {spatial} spatial axes is not supported")
        return getattr(self.keras.layers, kind.format(spatial))(*args, name=self.name(short_name), **kwargs)

    def define(self, name: str, mapped: Mapped, inputs: list) -> None:
        """Record an op's output. The batch-axis rule: a tensor's axis of unknown size holds as many batches
        as its op's first tensor input's, unless the op set `batch_multiple` (a reshape that merged the batch
        with another axis); tensors made from constants alone hold one batch."""
        if mapped.batch_multiple is None:
            mapped = replace(mapped, batch_multiple=inputs[0].batch_multiple if inputs else 1)
        self.values[name] = mapped

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

    def symbolic_input(self, name: str):
        return self.constants[name] if name in self.constants else self.symbolic[name]

    def store_symbolic(self, name: str, value) -> None:
        """A symbolic result becomes a constant (and later nodes fold) once it no longer holds the batch size."""
        if isinstance(value, Filled):
            if not has_batch(value.shape):
                self.constants[name] = np.full([int(d) for d in value.shape], value.value)
                return
        elif not has_batch(value):
            self.constants[name] = np.asarray(value).astype(np.int64)
            return
        self.symbolic[name] = value
