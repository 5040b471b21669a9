"""Static checks of an artifact that no choice of inputs may reveal, given as reasons to FAIL."""

from __future__ import annotations

from pathlib import Path


def artifact_problems(folder: Path) -> list[str]:
    """What is wrong with an artifact folder regardless of its outputs (empty when nothing is)."""
    from rosetta.manifest import Manifest

    manifest = Manifest.read(folder)
    if manifest.format != "onnx":
        return []
    import onnx

    from rosetta.frameworks.onnx_graph import training_mode_nodes

    path = manifest.artifact_path(folder)
    nodes = training_mode_nodes(onnx.load(str(path), load_external_data=False), str(path.parent))
    if not nodes:
        return []
    more = f" and {len(nodes) - 2} more" if len(nodes) > 2 else ""
    return [f"inference graph exported in training mode: {', '.join(nodes[:2])}{more}"]
