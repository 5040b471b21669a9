"""The float64 reference of a Keras model (rebuilt with float64 layers: frameworks.keras.in_precision), checked
layer by layer before it is believed (frameworks.reference_check): the float32 model's graph is walked as Keras
runs a functional model (Function._run_through_graph), and every layer or keras.ops operation is run again by
the float64 model's operation of the same name on the float32 call's inputs, made float64. A model without a
functional graph (a subclassed one) is not checked piece by piece; the output-level guard still applies."""

from __future__ import annotations

import numpy as np

from rosetta.frameworks.reference_check import NodeCheck, ReferenceCheck, local_ulps


def check_float64_model(keras, model32, model64, arrays: list[np.ndarray]) -> ReferenceCheck:
    """Walk `model32` on `arrays`, checking each operation against its float64 twin in `model64`."""
    check = ReferenceCheck(implementation=f"Keras {keras.__version__} ({keras.backend.backend()}) in float64 "
                                          "(float64 layers)", against="Keras in float32", unit="layer")
    graph32, graph64 = _functional(model32), _functional(model64)
    if graph32 is None or graph64 is None:
        check.unchecked = 1
        return check
    twins = {op.name: op for op in graph64.operations}
    ops, tree = keras.ops, keras.tree
    values = {id(x): ops.convert_to_tensor(a) for x, a in zip(graph32.inputs, arrays)}
    for depth in sorted(graph32._nodes_by_depth, reverse=True):
        for node in graph32._nodes_by_depth[depth]:
            if not node.operation or node.is_input or any(id(x) not in values for x in node.input_tensors):
                continue
            args, kwargs = node.arguments.fill_in(values)
            outputs = tree.flatten(node.operation(*args, **kwargs))
            for x, y in zip(node.outputs, outputs):
                values[id(x)] = y
            twin = twins.get(node.operation.name)
            if twin is None:
                check.unchecked += 1
                continue
            wide = tree.map_structure(lambda v: _float64(ops, v), (args, kwargs))
            try:
                local = tree.flatten(twin(*wide[0], **wide[1]))
            except Exception:  # noqa: BLE001 - an operation that cannot run on its own: counted, not judged
                check.unchecked += 1
                continue
            pairs = [(np.asarray(ops.convert_to_numpy(a)), np.asarray(ops.convert_to_numpy(b)))
                     for a, b in zip(local, outputs)]
            pairs = [(a, b) for a, b in pairs if b.dtype.kind == "f"]
            if not pairs:
                continue
            record = NodeCheck(node.operation.name, type(node.operation).__name__,
                               max(local_ulps(a, b) for a, b in pairs), "keras")
            check.nodes += 1
            if record.ulps > check.bound:
                record.by = "parted"
                check.parted = check.parted or record
            elif check.worst is None or record.ulps > check.worst.ulps:
                check.worst = record
    return check


def _functional(model):
    """The functional graph a model runs (a Sequential's inner one), or None for a subclassed model."""
    graph = getattr(model, "_functional", None) or model
    return graph if hasattr(graph, "_nodes_by_depth") and hasattr(graph, "operations") else None


def _float64(ops, value):
    if hasattr(value, "dtype") and "float" in str(value.dtype):
        return ops.cast(value, "float64")
    return value
