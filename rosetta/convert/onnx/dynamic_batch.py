"""Shapes and values an exporter computes at run time only because the batch size is unknown, made constants:
semantics-preserving rewrites for graphs whose only free axis is the batch (rosetta's signatures: N x static).

Each rewrite reads the graph's own values, run in ONNX Runtime at two batch sizes on zeros (only shapes matter
for what it rewrites): what is equal at both does not depend on the batch, and what differs on one axis only
is the batch's. A graph with another free axis is left as it is.

- `constant_reshape_targets`: a Reshape whose target is computed at run time (tf2onnx's Einsum and Tensordot:
  Shape -> Gather -> ReduceProd / Max -> Concat) and whose output shape is fixed but for the batch's axis gets
  that shape as a constant target, -1 on the batch's axis (Reshape infers it from the element count, so every
  batch size gives what the original gives); one whose output shape does not change with the batch, that shape
  as it is. ONNX Runtime's symbolic shape inference cannot follow such
  targets (ReduceProd of a Gather of a Shape), so rewrites.symbolic_reshape_shapes cannot either.
- `batch_independent_constants`: a tensor computed from the inputs' shapes alone (Shape, Size, and anything
  computed from them and constants only: Range, Equal, Where, Log, Min, ...) whose value is the same at both
  batch sizes is an initializer. Hugging Face's T5 computes its relative position buckets that way from the
  sequence lengths (Log, Min, Where on Range), BART its positions (Range, Expand).
- `static_output_shapes`: the graph outputs' declared shapes, measured: an axis of the same size at both batch
  sizes gets that size. torch.onnx declares the output of a Resize to the input's size (DeepLabV3, FCN) with
  symbolic axes ('Resizeout_dim_2'), so a target that changes the layout (onnx2tf: channels-last) could not be
  told from one that does not, and the output came back unturned."""

from __future__ import annotations

import numpy as np

BATCH_SIZES = (2, 3)  # two sizes tell an axis the batch scales from a fixed one
# ops whose output is not a function of their inputs' values, or that hold subgraphs: never folded
_NOT_FOLDED = ("RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Multinomial", "Bernoulli",
               "Loop", "If", "Scan", "SequenceMap")


def constant_reshape_targets(model):
    """The model with each run-time Reshape target that only the batch makes run-time a constant."""
    from onnx import numpy_helper

    from rosetta.convert.onnx.rewrites import remove_dead_nodes

    initialized = {init.name for init in model.graph.initializer}
    computed = [node for node in model.graph.node if node.op_type == "Reshape" and node.input[1] not in initialized
                and not _is_constant_node(model, node.input[1])]
    runs = _measured(model, [node.output[0] for node in computed], shapes=True) if computed else None
    if runs is None:
        return model
    for node in computed:
        first, second = (run[node.output[0]] for run in runs)
        target = _fixed_shape(first, second)
        if target is None:
            continue
        name = f"{node.output[0]}_constant_shape"
        model.graph.initializer.append(numpy_helper.from_array(target, name))
        node.input[1] = name
    return remove_dead_nodes(model)


def _fixed_shape(first: np.ndarray, second: np.ndarray) -> np.ndarray | None:
    """The constant Reshape target of an output whose shape was measured at two batch sizes, or None where the
    shape is not fixed but for one axis (or has an empty axis, which -1 cannot stand beside). An output whose
    shape does not change with the batch at all (a table of position biases reshaped to a size read from a
    non-batch axis, or a target behind an Identity, Swin-V2's) gets its measured shape as it is."""
    if first.shape != second.shape or first.ndim != 1 or np.any(first <= 0) or np.any(second <= 0):
        return None
    differing = np.flatnonzero(first != second)
    if len(differing) > 1:
        return None
    target = first.astype(np.int64)
    if len(differing):
        target[differing[0]] = -1
    return target


def _is_constant_node(model, name: str) -> bool:
    return any(node.op_type == "Constant" and name in node.output for node in model.graph.node)


def _only_batch_free(value) -> bool:
    """A graph input whose axes are all static but the first."""
    dims = value.type.tensor_type.shape.dim
    return len(dims) > 0 and all(dim.HasField("dim_value") and dim.dim_value > 0 for dim in dims[1:])


