"""MXNet's side of users' in-memory models (rosetta.sources.memory): a Gluon HybridBlock exported to a symbol
file and its parameters."""

from __future__ import annotations

import json
from pathlib import Path

from rosetta.errors import BadInput, RosettaError


def export(block, inputs: list, folder: Path, label: str) -> tuple[Path, list[str]]:
    """The block as model-symbol.json + model-0000.params (HybridBlock.export, which needs a hybridized block
    that has run once: it is run on generated inputs of the given specs), and the symbol's own input names."""
    from rosetta.frameworks.mxnet import import_mxnet
    from rosetta.models.inputs import generate_inputs

    if not inputs:
        raise BadInput(f"{label}: a Gluon block does not say its inputs; give inputs= as arrays or specs, "
                       "e.g. inputs=['data:Nx3x32x32:float32']")
    folder = Path(folder)
    mx = import_mxnet()
    block.hybridize()
    block(*[mx.nd.array(array) for array in generate_inputs(tuple(inputs), 2, 0).values()])
    block.export(str(folder / "model"), 0)
    path = folder / "model-symbol.json"
    if not path.is_file():
        raise RosettaError(f"{label}: HybridBlock.export wrote no model-symbol.json")
    parameters = {name.split(":", 1)[-1] for name in mx.nd.load(str(folder / "model-0000.params"))}
    graph = json.loads(path.read_text())
    names = [graph["nodes"][i]["name"] for i in graph["arg_nodes"] if graph["nodes"][i]["name"] not in parameters]
    return path, names
