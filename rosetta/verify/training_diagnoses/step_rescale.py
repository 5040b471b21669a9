"""Gluon's trainer.step(batch_size) on a loss that is already a mean: trainer.step divides the gradients by the
batch size (rescale_grad = 1 / batch_size), which is right for gluon.loss's per-sample losses (their backward sums)
and divides a mean's gradients by the batch a second time. The loss of step 1 agrees (it is the same mean); every
update is batch-size times too small (plain SGD; Adam nearly hides it)."""

from rosetta.verify.training_diagnoses import training_diagnosis


@training_diagnosis("trainer.step rescale")
def step_rescale(evidence):
    if evidence.port != "Gluon" or evidence.forward_differs or evidence.trainable_step is None:
        return None
    if not (evidence.keras.get("loss") or {}).get("reduced"):
        return None
    return (f"trainer.step(batch_size) rescale: the Gluon loss returns a scalar (a mean already) and "
            f"trainer.step({evidence.batch}) divides its gradients by the batch size again; return the per-sample "
            f"losses (gluon.loss as it is) or call trainer.step(1): the loss agrees, the parameters differ after "
            f"step {evidence.trainable_step}")
