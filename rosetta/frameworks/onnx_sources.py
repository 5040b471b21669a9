"""ONNX's side of users' in-memory models (rosetta.sources.memory): an onnx.ModelProto written to a file."""

from __future__ import annotations

from pathlib import Path


def export(model, inputs: list, folder: Path, label: str) -> tuple[Path, None]:
    """An onnx.ModelProto saved as folder/model.onnx; its inputs are the file's own."""
    import onnx

    path = Path(folder) / "model.onnx"
    onnx.save(model, str(path))
    return path, None
