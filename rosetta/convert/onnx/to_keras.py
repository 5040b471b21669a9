"""ONNX -> Keras 3: rosetta's own layer mapper, producing a trainable `.keras` file of built-in layers only.

Why our own: onnx2tf's output holds its weights as constants (untrainable by design), onnx2keras has no GRU
and mishandles Dropout, nobuco is tied to Keras 2. The mapper covers the ops of the reference models
(Conv, Relu, MaxPool, Flatten/Reshape, Gemm/MatMul, Add, GlobalAveragePool/ReduceMean, BatchNormalization,
Gather as embedding or as a time-step pick, GRU with linear_before_reset=1, Transpose, Squeeze/Unsqueeze,
Dropout, Identity, Sigmoid/Tanh/Softmax); any other op is an error naming it.

Layouts. Keras on CPU convolves channels-last, and Keras tensors always keep the batch on axis 0. Each ONNX
tensor is tracked as a Keras tensor plus `axes`: for each ONNX (logical) axis, the Keras axis that holds
it, or None for a size-1 axis that has no Keras axis. So an NCHW tensor lives as NHWC with axes (0, 3, 1, 2),
a Transpose only rewrites `axes` (no layer), and a Permute layer is inserted only where an op needs a
particular order. Flattening a channels-last tensor gives features in (h, w, c) order where the ONNX graph
has (c, h, w): when only Dense layers read the flat tensor, their kernel rows are permuted instead of the
data (`feature_order`), otherwise the tensor is permuted back before flattening.

Weights: Conv kernels OIHW -> HWIO, with explicit ZeroPadding2D when ONNX pads are not what "same" means;
Gemm kernels transposed as transB says; GRU kernels (z, r, h in both ONNX and Keras) transposed, input and
recurrent biases stacked as Keras' reset_after=True expects. BatchNorm's ONNX momentum is Keras' momentum.
"""

from __future__ import annotations

from dataclasses import dataclass, field
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


def _identity(rank: int) -> tuple:
    return tuple(range(rank))


NCHW_AS_NHWC = (0, 3, 1, 2)


