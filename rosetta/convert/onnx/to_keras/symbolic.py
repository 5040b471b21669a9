"""Shapes read at run time, followed at conversion time.

Shape -> Gather/Slice/Concat/Mul... -> Reshape, and ConstantOfShape/Expand zero states: every size is known
except the batch, held as a BatchDim (a multiple of it), so the arithmetic folds to constants or to a Reshape
with -1 for the one axis that holds the batch. A node whose inputs are all such values (or constants) is
evaluated here instead of mapped to a layer: ONNX's shape operators on numpy object arrays."""

from __future__ import annotations

import numpy as np

from rosetta.convert.onnx.to_keras.context import MAX_INDEX, BatchDim, Filled, MappingContext, has_batch
from rosetta.errors import RosettaError
from rosetta.frameworks.onnx_graph import onnx_slice

_INT_TYPES = (2, 3, 4, 5, 6, 7, 12, 13)  # onnx.TensorProto's (u)int8/16/32/64


def whole_axis(start: int, end: int, step: int) -> bool:
    """Whether Slice bounds take a whole axis, whatever its size (the batch axis, of unknown size)."""
    return step == 1 and start in (0, -(2 ** 63)) and end >= MAX_INDEX


def slice_parameters(values: list) -> tuple:
    """(starts, ends, axes, steps) of a Slice from its inputs 1..4 as arrays (None where omitted)."""
    starts, ends = (np.ravel(v).astype(np.int64) for v in values[:2])
    axes = np.ravel(values[2]).astype(np.int64) if len(values) > 2 and values[2] is not None else np.arange(len(starts))
    steps = np.ravel(values[3]).astype(np.int64) if len(values) > 3 and values[3] is not None \
        else np.ones(len(starts), np.int64)
    return starts, ends, axes, steps


def _arithmetic(op: str):
    def compute(x, y):
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
    return compute


def evaluate_symbolic(context: MappingContext, node, attributes: dict) -> list:
    """A node computing on shapes (ints and BatchDims) or on Filled tensors, evaluated here: the result is a
    constant once no batch size is left in it. Its inputs are constants or symbolic values."""
    op, a = node.op_type, attributes
    inputs = [context.symbolic_input(name) if name else None for name in node.input]
    first = inputs[0]
    if any(isinstance(v, Filled) for v in inputs):
        try:
            if isinstance(first, Filled):
                return [evaluate_filled(context, node, a, first)]
            if op != "Expand":
                raise RosettaError(f"keras mapper: {op} of a filled tensor of run-time shape is not supported")
        except RosettaError:
            evaluated = evaluated_per_sample(context, node, inputs)
            if evaluated is None:
                raise
            return evaluated
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
        index = [slice(None)] * data.ndim
        for start, end, axis, step in zip(*slice_parameters(inputs[1:5])):
            index[int(axis) % data.ndim] = onnx_slice(int(start), int(end), int(step), data.shape[int(axis)])
        return [data[tuple(index)]]
    if op in ("Mul", "Div", "Add", "Sub"):
        other = np.asarray(inputs[1], dtype=object)
        if any(isinstance(v, (float, np.floating)) for v in np.ravel(np.concatenate([np.ravel(data), np.ravel(other)]))):
            raise RosettaError(f"keras mapper: {op} of the batch size and a float is not supported")
        return [np.frompyfunc(_arithmetic(op), 2, 1)(data, other)]
    if op == "ConstantOfShape":
        value = a.get("value")
        from onnx import numpy_helper

        fill = numpy_helper.to_array(value).reshape(()) if value is not None else np.zeros((), np.float32)
        return [Filled(fill, list(data.ravel()))]
    if op == "Expand":
        value, shape = inputs[0], list(np.ravel(np.asarray(inputs[1], dtype=object)))
        value = np.asarray(value)
        if isinstance(inputs[0], Filled) or len(shape) < value.ndim:
            raise RosettaError("keras mapper: Expand to a run-time shape is supported for a constant only")
        if value.size == 1:
            return [Filled(value.reshape(()), shape)]
        value = value.reshape((1,) * (len(shape) - value.ndim) + value.shape)
        if any(isinstance(d, BatchDim) and size != 1 for d, size in zip(shape, value.shape)):
            raise RosettaError("keras mapper: Expand of a constant along the run-time batch axis is supported "
                               "from a size of 1 only")
        # numpy-style both ways, as Expand: the batch where the shape holds it, else the larger of the two sizes
        static = np.broadcast_shapes(value.shape, tuple(1 if isinstance(d, BatchDim) else int(d) for d in shape))
        return [Filled(value, [d if isinstance(d, BatchDim) else size for d, size in zip(shape, static)])]
    raise RosettaError(f"keras mapper: {op} on a shape holding the run-time batch size is not supported")


