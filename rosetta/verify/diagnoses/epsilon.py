"""A normalisation's epsilon that differs: Keras's BatchNormalization defaults to 1e-3, PyTorch's to 1e-5."""

import math

from rosetta.verify.diagnoses import diagnosis


@diagnosis("epsilon")
def epsilon(reference, port, context):
    if reference.kind not in ("batchnorm", "layernorm") or port.kind != reference.kind:
        return None
    mine, theirs = port.config.get("epsilon"), reference.config.get("epsilon")
    if mine is None or theirs is None or math.isclose(mine, theirs, rel_tol=1e-3):
        return None
    return f"epsilon {mine:g} here, {theirs:g} in the reference"
