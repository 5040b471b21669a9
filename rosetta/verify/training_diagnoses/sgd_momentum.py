"""SGD momentum in another form: PyTorch's buffer is b = momentum x b + (1 - dampening) x g (the first step b = g),
w -= lr x b; Keras' velocity v = momentum x v - lr x g, w += v: the same for a constant rate and dampening 0. A port
that writes the moving-average form (dampening = momentum in PyTorch, or (1 - momentum) folded into the rate) or
copies another momentum agrees at step 1 (both first steps are lr x g) and differs from step 2 on."""

from rosetta.verify.training_diagnoses import optimizer_class, torch_hyper, training_diagnosis


@training_diagnosis("SGD momentum form")
def sgd_momentum(evidence):
    if not evidence.optimizer_differs or optimizer_class(evidence.torch) != "SGD" \
            or optimizer_class(evidence.keras) != "SGD":
        return None
    momentum = float(torch_hyper(evidence.torch, "momentum", 0.0) or 0.0)
    dampening = float(torch_hyper(evidence.torch, "dampening", 0.0) or 0.0)
    keras = float((evidence.keras.get("optimizer") or {}).get("momentum") or 0.0)
    if dampening and momentum:
        return (f"SGD momentum form: PyTorch's SGD has dampening={dampening:g} (the buffer a moving average, "
                f"momentum x b + {1 - dampening:g} x g), {evidence.ports} SGD the plain form "
                f"(momentum={keras:g}): the first "
                f"step agrees, the parameters differ after step {evidence.trainable_step}")
    if abs(momentum - keras) > 1e-9:
        return (f"SGD momentum: PyTorch's momentum={momentum:g}, {evidence.ports} momentum={keras:g}: the "
                f"parameters differ "
                f"after step {evidence.trainable_step}")
    return None
