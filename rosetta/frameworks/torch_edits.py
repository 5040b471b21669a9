"""A converted PyTorch artifact's weights edited as numpy arrays (rosetta.verify.faults seeds wrong artifacts
this way, as it edits Keras weights with frameworks.keras.edit_keras_weights), so the caller needs no torch."""

from __future__ import annotations

from pathlib import Path


def edit_state_dict_arrays(artifact: Path, edit) -> None:
    """Rewrite the weights of a converted PyTorch artifact: edit(name, numpy array) -> new array or None."""
    import torch

    from rosetta.frameworks.torch import edit_state_dict

    def as_tensors(name, tensor):
        new = edit(name, tensor.numpy())
        return None if new is None else torch.from_numpy(new)

    edit_state_dict(artifact, as_tensors)
