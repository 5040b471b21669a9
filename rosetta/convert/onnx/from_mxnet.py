"""MXNet -> ONNX with MXNet's own exporter (mx.onnx.export_model), with a dynamic batch axis, at opset 13.

The exporter stamps the installed onnx's newest opset on the model while its op translations are written
for opsets 12 and 13, so newer onnx releases get graphs their checker rejects; rosetta pins the version it
reads (onnx.defs.onnx_opset_version) to 13 while it runs.

The exporter imports `onnx.mapping`, which onnx has removed: rosetta.frameworks.mxnet.install_onnx_mapping
bridges it, in the worker process that runs this conversion only.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rosetta.errors import RosettaError, one_line
from rosetta.frameworks.onnx_graph import graph_inputs, load_checked, value_info_signature
from rosetta.manifest import Manifest, sha256_of

ARTIFACT = "model.onnx"
NEWEST_OPSET = 13


def convert(source: Path, staging: Path, options: dict) -> Manifest:
    import onnx.defs

    from rosetta.frameworks.mxnet import PARAMS_FILE, SYMBOL_FILE, import_mxnet, install_onnx_mapping

    mx = import_mxnet()
    install_onnx_mapping()
    previous = Manifest.read(source)
    folder = previous.artifact_path(source)
    opset = NEWEST_OPSET
    target = Path(staging) / ARTIFACT
    shapes = [tuple(d or 1 for d in e["shape"]) for e in previous.inputs]
    dynamic = [tuple(None if i == 0 else d for i, d in enumerate(shape)) for shape in shapes]
    newest = onnx.defs.onnx_opset_version
    onnx.defs.onnx_opset_version = lambda: opset
    try:
        mx.onnx.export_model(str(folder / SYMBOL_FILE), str(folder / PARAMS_FILE), shapes,
                             [np.dtype(e["dtype"]) for e in previous.inputs], str(target), verbose=False,
                             dynamic=True, dynamic_input_shapes=dynamic)
    except Exception as error:
        raise RosettaError(f"MXNet's ONNX exporter failed: {one_line(error)}") from None
    finally:
        onnx.defs.onnx_opset_version = newest
    exported = onnx.load(str(target))  # stamped with onnx's newest IR version, which runtimes may not read yet
    exported.ir_version = onnx.helper.find_min_ir_version_for(list(exported.opset_import))
    onnx.save(exported, str(target))
    model = load_checked(target)
    return Manifest(
        artifact=ARTIFACT, format="onnx", source=previous.source,
        converter={"name": "mx.onnx.export_model", "version": mx.__version__, "options": {"opset": opset}},
        inputs=value_info_signature(graph_inputs(model)), outputs=value_info_signature(model.graph.output),
        sha256=sha256_of(target), opset=opset,
    )
