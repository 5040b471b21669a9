"""The float64 reference of an MXNet symbol (its block cast to float64), checked node by node before it is
believed (frameworks.reference_check): the float32 symbol runs once with every node's output, and each operator
node is run again alone, as a one-node symbol, in float64 on the float32 values of its inputs (parameters and
auxiliary states from the .params file, made float64)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from rosetta.frameworks.reference_check import NodeCheck, ReferenceCheck, local_ulps


def check_float64_symbol(mx, symbol_file: Path, params_file: Path, input_names: list[str], arrays: list,
                         context) -> ReferenceCheck:
    """Check every operator node of the symbol in `symbol_file` on the float32 inputs `arrays`."""
    check = ReferenceCheck(implementation=f"MXNet {mx.__version__} in float64 (cast)", against="MXNet in float32")
    graph = json.loads(Path(symbol_file).read_text())
    nodes = graph["nodes"]
    internals = mx.sym.load(str(symbol_file)).get_internals()
    outputs = internals.list_outputs()
    # internals list every node's outputs in node order: a variable as its name, an operator as NAME_output(N)
    entries, position = {}, 0
    for index, node in enumerate(nodes):
        count = 1 if node["op"] == "null" else _outputs_of(node, outputs, position)
        for k in range(count):
            entries[(index, k)] = outputs[position + k]
        position += count
    operators = [name for (index, _), name in entries.items() if nodes[index]["op"] != "null"]
    block = mx.gluon.SymbolBlock(mx.sym.Group([internals[name] for name in operators]),
                                 [mx.sym.var(name) for name in input_names])
    block.collect_params().load(str(params_file), ctx=context, allow_missing=True, ignore_extra=True)
    values32 = {name: value.asnumpy() for name, value in zip(operators, _listed(block(*arrays)))}
    saved = {key.split(":", 1)[-1]: value.asnumpy() for key, value in mx.nd.load(str(params_file)).items()}
    feeds = {name: np.asarray(array.asnumpy()) for name, array in zip(input_names, arrays)}
    for index, node in enumerate(nodes):
        if node["op"] == "null":
            continue
        local_inputs = []
        for source, output, _ in node["inputs"]:
            name = entries.get((source, output), "")
            value = values32.get(name, feeds.get(name, saved.get(name)))
            local_inputs.append(None if value is None else np.asarray(value, dtype=np.float64))
        produced = [entries[key] for key in entries if key[0] == index]
        if any(value is None for value in local_inputs) or not produced:
            check.unchecked += 1
            continue
        try:
            local = _run_alone(mx, node, local_inputs, context)
        except Exception:  # noqa: BLE001 - a node that cannot run on its own: counted, not judged
            check.unchecked += 1
            continue
        pairs = [(a, values32[name]) for a, name in zip(local, produced) if values32[name].dtype.kind == "f"]
        if not pairs:
            continue
        record = NodeCheck(node["name"], node["op"], max(local_ulps(a, b) for a, b in pairs), "mxnet")
        check.nodes += 1
        if record.ulps > check.bound:
            record.by = "parted"
            check.parted = check.parted or record
        elif check.worst is None or record.ulps > check.worst.ulps:
            check.worst = record
    return check


def _outputs_of(node: dict, outputs: list[str], position: int) -> int:
    """How many outputs an operator node has in the internals list: NAME_output, NAME_output0, 1, ..., or named
    outputs such as an RNN's NAME_output and NAME_state_output."""
    name, count = node["name"], 0
    while position + count < len(outputs) and outputs[position + count].startswith(f"{name}_") \
            and outputs[position + count].endswith(("output", *(f"output{k}" for k in range(count + 1)))):
        count += 1
    return max(count, 1)


def _run_alone(mx, node: dict, inputs: list[np.ndarray], context) -> list[np.ndarray]:
    """The operator node alone, every input a variable fed `inputs` in float64."""
    names = [f"input_{k}" for k in range(len(inputs))]
    graph = {"nodes": [{"op": "null", "name": name, "inputs": []} for name in names] +
             [{**node, "inputs": [[k, 0, 0] for k in range(len(inputs))]}],
             "arg_nodes": list(range(len(inputs))), "heads": [[len(inputs), 0, 0]],
             "attrs": {"mxnet_version": ["int", 10901]}}
    symbol = mx.sym.load_json(json.dumps(graph))
    count = len(symbol.list_outputs())
    if count > 1:
        graph["heads"] = [[len(inputs), k, 0] for k in range(count)]
        symbol = mx.sym.load_json(json.dumps(graph))
    block = mx.gluon.SymbolBlock(symbol, [mx.sym.var(name) for name in names])
    result = block(*[mx.nd.array(value, ctx=context, dtype="float64") for value in inputs])
    return [value.asnumpy() for value in _listed(result)]


def _listed(value) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]
