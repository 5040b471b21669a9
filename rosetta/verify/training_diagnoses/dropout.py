"""Dropout active on one side only (or at another rate): the two sides' forward passes draw different random
masks, so the loss differs from the first batch on and every parameter after it. Named from the rates each side
holds; the parameters that diverge are its consequence, never blamed."""

from rosetta.verify.training_diagnoses import training_diagnosis


def _rates(setup: dict) -> list[float]:
    return sorted(round(float(layer["rate"]), 6) for layer in setup.get("dropout", []) if layer["rate"])


@training_diagnosis("dropout on one side")
def dropout(evidence):
    mine, theirs = _rates(evidence.keras), _rates(evidence.torch)
    if evidence.first_step is None or mine == theirs:
        return None
    shown = lambda rates: ", ".join(f"{r:g}" for r in rates) or "none"  # noqa: E731
    return (f"Dropout differs: the {evidence.port} model drops {shown(mine)}, the PyTorch module "
            f"{shown(theirs)}; in training "
            f"its random masks make the loss differ from step {evidence.loss_step or evidence.first_step} and every "
            "parameter after it (not a parameter's fault)")
