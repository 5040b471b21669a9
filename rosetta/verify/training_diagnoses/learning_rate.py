"""The learning rate that differs: another value, or a schedule on one side only (a Keras LearningRateSchedule
is stepped per batch, by the optimiser's iterations; a PyTorch scheduler is stepped by the user's loop and is not
part of (module, optimizer, loss_fn), so that side's rate is constant here). A schedule that starts at the same
rate agrees at step 1 and differs from its first change on; another value differs after step 1."""

from rosetta.verify.training_diagnoses import torch_hyper, training_diagnosis


@training_diagnosis("learning rate")
def learning_rate(evidence):
    if not evidence.optimizer_differs:
        return None
    rate = torch_hyper(evidence.torch, "lr")
    keras = (evidence.keras.get("optimizer") or {}).get("learning_rate")
    if isinstance(keras, dict):
        schedule = keras.get("class_name") or keras.get("config", {}).get("name") or "a schedule"
        return (f"learning-rate schedule on one side: {evidence.ports} learning rate is {schedule} (stepped "
                f"per batch), "
                f"PyTorch's lr={float(rate):g} is constant here: the parameters differ after step "
                f"{evidence.trainable_step}")
    if isinstance(keras, str):  # a schedule _plain gave as its class name
        return (f"learning-rate schedule on one side: {evidence.ports} learning rate is {keras}, PyTorch's "
                f"lr={float(rate):g} "
                f"constant: the parameters differ after step {evidence.trainable_step}")
    if rate is None or keras is None or abs(float(rate) - float(keras)) <= 1e-6 * max(abs(float(rate)), 1e-12):
        return None
    return (f"learning rate: PyTorch's lr={float(rate):g}, {evidence.ports} learning_rate={float(keras):g}: "
            f"the parameters "
            f"differ after step {evidence.trainable_step}")
