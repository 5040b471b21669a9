"""BatchNorm momentum in the other framework's convention: PyTorch's momentum m weighs the new batch (0.1),
Keras' the running value (0.9 for PyTorch's 0.1; Keras' default 0.99 is PyTorch's 0.01). The training-mode
forward pass normalises with the batch's own statistics, so the losses and trainable parameters agree and only
the running statistics diverge (inference after training would not)."""

from rosetta.verify.training_diagnoses import training_diagnosis


@training_diagnosis("BatchNorm momentum")
def batchnorm_momentum(evidence):
    if evidence.statistic_step is None or evidence.statistic_step != evidence.first_step:
        return None
    if evidence.loss_step == evidence.first_step or evidence.trainable_step == evidence.first_step:
        return None
    theirs = [layer["momentum"] for layer in evidence.torch.get("batchnorm", []) if layer["momentum"] is not None]
    mine = [layer["momentum"] for layer in evidence.keras.get("batchnorm", [])]
    wrong = [(t, k) for t, k in zip(theirs, mine) if abs(k - (1 - t)) > 1e-6]
    if not wrong:
        return None
    t, k = wrong[0]
    why = (" (PyTorch's number copied)" if abs(k - t) < 1e-6 else " (Keras' default)" if abs(k - 0.99) < 1e-9
           else "")
    return (f"BatchNorm momentum: PyTorch's momentum {t:g} is {evidence.ports} {1 - t:g}; {evidence.ports} "
            f"BatchNormalization has "
            f"momentum={k:g}{why}: the running statistics differ after step {evidence.statistic_step}, the losses "
            "and trainable parameters agree")
