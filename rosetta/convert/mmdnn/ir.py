"""MMdnn's IR as a rosetta artifact: a folder with the graph (`graph.pb`, and `graph.json` to read) and the
weights (`weights.npz`, one array per "layer/parameter", no pickle).

MMdnn itself keeps weights as a pickled dict in a `.npy` file; rosetta writes and reads them as a plain
`.npz`, so that reading an IR artifact never unpickles anything. `weights_dict` (rosetta.frameworks.base)
gives MMdnn the nested dict it expects.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import numpy as np

from rosetta.errors import RosettaError
from rosetta.manifest import Manifest, sha256_of

ARTIFACT = "ir"
GRAPH, GRAPH_JSON, WEIGHTS = "graph.pb", "graph.json", "weights.npz"


def save_ir(parser, staging: Path, source: dict, inputs: list, outputs: list, framework_version: str,
            layout: str, source_nodes: dict | None = None) -> Manifest:
    """Run an MMdnn parser's IR generation and write the IR artifact; its manifest records the parser, the
    source model's image layout ("channels_first" or "channels_last"), which the emitters compare with theirs,
    and `source_nodes`: what the source model calls an IR node where the parser renamed it (for `--locate`,
    which reads the source's value of each node)."""
    from importlib.metadata import version

    mmdnn_class = next(c for c in type(parser).__mro__ if c.__module__.startswith("mmdnn."))  # not our subclass
    folder = Path(staging) / ARTIFACT
    folder.mkdir()
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):  # MMdnn prints every step
        parser.gen_IR()
        parser.save_to_proto(str(folder / GRAPH))
        parser.save_to_json(str(folder / GRAPH_JSON))
    # a layer the parser has no rename_ method for is only printed, and left out of the IR
    skipped = sorted(set(re.findall(r"has not supported operator \[(\w+)\]", printed.getvalue())))
    if skipped:
        raise RosettaError(f"MMdnn's {mmdnn_class.__name__} cannot convert {', '.join(skipped)}: it has no "
                           f"{', '.join('rename_' + op for op in skipped)}")
    if not parser.weight_loaded:
        raise RosettaError("MMdnn's parser loaded no weights")
    save_weights(parser.weights, folder / WEIGHTS)
    converter = {"name": f"mmdnn {mmdnn_class.__name__}", "version": version("mmdnn"),
                 "framework_version": framework_version, "options": {}, "layout": layout,
                 **({"source_nodes": source_nodes} if source_nodes else {})}
    return Manifest(artifact=ARTIFACT, format="mmdnn", source=source, converter=converter,
                    inputs=inputs, outputs=outputs, sha256=sha256_of(folder))


def save_weights(weights: dict, path: Path) -> None:
    """MMdnn's nested {layer: {parameter: array}} dict as "layer/parameter" arrays in a plain .npz."""
    np.savez(path, **{f"{layer}/{name}": np.asarray(value) for layer, values in weights.items()
                      for name, value in values.items()})


def ir_ops(folder: Path) -> list[str]:
    """The IR's op names in graph order (for error messages and tests)."""
    import json

    return [node["op"] for node in json.loads((Path(folder) / GRAPH_JSON).read_text())["node"]]


def ir_nodes(folder: Path) -> list[dict]:
    """The IR's nodes ({"name", "op", "input": [names], "shape": [sizes] (NHWC, -1 for the batch) or None}) in
    a topological order (MMdnn writes them in no particular order: its DataInput may come last), read from
    graph.json without MMdnn."""
    import json

    def shape(node: dict):
        shapes = node.get("attr", {}).get("_output_shapes", {}).get("list", {}).get("shape", [])
        return [int(dim.get("size", 0)) for dim in shapes[0].get("dim", [])] if shapes else None

    nodes = {node["name"]: {"name": node["name"], "op": node["op"], "input": list(node.get("input", [])),
                            "shape": shape(node)}
             for node in json.loads((Path(folder) / GRAPH_JSON).read_text())["node"]}
    ordered, seen = [], set()

    def visit(name: str) -> None:
        if name in seen or name not in nodes:
            return
        seen.add(name)
        for parent in nodes[name]["input"]:
            visit(parent.split(":")[0])
        ordered.append(nodes[name])

    for name in nodes:
        visit(name)
    return ordered


def cut_ir_job(argument: dict) -> dict:
    """Job (in MMdnn's worker): the IR artifact `source` cut after node `node` (the node and what it depends on,
    Polygraphy-style prefix), written as an IR artifact in `out` whose one output is that node's value,
    described by `output` ({"name", "shape", "dtype"}, in the source model's layout). Emitting the cut IR with
    a target's emitter gives the target's value of that node: `--locate` bisects MMdnn conversions on it."""
    from google.protobuf import json_format

    from rosetta.convert.mmdnn import compat

    compat.apply()
    from mmdnn.conversion.common.IR import graph_pb2

    source, out, node = Path(argument["source"]), Path(argument["out"]), argument["node"]
    manifest = Manifest.read(source)
    folder = manifest.artifact_path(source)
    graph = graph_pb2.GraphDef()
    graph.ParseFromString((folder / GRAPH).read_bytes())
    by_name = {n.name: n for n in graph.node}
    if node not in by_name:
        raise RosettaError(f"the IR has no node {node!r}")
    keep, todo = set(), [node]
    while todo:
        name = todo.pop().split(":")[0]
        if name not in keep and name in by_name:
            keep.add(name)
            todo.extend(by_name[name].input)
    kept = [n for n in graph.node if n.name in keep]
    del graph.node[:]
    graph.node.extend(kept)
    target = out / ARTIFACT
    target.mkdir(parents=True)
    (target / GRAPH).write_bytes(graph.SerializeToString())
    (target / GRAPH_JSON).write_text(json_format.MessageToJson(graph, preserving_proto_field_name=True))
    with np.load(folder / WEIGHTS, allow_pickle=False) as weights:
        np.savez(target / WEIGHTS, **{k: weights[k] for k in weights.files if k.rsplit("/", 1)[0] in keep})
    manifest.outputs = [argument["output"]]
    manifest.sha256 = sha256_of(target)
    manifest.write(out)
    return {}
