"""MXNet -> MMdnn IR with MMdnn's MXNet parser, on a symbol + params checkpoint (a user's MXNet model, or an
MXNet artifact). The parser needs MXNet's numpy aliases (rosetta.frameworks.mxnet.import_mxnet) and one
image input (C, H, W). Gluon exports are renamed to the Module-API names it expects (module_api_names)."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

from rosetta.convert.mmdnn import compat
from rosetta.convert.mmdnn.ir import save_ir
from rosetta.errors import RosettaError
from rosetta.manifest import Manifest


def convert(source: Path, staging: Path, options: dict) -> Manifest:
    from rosetta.frameworks.mxnet import SYMBOL_FILE, import_mxnet

    mx = import_mxnet()
    compat.apply()
    from mmdnn.conversion.mxnet.mxnet_parser import MXNetParser

    previous = Manifest.read(source)
    if len(previous.inputs) != 1 or len(previous.inputs[0]["shape"]) != 4:
        raise RosettaError("MMdnn's MXNet parser takes one image input (N, C, H, W)")
    renamed = Path(staging) / "module-names"
    original = module_api_names(mx, previous.artifact_path(source), renamed)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            parser = MXNetParser((str(renamed / SYMBOL_FILE), str(renamed / "model"), 0,
                                  list(previous.inputs[0]["shape"][1:])))
        return save_ir(parser, staging, previous.source, previous.inputs, previous.outputs, mx.__version__,
                       "channels_first", original)
    except AttributeError as error:  # a parameter missing under the name the parser derives from its node
        raise RosettaError(f"MMdnn's MXNet parser cannot find this model's weights ({error}): it expects "
                           "Module-API names (conv0_weight, bn0_moving_mean)") from None
    finally:
        for file in renamed.iterdir():
            file.unlink()
        renamed.rmdir()


def module_api_names(mx, folder: Path, out: Path) -> dict:
    """MMdnn's parser looks weights up as NODE_weight, NODE_moving_mean, ... (MXNet's Module API); Gluon's
    export names nodes NAME_fwd and BatchNorm statistics running_mean/var ("'NoneType' object has no
    attribute 'asnumpy'"). A copy of the checkpoint with Module-API names is written to `out`; returns
    {new name: Gluon's name} of the renamed nodes."""
    import json

    from rosetta.frameworks.mxnet import PARAMS_FILE, SYMBOL_FILE

    out.mkdir()
    rename = lambda name: (name[: -len("_fwd")] if name.endswith("_fwd") else name).replace(  # noqa: E731
        "_running_mean", "_moving_mean").replace("_running_var", "_moving_var")
    graph = json.loads((folder / SYMBOL_FILE).read_text())
    original = {}
    for node in graph["nodes"]:
        if rename(node["name"]) != node["name"]:
            original[rename(node["name"])] = node["name"]
        node["name"] = rename(node["name"])
    (out / SYMBOL_FILE).write_text(json.dumps(graph))
    params = mx.nd.load(str(folder / PARAMS_FILE))
    mx.nd.save(str(out / "model-0000.params"), {k.split(":")[0] + ":" + rename(k.split(":", 1)[1]): v
                                               for k, v in params.items()})
    return original

