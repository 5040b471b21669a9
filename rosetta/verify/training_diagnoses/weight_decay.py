"""Weight decay coupled on one side and decoupled on the other: PyTorch's Adam (and SGD) add weight_decay x w to
the gradient (L2: Adam then divides it by sqrt(v)), PyTorch's AdamW and every Keras optimiser's weight_decay
subtract lr x weight_decay x w from the weight (decoupled); or the decay is on one side only, or another value
(PyTorch's AdamW defaults to 0.01, Keras' AdamW to 0.004). The loss of step 1 agrees; the first update does not."""

from rosetta.verify.training_diagnoses import optimizer_class, torch_hyper, training_diagnosis


def torch_decay(setup: dict) -> tuple[float, str]:
    decay = float(torch_hyper(setup, "weight_decay", 0.0) or 0.0)
    decoupled = optimizer_class(setup) == "AdamW" or bool(torch_hyper(setup, "decoupled_weight_decay", False))
    return decay, "decoupled" if decoupled else "coupled (L2, added to the gradient)"


@training_diagnosis("weight decay")
def weight_decay(evidence):
    if not evidence.optimizer_differs:
        return None
    decay, how = torch_decay(evidence.torch)
    optimizer = evidence.keras.get("optimizer") or {}
    mine = float(optimizer.get("weight_decay") or 0.0)
    coupled = bool(optimizer.get("weight_decay_coupled"))  # Gluon's wd is L2 added to the gradient
    mine_how = "coupled (L2, added to the gradient)" if coupled else "decoupled (as PyTorch's AdamW)"
    torch_class, keras_class = optimizer_class(evidence.torch), optimizer_class(evidence.keras)
    named = "wd" if coupled else "weight_decay"
    if decay and mine and how.startswith("coupled") != coupled:
        return (f"weight decay: PyTorch's {torch_class}(weight_decay={decay:g}) is {how}; {evidence.ports} "
                f"{keras_class}({named}={mine:g}) is {mine_how}: the parameters differ "
                f"after step {evidence.trainable_step}")
    if bool(decay) != bool(mine):
        return (f"weight decay on one side only: PyTorch's {torch_class} weight_decay={decay:g} ({how}), "
                f"{evidence.ports} {keras_class} {named}={mine:g}: the parameters differ after step "
                f"{evidence.trainable_step}")
    if decay and mine and abs(decay - mine) > 1e-9 * max(decay, mine):
        return (f"weight decay: PyTorch's {torch_class} weight_decay={decay:g}, {evidence.ports} {keras_class} "
                f"{named}={mine:g}: the parameters differ after step {evidence.trainable_step}")
    return None
