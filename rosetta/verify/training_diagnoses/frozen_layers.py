"""A layer trainable on one side and frozen on the other (requires_grad=False in PyTorch, trainable=False in
Keras): the forward and backward passes agree at step 1, then one side updates the parameter and the other does
not. Named from the paired parameters' trainability, read on both sides."""

from rosetta.verify.training_diagnoses import training_diagnosis


@training_diagnosis("frozen layers")
def frozen_layers(evidence):
    if not evidence.trainability or evidence.forward_differs:
        return None
    diverged = {f.name for f in evidence.first}
    found = [entry for entry in evidence.trainability if entry[0] in diverged] or evidence.trainability
    pair, in_keras, in_torch = found[0]
    setting = "grad_req='null'" if evidence.port == "Gluon" else "trainable=False"
    frozen = "PyTorch (requires_grad=False)" if in_keras else f"{evidence.port} ({setting})"
    more = f" and {len(found) - 1} more" if len(found) > 1 else ""
    return (f"frozen on one side: {pair}{more} is trainable in {evidence.port if in_keras else 'PyTorch'}, frozen in "
            f"{frozen}: the parameters differ after step {evidence.trainable_step or evidence.first_step}")