def _measured(model, names: list[str], shapes: bool = False) -> list[dict] | None:
    """{name: value (or its shape, with `shapes`)} of the named tensors at each of BATCH_SIZES, run in ONNX
    Runtime on zeros; None where the batch is not the graph's only free axis, or the graph does not run."""
    import onnx
    from onnx import helper

    initialized = {init.name for init in model.graph.initializer}
    inputs = [value for value in model.graph.input if value.name not in initialized]
    if not inputs or not all(_only_batch_free(value) for value in inputs):
        return None
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    probed = {}
    outputs = {output.name for output in model.graph.output}
    for index, name in enumerate(dict.fromkeys(names)):  # each an extra graph output (its Shape's, with `shapes`)
        probed[name] = f"rosetta_measured_{index}" if shapes else name
        if shapes:
            probe.graph.node.append(helper.make_node("Shape", [name], [probed[name]]))
        if shapes or name not in outputs:
            probe.graph.output.append(helper.make_empty_tensor_value_info(probed[name]))
    runs = [_run_shapes(probe, inputs, batch) for batch in BATCH_SIZES]
    if any(run is None for run in runs):
        return None
    return [{name: np.asarray(run[probed[name]]) for name in probed} for run in runs]


def _run_shapes(probe, inputs, batch: int) -> dict | None:
    """The probe's outputs in ONNX Runtime on inputs of batch size `batch` (zeros: only shapes matter here)."""
    import onnxruntime as ort
    from onnx import helper

    feeds = {}
    for value in inputs:
        tensor = value.type.tensor_type
        dims = [batch] + [dim.dim_value for dim in tensor.shape.dim[1:]]
        feeds[value.name] = np.zeros(dims, helper.tensor_dtype_to_np_dtype(tensor.elem_type))
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.intra_op_num_threads = 1
    try:
        session = ort.InferenceSession(probe.SerializeToString(), options, providers=["CPUExecutionProvider"])
        names = [output.name for output in session.get_outputs()]
        return dict(zip(names, session.run(names, feeds)))
    except Exception:  # noqa: BLE001 - a graph ONNX Runtime cannot run here is left as it is
        return None




def batch_independent_constants(model):
    """The model with each tensor computed from input shapes only, and equal at two batch sizes, an initializer."""
    from onnx import numpy_helper

    from rosetta.convert.onnx.rewrites import remove_dead_nodes

    initialized = {init.name for init in model.graph.initializer}
    known = set(initialized) | {""}
    derived = set()
    for node in model.graph.node:
        if node.op_type in _NOT_FOLDED:
            continue
        if node.op_type == "Constant":
            known.update(node.output)
        elif node.op_type in ("Shape", "Size") or \
                (node.input and all(name in known or name in derived for name in node.input)
                 and any(name in derived for name in node.input)):
            derived.update(node.output)
    graph_outputs = {output.name for output in model.graph.output}
    runs = _measured(model, sorted(derived - graph_outputs)) if derived - graph_outputs else None
    if runs is None:
        return model
    folded = {}
    for name in derived - graph_outputs:
        first, second = (run[name] for run in runs)
        if first.shape == second.shape and first.dtype == second.dtype and np.array_equal(first, second):
            folded[name] = first
    # each reader that is not itself folded takes the constant; what computed it then falls away
    used = set()
    for node in model.graph.node:
        if all(output in folded for output in node.output):
            continue
        for position, name in enumerate(node.input):
            if name in folded:
                node.input[position] = f"{name}_batch_independent"
                used.add(name)
    if not used:
        return model
    model.graph.initializer.extend(numpy_helper.from_array(folded[name], f"{name}_batch_independent")
                                   for name in sorted(used))
    return remove_dead_nodes(model)


def static_output_shapes(model):
    """The model with each graph output's axes that do not vary with the batch size declared static."""
    runs = _measured(model, [output.name for output in model.graph.output], shapes=True)
    if runs is None:
        return model
    for output in model.graph.output:
        first, second = (run[output.name] for run in runs)
        dims = output.type.tensor_type.shape.dim
        if len(dims) != len(first):
            continue
        for dim, size, other in zip(dims, first.tolist(), second.tolist()):
            if size == other and not dim.HasField("dim_value"):
                dim.Clear()
                dim.dim_value = int(size)
    return model
