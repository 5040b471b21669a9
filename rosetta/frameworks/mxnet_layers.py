"""Every operator node of an MXNet symbol as it runs (frameworks.layers.Layer), and one node run alone: jobs of
the MXNet worker."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import numpy as np

from rosetta.frameworks.layers import Layer

KINDS = {"Convolution": "conv", "FullyConnected": "dense", "BatchNorm": "batchnorm", "LayerNorm": "layernorm",
         "Pooling": "pool", "Activation": "activation", "relu": "activation", "LeakyReLU": "activation",
         "softmax": "activation", "Flatten": "flatten", "flatten": "flatten", "Reshape": "reshape",
         "reshape": "reshape", "Embedding": "embedding", "Dropout": "dropout", "elemwise_add": "add",
         "broadcast_add": "add", "Concat": "concat", "RNN": "rnn"}


def _tuple(text, default=()) -> list:
    if text is None:
        return list(default)
    value = ast.literal_eval(text) if isinstance(text, str) else text
    return list(value) if isinstance(value, (tuple, list)) else [value]


def _upstream_variables(nodes: list, index: int) -> list[str]:
    """The variables a node reads through reshapes and concatenations, in order."""
    node = nodes[index]
    if node["op"] == "null":
        return [node["name"]]
    return [name for source, _, _ in node["inputs"] for name in _upstream_variables(nodes, source)]


def trace_job(argument: dict) -> dict:
    """Job: {"layers": [Layer as JSON]} of every operator node of the MXNet artifact in argument["folder"], run
    once with every node's output, on argument["feeds"] in argument["precision"]."""
    from rosetta.frameworks.mxnet import PARAMS_FILE, SYMBOL_FILE, import_mxnet
    from rosetta.frameworks.mxnet_reference import _outputs_of
    from rosetta.manifest import Manifest

    mx = import_mxnet()
    folder = Path(argument["folder"])
    manifest = Manifest.read(folder)
    artifact = manifest.artifact_path(folder)
    precision = argument["precision"]
    names = manifest.converter.get("input_names") or [entry["name"] for entry in manifest.inputs]
    graph = json.loads((artifact / SYMBOL_FILE).read_text())
    internals = mx.sym.load(str(artifact / SYMBOL_FILE)).get_internals()
    listed = internals.list_outputs()
    entries, position = {}, 0
    for index, node in enumerate(graph["nodes"]):
        count = 1 if node["op"] == "null" else _outputs_of(node, listed, position)
        for k in range(count):
            entries[(index, k)] = listed[position + k]
        position += count
    operators = [(index, node) for index, node in enumerate(graph["nodes"]) if node["op"] != "null"]
    wanted = [entries[(index, 0)] for index, _ in operators]
    block = mx.gluon.SymbolBlock(mx.sym.Group([internals[name] for name in wanted]), [mx.sym.var(n) for n in names])
    block.collect_params().load(str(artifact / PARAMS_FILE), allow_missing=True, ignore_extra=True)
    if precision != "float32":
        block.cast(precision)
    feeds = [np.asarray(argument["feeds"][entry["name"]]) for entry in manifest.inputs]
    outputs = block(*[mx.nd.array(a, dtype=precision) for a in feeds])
    values = dict(zip(wanted, [o.asnumpy() for o in (outputs if isinstance(outputs, (list, tuple)) else [outputs])]))
    values.update({name: a.astype(precision) for name, a in zip(names, feeds)})
    saved = {key.split(":", 1)[-1]: value.asnumpy() for key, value in mx.nd.load(str(artifact / PARAMS_FILE)).items()}
    layers = []
    for index, node in operators:
        sources = [entries.get((source, output), "") for source, output, _ in node["inputs"]]
        data = [values[name] for name in sources if name in values]
        params = {name: saved[name] for name in sources if name in saved}
        if node["op"] == "RNN":  # Gluon's fused RNN reads its weights through a concatenation of reshapes
            params = {name: saved[name] for name in _upstream_variables(graph["nodes"], node["inputs"][1][0])
                      if name in saved}
        kind, canonical, config = describe(node, sources, params)
        layers.append(Layer(node["name"], kind, node["op"], values[entries[(index, 0)]], data[:1], canonical,
                            config).to_json())
    return {"layers": layers}