@dataclass
class KerasGraphBuilder:
    model: object  # onnx ModelProto
    keras: object
    values: dict = field(default_factory=dict)  # ONNX name -> Mapped
    constants: dict = field(default_factory=dict)  # ONNX name -> np.ndarray
    shapes: dict = field(default_factory=dict)  # ONNX name -> static shape (None for unknown dims)
    consumers: dict = field(default_factory=dict)  # ONNX name -> [op types reading it]
    counter: int = 0

    # ---- helpers -------------------------------------------------------------------------------------
    def name(self, op: str) -> str:
        self.counter += 1
        return f"{op.lower()}_{self.counter}"

    def materialize(self, mapped: Mapped, wanted: tuple) -> Mapped:
        """The same ONNX tensor with its Keras axes in the order `wanted` (same virtual axes)."""
        if mapped.axes == wanted:
            return mapped
        if [a is None for a in mapped.axes] != [w is None for w in wanted]:
            raise RosettaError(f"keras mapper: cannot move between layouts {mapped.axes} and {wanted}")
        if mapped.feature_order is not None:
            raise RosettaError("keras mapper: a channels-last flattened tensor is used by an op other than Dense")
        real = [(w, a) for w, a in zip(wanted, mapped.axes) if w is not None]
        if dict(real).get(0) != 0:
            raise RosettaError("keras mapper: a transpose moves the batch axis; Keras keeps the batch first")
        source_of = dict(real)  # new keras position -> old keras position
        permutation = tuple(source_of[p] for p in range(1, len(real)))
        tensor = self.keras.layers.Permute(permutation, name=self.name("permute"))(mapped.tensor)
        return Mapped(tensor, wanted, None, mapped.nonnegative)

    def static_shape(self, name: str) -> list:
        shape = self.shapes.get(name)
        if shape is None:
            raise RosettaError(f"keras mapper: the shape of {name!r} is unknown (run ONNX shape inference)")
        return shape

    def constant(self, name: str, what: str) -> np.ndarray:
        if name not in self.constants:
            raise RosettaError(f"keras mapper: {what} ({name!r}) must be a constant or initializer")
        return self.constants[name]

    # ---- ops -----------------------------------------------------------------------------------------
    def op_Identity(self, node, a):
        return [self.values[node.input[0]]]

    def op_Dropout(self, node, a):
        rate = a.get("ratio", 0.5)
        if len(node.input) > 1 and node.input[1]:
            rate = float(self.constant(node.input[1], "Dropout ratio"))
        x = self.values[node.input[0]]
        return [Mapped(self.keras.layers.Dropout(rate, name=self.name("dropout"))(x.tensor), x.axes, x.feature_order)]

    def op_Relu(self, node, a):
        x = self.values[node.input[0]]
        return [Mapped(self.keras.layers.ReLU(name=self.name("relu"))(x.tensor), x.axes, x.feature_order, True)]

    def _activation(self, node, function: str):
        x = self.values[node.input[0]]
        return [Mapped(self.keras.layers.Activation(function, name=self.name(function))(x.tensor), x.axes, x.feature_order)]

    def op_Sigmoid(self, node, a):
        return self._activation(node, "sigmoid")

    def op_Tanh(self, node, a):
        return self._activation(node, "tanh")

    def op_Softmax(self, node, a):
        x = self.values[node.input[0]]
        axis = x.axes[a.get("axis", -1)]
        return [Mapped(self.keras.layers.Softmax(axis=axis, name=self.name("softmax"))(x.tensor), x.axes)]

    def op_Add(self, node, a):
        if any(name in self.constants for name in node.input):
            raise RosettaError("keras mapper: Add with a constant operand is not supported")
        first = self.values[node.input[0]]
        second = self.materialize(self.values[node.input[1]], first.axes)
        tensor = self.keras.layers.Add(name=self.name("add"))([first.tensor, second.tensor])
        return [Mapped(tensor, first.axes, None, first.nonnegative and second.nonnegative)]

    def _explicit_padding(self, x: Mapped, pads: list, kernel: list, strides: list) -> tuple[Mapped, str]:
        """ONNX pads [top, left, bottom, right] -> 'same' where equal, else ZeroPadding2D + 'valid'."""
        top, left, bottom, right = pads
        if not any(pads):
            return x, "valid"
        same = all(s == 1 for s in strides) and all(k % 2 == 1 for k in kernel) and \
            top == bottom == kernel[0] // 2 and left == right == kernel[1] // 2
        if same:
            return x, "same"
        tensor = self.keras.layers.ZeroPadding2D(((top, bottom), (left, right)), name=self.name("pad"))(x.tensor)
        return Mapped(tensor, x.axes, None, x.nonnegative), "valid"

    def op_Conv(self, node, a):
        x = self.materialize(self.values[node.input[0]], NCHW_AS_NHWC)
        weight = self.constant(node.input[1], "Conv weight")
        bias = self.constant(node.input[2], "Conv bias") if len(node.input) > 2 and node.input[2] else None
        if weight.ndim != 4 or a.get("group", 1) != 1:
            raise RosettaError("keras mapper: only 2-D convolutions with group=1 are supported")
        if a.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
            raise RosettaError("keras mapper: Conv auto_pad is not supported (export with explicit pads)")
        kernel = list(weight.shape[2:])
        strides = a.get("strides", [1, 1])
        x, padding = self._explicit_padding(x, a.get("pads", [0, 0, 0, 0]), kernel, strides)
        layer = self.keras.layers.Conv2D(weight.shape[0], kernel, strides=strides, padding=padding,
                                         dilation_rate=a.get("dilations", [1, 1]), use_bias=bias is not None,
                                         name=self.name("conv"))
        tensor = layer(x.tensor)
        layer.set_weights([weight.transpose(2, 3, 1, 0)] + ([bias] if bias is not None else []))  # OIHW -> HWIO
        return [Mapped(tensor, NCHW_AS_NHWC)]

    def op_MaxPool(self, node, a):
        x = self.materialize(self.values[node.input[0]], NCHW_AS_NHWC)
        kernel, strides = a["kernel_shape"], a.get("strides", [1, 1])
        if a.get("ceil_mode", 0) or any(d != 1 for d in a.get("dilations", [1, 1])):
            raise RosettaError("keras mapper: MaxPool with ceil_mode or dilations is not supported")
        pads = a.get("pads", [0, 0, 0, 0])
        if any(pads) and not x.nonnegative:
            # ONNX pads MaxPool with -inf; ZeroPadding2D pads with 0, equal only for inputs known to be >= 0.
            raise RosettaError("keras mapper: padded MaxPool on an input not known to be non-negative")
        x, padding = self._explicit_padding(x, pads, kernel, strides)
        if padding == "same":  # Keras' 'same' pooling pads only bottom/right for stride 1; be explicit
            x, padding = Mapped(self.keras.layers.ZeroPadding2D(((pads[0], pads[2]), (pads[1], pads[3])),
                                                                name=self.name("pad"))(x.tensor), x.axes, None, True), "valid"
        tensor = self.keras.layers.MaxPooling2D(kernel, strides=strides, padding=padding, name=self.name("maxpool"))(x.tensor)
        return [Mapped(tensor, NCHW_AS_NHWC, None, x.nonnegative)]

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

    def _global_average(self, x: Mapped, keepdims: bool) -> list:
        x = self.materialize(x, NCHW_AS_NHWC)
        tensor = self.keras.layers.GlobalAveragePooling2D(keepdims=keepdims, name=self.name("gap"))(x.tensor)
        return [Mapped(tensor, NCHW_AS_NHWC if keepdims else (0, 1), None, x.nonnegative)]

    def op_GlobalAveragePool(self, node, a):
        return self._global_average(self.values[node.input[0]], keepdims=True)

    def op_ReduceMean(self, node, a):
        axes = a.get("axes")
        if axes is None and len(node.input) > 1:
            axes = [int(v) for v in np.atleast_1d(self.constant(node.input[1], "ReduceMean axes"))]
        x = self.values[node.input[0]]
        if len(x.axes) != 4 or sorted(ax % 4 for ax in (axes or [])) != [2, 3]:
            raise RosettaError("keras mapper: ReduceMean is supported over the spatial axes of a 4-D tensor only")
        return self._global_average(x, keepdims=bool(a.get("keepdims", 1)))

    def _flatten(self, node, x: Mapped) -> list:
        rank = len(x.axes)
        shape = self.static_shape(node.input[0])
        if x.axes == _identity(rank) or rank == 2:
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
        target = [int(v) for v in self.constant(node.input[1], "Reshape shape")]
        x = self.values[node.input[0]]
        if len(target) == 2 and target[0] in (0, -1) or (len(target) == 2 and target[1] == -1):
            return self._flatten(node, x)
        x = self.materialize(x, _identity(len(x.axes)))
        source = self.static_shape(node.input[0])
        dims = [source[i] if d == 0 else d for i, d in enumerate(target)][1:]
        tensor = self.keras.layers.Reshape(dims, name=self.name("reshape"))(x.tensor)
        return [Mapped(tensor, _identity(len(target)))]

    def _dense(self, x: Mapped, kernel: np.ndarray, bias) -> Mapped:
        if x.axes not in ((0, 1),):
            raise RosettaError("keras mapper: Gemm/MatMul input must be 2-D (batch, features)")
        if x.feature_order is not None:
            kernel = kernel[x.feature_order]  # rows follow the Keras feature order of a channels-last flatten
        layer = self.keras.layers.Dense(kernel.shape[1], use_bias=bias is not None, name=self.name("dense"))
        tensor = layer(x.tensor)
        layer.set_weights([kernel] + ([bias] if bias is not None else []))
        return Mapped(tensor, (0, 1))

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
        return [self._dense(self.values[node.input[0]], self.constant(node.input[1], "MatMul B"), None)]

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
        if index.ndim != 0 or len([k for k in x.axes if k is not None]) != 3:
            raise RosettaError("keras mapper: Gather of a scalar index is supported on 3-D tensors only")
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
            x = self.materialize(x, _identity(len(x.axes))) if None not in x.axes else x
            kept_shape = [d for i, d in enumerate(self.static_shape(node.input[0])) if i not in axes][1:]
            tensor = self.keras.layers.Reshape(kept_shape, name=self.name("squeeze"))(x.tensor)
            return [Mapped(tensor, _identity(len(x.axes) - len(axes)))]
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
        if len(node.input) > 4 and any(node.input[4:]):
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
        unsupported = sorted({node.op_type for node in self.model.graph.node
                              if node.op_type != "Constant" and not hasattr(self, f"op_{node.op_type}")})
        if unsupported:
            raise RosettaError(f"ONNX op {', '.join(unsupported)} cannot be converted to keras: rosetta's Keras "
                               f"mapper has no converter for {'it' if len(unsupported) == 1 else 'them'}")
        for node in self.model.graph.node:
            for name in node.input:
                self.consumers.setdefault(name, []).append(node.op_type)
        inputs = []
        for value in self.model.graph.input:
            if value.name in self.constants:
                continue
            shape = self.static_shape(value.name)
            dtype = onnx.helper.tensor_dtype_to_np_dtype(value.type.tensor_type.elem_type).name
            tensor = keras.Input(shape=tuple(shape[1:]), dtype=dtype, name=value.name)
            inputs.append(tensor)
            self.values[value.name] = Mapped(tensor, _identity(len(shape)))
        for node in self.model.graph.node:
            attributes = {attr.name: onnx.helper.get_attribute_value(attr) for attr in node.attribute}
            if node.op_type == "Constant":
                self.constants[node.output[0]] = numpy_helper.to_array(attributes["value"])
                continue
            if node.op_type == "Identity" and node.input[0] in self.constants:  # e.g. a shared BatchNorm weight
                self.constants[node.output[0]] = self.constants[node.input[0]]
                continue
            handler = getattr(self, f"op_{node.op_type}")
            for name, mapped in zip(node.output, handler(node, attributes)):
                if name:
                    self.values[name] = mapped
        outputs = []
        for value in self.model.graph.output:
            mapped = self.values[value.name]
            if None in mapped.axes or mapped.feature_order is not None:
                raise RosettaError(f"keras mapper: output {value.name!r} would need a reshape the mapper does not make")
            outputs.append(self.materialize(mapped, _identity(len(mapped.axes))).tensor)
        return keras.Model(inputs=inputs, outputs=outputs if len(outputs) > 1 else outputs[0], name="rosetta")


def onnx_to_keras_model(model, keras):
    from rosetta.convert.onnx.rewrites import drop_zero_initial_states

    return KerasGraphBuilder(drop_zero_initial_states(model), keras).build()


def convert(source: Path, staging: Path, options: dict) -> Manifest:
    import onnx

    from rosetta.frameworks.keras import import_keras

    keras = import_keras()
    previous = Manifest.read(source)
    from rosetta.convert.onnx.rewrites import constant_reshape_shapes

    model = onnx_to_keras_model(constant_reshape_shapes(onnx.load(str(previous.artifact_path(source)))), keras)
    target = Path(staging) / ARTIFACT
    model.save(str(target))
    trainable = int(sum(np.prod(w.shape) for w in model.trainable_weights))
    return Manifest(
        artifact=ARTIFACT, format="keras", source=previous.source,
        converter={"name": "rosetta.convert.onnx.to_keras", "version": keras.__version__,
                   "framework_version": f"{keras.__version__} ({keras.backend.backend()} backend)",
                   "options": {}, "trainable_parameters": trainable},
        inputs=previous.inputs, outputs=previous.outputs, sha256=sha256_of(target), opset=previous.opset,
    )
