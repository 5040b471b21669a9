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
            layout: str) -> Manifest:
    """Run an MMdnn parser's IR generation and write the IR artifact; its manifest records the parser and the
    source model's image layout ("channels_first" or "channels_last"), which the emitters compare with theirs."""
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
                 "framework_version": framework_version, "options": {}, "layout": layout}
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