def describe(node: dict, sources: list[str], params: dict) -> tuple[str, dict, dict]:
    """(kind, canonical parameters, canonical configuration) of a symbol node (frameworks.layers)."""
    op, attrs = node["op"], node.get("attrs", {})
    kind = KINDS.get(op, "other")
    named = {name.rsplit("_", 1)[-1]: value for name, value in params.items()}
    if kind == "conv":
        kernel = _tuple(attrs.get("kernel"))
        pads = [(p, p) for p in _tuple(attrs.get("pad"), [0] * len(kernel))]
        return kind, {"weight": named.get("weight"), **({"bias": named["bias"]} if "bias" in named else {})}, \
            {"strides": _tuple(attrs.get("stride"), [1] * len(kernel)),
             "dilations": _tuple(attrs.get("dilate"), [1] * len(kernel)), "pads": pads,
             "groups": int(attrs.get("num_group", 1))}
    if kind == "dense":
        return kind, {"weight": named.get("weight"), **({"bias": named["bias"]} if "bias" in named else {})}, {}
    if kind == "batchnorm":
        fixed = attrs.get("fix_gamma", "True") in ("True", "true", "1")
        scale = np.ones_like(named["gamma"]) if fixed and "gamma" in named else named.get("gamma")
        return kind, {"scale": scale, "shift": named.get("beta"), "mean": named.get("mean"), "var": named.get("var")}, \
            {"epsilon": float(attrs.get("eps", 1e-3)), "momentum": 1.0 - float(attrs.get("momentum", 0.9))}
    if kind == "pool":
        kernel = _tuple(attrs.get("kernel"))
        return kind, {}, {"kernel": kernel, "strides": _tuple(attrs.get("stride"), [1] * len(kernel)),
                          "pads": [(p, p) for p in _tuple(attrs.get("pad"), [0] * len(kernel))],
                          "ceil": attrs.get("pooling_convention") == "full",
                          "type": "max" if attrs.get("pool_type", "max") == "max" else "average"}
    if kind == "embedding":
        return kind, {"weight": named.get("weight")}, {}
    if op == "RNN":  # MXNet's gates are PyTorch's: GRU r, z, n; LSTM i, f, g, o; two biases
        mode = attrs.get("mode", "")
        canonical = {}
        for name, value in params.items():
            layer, part = name.split("_l", 1)[-1].split("_", 1) if "_l" in name else ("0", name)
            which = {"i2h_weight": "weight_ih", "h2h_weight": "weight_hh", "i2h_bias": "bias_ih",
                     "h2h_bias": "bias_hh"}.get(part)
            if which:
                canonical[f"{which}_l{layer}"] = value
        if mode == "lstm":
            for key in [k for k in canonical if k.startswith("bias_ih")]:
                canonical[key.replace("bias_ih", "bias")] = canonical[key] + canonical[key.replace("bias_ih", "bias_hh")]
        return {"gru": "gru", "lstm": "lstm"}.get(mode, "other"), canonical, \
            {"reset_after": True, "hidden": int(attrs.get("state_size", 0))} if mode == "gru" else {}
    if kind == "activation":
        return kind, {}, {"activation": attrs.get("act_type", op)}
    return kind, {}, {}


def run_node_job(argument: dict) -> dict:
    """Job: {"output"}: the node argument["node"] of the MXNet artifact in argument["folder"] run alone on
    argument["inputs"] (its data inputs, in order; its parameters from the .params file), in argument["precision"]."""
    from rosetta.frameworks.mxnet import PARAMS_FILE, SYMBOL_FILE, import_mxnet
    from rosetta.frameworks.mxnet_reference import _run_alone
    from rosetta.manifest import Manifest

    mx = import_mxnet()
    folder = Path(argument["folder"])
    artifact = Manifest.read(folder).artifact_path(folder)
    graph = json.loads((artifact / SYMBOL_FILE).read_text())
    node = next(n for n in graph["nodes"] if n["name"] == argument["node"])
    saved = {key.split(":", 1)[-1]: value.asnumpy() for key, value in mx.nd.load(str(artifact / PARAMS_FILE)).items()}
    data = iter(argument["inputs"])
    inputs = [saved[graph["nodes"][source]["name"]] if graph["nodes"][source]["name"] in saved else next(data)
              for source, _, _ in node["inputs"]]
    return {"output": _run_alone(mx, node, [np.asarray(a, dtype=np.float64) for a in inputs], mx.cpu())[0]
            .astype(argument["precision"])}
