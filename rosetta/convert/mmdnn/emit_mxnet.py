"""IR -> MXNet with MMdnn's MXNet emitter: the generated `RefactorModel` code builds the symbol; the weights
the emitter converted are saved beside it as an MXNet checkpoint (symbol json + params), which Gluon runs
(rosetta.frameworks.mxnet). The emitter also writes its weights as a pickled .npy; that file is removed."""

from __future__ import annotations

from pathlib import Path

from rosetta.convert.mmdnn import compat
from rosetta.convert.mmdnn.emit import emitted_manifest, generate_code, ir_paths
from rosetta.errors import RosettaError
from rosetta.frameworks.base import import_generated
from rosetta.manifest import Manifest

ARTIFACT = "model"
CODE = "kit_mxnet.py"


def convert(source: Path, staging: Path, options: dict) -> Manifest:
    from rosetta.frameworks.mxnet import PARAMS_FILE, SYMBOL_FILE, import_mxnet

    mx = import_mxnet()
    compat.apply()
    from mmdnn.conversion.mxnet.mxnet_emitter import MXNetEmitter

    previous, graph, weights = ir_paths(source)
    artifact = Path(staging) / ARTIFACT
    artifact.mkdir()
    pickled = Path(staging) / "mmdnn-weights.npy"
    emitter = MXNetEmitter((graph, weights, str(pickled)))
    generate_code(emitter, artifact / CODE)
    pickled.unlink(missing_ok=True)
    symbol = import_generated(artifact / CODE, "mmdnn_kit_mxnet").RefactorModel().symbol
    arguments, auxiliary = set(symbol.list_arguments()), set(symbol.list_auxiliary_states())
    params = {}
    for name, value in emitter.output_weights.items():
        kind = "aux" if name in auxiliary else "arg" if name in arguments else None
        if kind is None:
            raise RosettaError(f"MMdnn's MXNet emitter wrote weight {name!r}, which its symbol does not use")
        params[f"{kind}:{name}"] = mx.nd.array(value)
    inputs = sorted(n for n in arguments if f"arg:{n}" not in params)
    missing = sorted(n for n in auxiliary if f"aux:{n}" not in params)
    if len(inputs) != len(previous.inputs) or missing:
        raise RosettaError(f"MMdnn's MXNet emitter left parameters without weights: {', '.join(inputs + missing)}")
    symbol.save(str(artifact / SYMBOL_FILE))
    mx.nd.save(str(artifact / PARAMS_FILE), params)
    return emitted_manifest(previous, artifact, "mxnet", "MXNetEmitter", mx.__version__, code=CODE,
                            input_names=inputs, layout="channels_first")
