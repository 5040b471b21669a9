"""Reading an MXNet model (NAME-symbol.json + NAME-EPOCH.params, as HybridBlock.export writes it). A symbol
carries no input shapes, so every data input needs an --input option. .params is MXNet's own binary
NDArray format, not a pickle."""

from __future__ import annotations

import shutil
from pathlib import Path

from rosetta.errors import RosettaError, one_line


def output_name(symbol_output: str) -> str:
    """MXNet names outputs NODE_output; its ONNX exporter names them NODE. rosetta uses the ONNX names."""
    return symbol_output[: -len("_output")] if symbol_output.endswith("_output") else symbol_output


def read(argument: dict) -> dict:
    from rosetta.convert.onnx.to_mxnet import ARTIFACT
    from rosetta.frameworks.mxnet import PARAMS_FILE, SYMBOL_FILE, import_mxnet
    from rosetta.sources.readers import write_manifest

    mx = import_mxnet()
    model = argument["model"]
    symbol_path, params_path = Path(model["path"]), Path(model["params"])
    try:
        symbol = mx.sym.load(str(symbol_path))
        params = mx.nd.load(str(params_path))
    except Exception as error:
        raise RosettaError(f"{symbol_path.name} / {params_path.name} is not a readable MXNet model "
                           f"({one_line(error)[:300]})") from None
    stored = {name.split(":", 1)[-1] for name in params}
    data = [name for name in symbol.list_arguments() + symbol.list_auxiliary_states() if name not in stored]
    given = {spec["name"]: spec for spec in argument["inputs"]}
    like = argument.get("like") or []
    if like and len(like) == len(data) and not set(data) & set(given):  # a port of a model whose inputs are known
        given = {name: {**spec, "name": name} for name, spec in zip(data, like)}
    missing = [name for name in data if name not in given]
    if missing:
        raise RosettaError(f"MXNet symbols carry no input shapes; give inputs={missing[0]}:Nx...:float32 for "
                           f"each input ({', '.join(data)})")
    inputs = [{"name": name, "shape": list(given[name]["shape"]), "dtype": given[name]["dtype"]} for name in data]
    try:
        _, shapes, _ = symbol.infer_shape(**{e["name"]: tuple(d or 1 for d in e["shape"]) for e in inputs})
    except Exception as error:
        raise RosettaError(f"the inputs= shapes do not fit {symbol_path.name}: {one_line(error)[:300]}") from None
    outputs = [{"name": output_name(name), "shape": [None] + list(shape[1:]), "dtype": "float32"}
               for name, shape in zip(symbol.list_outputs(), shapes)]
    folder = Path(argument["staging"]) / ARTIFACT
    folder.mkdir()
    shutil.copyfile(symbol_path, folder / SYMBOL_FILE)
    shutil.copyfile(params_path, folder / PARAMS_FILE)
    return write_manifest(argument, ARTIFACT, "mxnet", inputs, outputs)
