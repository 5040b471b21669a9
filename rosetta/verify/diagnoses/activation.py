"""A fused activation that differs (Keras Conv2D(activation=...) against a separate PyTorch ReLU)."""

from rosetta.verify.diagnoses import diagnosis


@diagnosis("activation")
def activation(reference, port, context):
    mine, theirs = port.config.get("activation"), reference.config.get("activation")
    if reference.kind == "activation" or port.kind == "activation" or mine == theirs:
        return None
    return f"activation: {mine or 'none'} here, {theirs or 'none'} in the reference"
