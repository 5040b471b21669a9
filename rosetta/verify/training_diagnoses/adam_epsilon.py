"""Adam's epsilon set to another value: Keras' default 1e-7 against PyTorch's 1e-8 (their placement, before or
after the bias correction, is a convention of the frameworks and modelled: rosetta.train.port_keras). It shows
where sqrt(v) is small next to epsilon (small gradients); the loss of step 1 agrees, an update does not."""

from rosetta.verify.training_diagnoses import optimizer_class, torch_hyper, training_diagnosis


@training_diagnosis("Adam epsilon")
def adam_epsilon(evidence):
    if evidence.trainable_step is None or (evidence.loss_step is not None
                                          and evidence.loss_step <= evidence.trainable_step):
        return None
    torch_class, keras_class = optimizer_class(evidence.torch), optimizer_class(evidence.keras)
    if not (torch_class.startswith("Adam") and keras_class.startswith("Adam")):
        return None
    eps, epsilon = torch_hyper(evidence.torch, "eps"), (evidence.keras.get("optimizer") or {}).get("epsilon")
    if eps is None or epsilon is None or abs(float(eps) - float(epsilon)) <= 1e-6 * max(float(eps), float(epsilon)):
        return None
    default = " (Keras' default)" if abs(float(epsilon) - 1e-7) < 1e-12 else ""
    return (f"Adam epsilon: PyTorch's {torch_class} eps={float(eps):g}, {evidence.ports} {keras_class} "
            f"epsilon={float(epsilon):g}{default}: the loss of step 1 agrees, the parameters differ after step "
            f"{evidence.trainable_step}")
