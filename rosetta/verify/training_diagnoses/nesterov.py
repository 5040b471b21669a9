"""Nesterov momentum on one side only: PyTorch's SGD(nesterov=True) steps by g + momentum x buffer, Keras' SGD
with nesterov=False by the buffer alone (or the other way round). The loss of step 1 agrees; the first update
already differs (by the momentum x the first gradient)."""

from rosetta.verify.training_diagnoses import optimizer_class, torch_hyper, training_diagnosis


@training_diagnosis("Nesterov")
def nesterov(evidence):
    if not evidence.optimizer_differs or optimizer_class(evidence.torch) != "SGD" \
            or optimizer_class(evidence.keras) != "SGD":
        return None
    torch = bool(torch_hyper(evidence.torch, "nesterov", False))
    keras = bool((evidence.keras.get("optimizer") or {}).get("nesterov", False))
    if torch == keras:
        return None
    return (f"Nesterov on one side: PyTorch's SGD nesterov={torch}, {evidence.ports} SGD nesterov={keras}: "
            f"the parameters "
            f"differ after step {evidence.trainable_step}")
