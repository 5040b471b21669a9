"""The loss reduced by sum on one side and by mean on the other: the loss differs by the batch size from the first
batch on, and so does every gradient (plain SGD steps batch times too far; Adam nearly hides it)."""

import math

from rosetta.verify.training_diagnoses import training_diagnosis

KERAS_MEAN = ("sum_over_batch_size", "mean", "auto", None)


def _reductions(evidence) -> tuple[str, str]:
    torch = (evidence.torch.get("loss") or {}).get("reduction", "mean")
    keras = (evidence.keras.get("loss") or {}).get("reduction", "sum_over_batch_size")
    return str(torch), "mean" if keras in KERAS_MEAN else str(keras)


@training_diagnosis("loss reduction")
def loss_reduction(evidence):
    if not evidence.forward_differs:
        return None
    torch, keras = _reductions(evidence)
    step = evidence.loss_step
    reference, port = (float(values[step - 1]) for values in evidence.losses)
    ratio = port / reference if reference else math.inf
    by_batch = evidence.batch > 1 and (math.isclose(ratio, evidence.batch, rel_tol=1e-3)
                                       or math.isclose(ratio * evidence.batch, 1.0, rel_tol=1e-3))
    if torch == keras and not by_batch:
        return None
    said = f"loss reduction: PyTorch's loss reduces by {torch}, Keras' by {keras}"
    if by_batch:
        said += f"; the Keras loss is {ratio:.4g} x PyTorch's at step {step} (the batch is {evidence.batch})"
    return said
