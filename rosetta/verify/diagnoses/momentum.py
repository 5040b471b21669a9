"""BatchNorm momentum in the other convention: PyTorch weighs the new batch by momentum (0.1), Keras and MXNet
the running value (0.99, 0.9). Inference is the same; training diverges: so it is named only where the models
diverge in training (context["training"]), never as the cause of an inference divergence."""

import math

from rosetta.verify.diagnoses import diagnosis


@diagnosis("BatchNorm momentum")
def momentum(reference, port, context):
    if not context.get("training") or reference.kind != "batchnorm" or port.kind != "batchnorm":
        return None
    mine, theirs = port.config.get("momentum"), reference.config.get("momentum")
    if mine is None or theirs is None or math.isclose(mine, theirs, rel_tol=1e-3):
        return None
    return (f"BatchNorm momentum: the new batch weighs {mine:g} here, {theirs:g} in the reference (PyTorch's "
            "momentum is 1 - Keras's); training diverges, inference does not")
