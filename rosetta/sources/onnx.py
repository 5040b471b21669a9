"""Reading an ONNX file: loaded and checked (full check, with shape inference) before anything else runs it;
tensors kept as external data are copied with it (from inside its folder only)."""

from __future__ import annotations

from pathlib import Path

ARTIFACT = "model.onnx"


def read(argument: dict) -> dict:
    from rosetta.frameworks.onnx_graph import (copy_onnx, graph_inputs, index_ranges, load_checked,
                                               value_info_signature)
    from rosetta.sources.readers import write_manifest

    path = Path(argument["model"]["path"])
    model = load_checked(path, argument["model"]["text"])
    data_files = copy_onnx(path, Path(argument["staging"]) / ARTIFACT)
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    inputs = value_info_signature(graph_inputs(model))
    ranges = index_ranges(model)
    for entry in inputs:  # integer inputs that index an embedding: drawn from all its rows
        if entry["name"] in ranges:
            entry["high"] = ranges[entry["name"]]
    return write_manifest(argument, ARTIFACT, "onnx", inputs,
                          value_info_signature(model.graph.output), opset=opset, extra_files=data_files)