def evaluated_per_sample(context: MappingContext, node, inputs: list) -> list | None:
    """The outputs of a node whose inputs are tensors repeated along the batch (Filled, of one batch) and
    constants, where the node computes each sample alone: evaluated (ONNX's reference evaluator) at a batch of 1
    and of 2, each output is the same at both (a constant) or the batch-1 output repeated along one axis (a
    Filled with the batch there). ConViT's relative positions, a constant expanded to the batch, then projected
    by a MatMul and a softmax. None where that does not hold (the node mixes samples, a size is another multiple
    of the batch, an input is a shape holding it): the caller's refusal stands."""
    from rosetta.frameworks.onnx_graph import fold_constants

    replaced = list(context.fused_from.get(id(node), [node]))  # a fused node: the ONNX nodes it replaced
    read = {name for each in replaced for name in each.input if name in context.constants}  # their own weights
    runs = []
    for batch in (1, 2):
        values = {name: context.constants[name] for name in read}
        for name, value in zip(node.input, inputs):
            if not name:
                continue
            if isinstance(value, Filled):
                if any(isinstance(d, BatchDim) and d.multiple != 1 for d in value.shape):
                    return None
                values[name] = np.array(np.broadcast_to(value.value, [batch if isinstance(d, BatchDim) else int(d)
                                                                      for d in value.shape]))
            elif has_batch(value):
                return None
            else:
                values[name] = np.asarray(value)
        if fold_constants(replaced, values, context.opsets):
            return None  # the evaluator cannot run it
        runs.append([values.get(name) for name in node.output])
    results = []
    for one, two in zip(*runs):
        if one is None or two is None:
            results.append(None)
        elif one.shape == two.shape and _same(one, two):
            results.append(Filled(one, list(one.shape)))  # no batch in it: stored as a constant
        else:
            axes = [i for i, (m, n) in enumerate(zip(one.shape, two.shape)) if m != n]
            if (one.ndim != two.ndim or len(axes) != 1 or one.shape[axes[0]] != 1 or two.shape[axes[0]] != 2
                    or not _same(np.broadcast_to(one, two.shape), two)):
                return None
            results.append(Filled(one, [BatchDim(1) if i == axes[0] else size for i, size in enumerate(one.shape)]))
    return results


def _same(one: np.ndarray, two: np.ndarray) -> bool:
    """Equal, floats to their rounding (a batched MatMul may round each sample differently at another batch)."""
    if np.issubdtype(one.dtype, np.floating):
        scale = float(np.max(np.abs(one[np.isfinite(one)]), initial=0.0))
        return bool(np.allclose(one, two, rtol=1e-5, atol=1e-6 * scale, equal_nan=True))
    return bool(np.array_equal(one, two))


def evaluate_filled(context: MappingContext, node, a: dict, filled: Filled):
    """Ops that move a filled tensor around without changing its value: only its shape is followed; its Shape
    (BART's zeros of the input's shape, measured again) is that shape, and a Resize of one value (DETR's pixel
    mask of ones, resized to each feature map) is that value at the new size."""
    op, shape = node.op_type, list(filled.shape)
    if op == "Shape":
        return np.asarray(shape[slice(a.get("start", 0), a.get("end"))], dtype=object)
    if op == "Expand":  # the value broadcast along new axes: only the shape changes, broadcast both ways
        target = list(np.ravel(np.asarray(context.symbolic_input(node.input[1]) if node.input[1] in context.symbolic
                                          else context.constant(node.input[1], "Expand shape"), dtype=object)))
        rank = max(len(shape), len(target))
        shape, target = [1] * (rank - len(shape)) + shape, [1] * (rank - len(target)) + target
        if any(not (x == 1 or y == 1 or x == y) for x, y in zip(shape, target)):
            raise RosettaError("keras mapper: Expand of a filled tensor to a shape it does not broadcast to")
        value = filled.value.reshape((1,) * (rank - filled.value.ndim) + filled.value.shape) if filled.value.ndim \
            else filled.value
        return Filled(value, [y if not isinstance(x, BatchDim) and int(x) == 1 else x for x, y in zip(shape, target)])
    if op == "Resize" and not filled.value.ndim and not a.get("axes"):  # one value: resampled, the same value
        sizes = context.symbolic_input(node.input[3]) if len(node.input) > 3 and node.input[3] in context.symbolic \
            else context.optional_constant(node, 3, "Resize sizes")
        if sizes is not None:
            return Filled(filled.value, list(np.ravel(np.asarray(sizes, dtype=object))))
        scales = np.ravel(context.optional_constant(node, 2, "Resize scales"))
        if any(isinstance(d, BatchDim) and float(k) != 1 for d, k in zip(shape, scales)):
            raise RosettaError("keras mapper: Resize of the batch axis of a filled tensor is not supported")
        return Filled(filled.value, [d if isinstance(d, BatchDim) else int(np.floor(int(d) * float(k)))
                                     for d, k in zip(shape, scales)])
    if filled.value.ndim and op not in ("Identity", "Cast"):
        raise RosettaError(f"keras mapper: {op} of a constant expanded to the run-time batch is not supported")
    if op in ("Identity", "Cast"):
        dtype = filled.value.dtype if op == "Identity" else \
            __import__("onnx").helper.tensor_dtype_to_np_dtype(a["to"])
        return Filled(filled.value.astype(dtype), shape)
    if op in ("Unsqueeze", "Squeeze"):
        axes = a.get("axes") or [int(v) for v in np.ravel(context.constant(node.input[1], f"{op} axes"))]
        if op == "Squeeze":
            return Filled(filled.value, [d for i, d in enumerate(shape) if i not in {x % len(shape) for x in axes}])
        for axis in sorted(x % (len(shape) + len(axes)) for x in axes):
            shape.insert(axis, 1)
        return Filled(filled.value, shape)
    if op == "Transpose":
        return Filled(filled.value, [shape[p] for p in a.get("perm", list(reversed(range(len(shape)))))])
    if op == "Slice":
        bounds = [context.constant(n, "Slice bounds") for n in node.input[1:3]]
        optional = [context.optional_constant(node, index, f"Slice {what}") for index, what in ((3, "axes"), (4, "steps"))]
        for start, end, axis, step in zip(*slice_parameters(bounds + optional)):
            axis = int(axis) % len(shape)
            if isinstance(shape[axis], BatchDim):
                if not whole_axis(int(start), int(end), int(step)):
                    raise RosettaError("keras mapper: Slice of the batch axis is not supported")
                continue
            shape[axis] = len(range(shape[axis])[onnx_slice(int(start), int(end), int(step), shape[axis])])
        return Filled(filled.value, shape)
    raise RosettaError(f"keras mapper: {op} of a filled tensor of run-time shape is not supported")
