"""from_logits that does not say what the model outputs: Keras' cross-entropy told from_logits=False on a model
whose last layer has no softmax (PyTorch's CrossEntropyLoss takes logits), or from_logits=True after a softmax
(softmax applied twice). The loss differs from the first batch on."""

from rosetta.verify.training_diagnoses import training_diagnosis

LOGIT_LOSSES = ("CrossEntropyLoss", "cross_entropy", "BCEWithLogitsLoss", "binary_cross_entropy_with_logits")


@training_diagnosis("from_logits")
def from_logits(evidence):
    loss, activation = evidence.keras.get("loss") or {}, evidence.keras.get("output_activation") or "linear"
    if not evidence.forward_differs or "crossentropy" not in loss.get("class", "").lower():
        return None
    logits_in = activation not in ("softmax", "sigmoid")
    torch_takes_logits = (evidence.torch.get("loss") or {}).get("class") in LOGIT_LOSSES
    if not loss.get("from_logits", False) and logits_in:
        return (f"from_logits: Keras' {loss['class']} has from_logits=False but the model outputs logits (its last "
                f"layer's activation is {activation})" + ("; PyTorch's loss takes logits" if torch_takes_logits else "")
                + f": the loss differs from step {evidence.loss_step}")
    if loss.get("from_logits", False) and not logits_in and torch_takes_logits:
        return (f"from_logits: Keras' {loss['class']} has from_logits=True after a {activation} output: softmax "
                f"applied twice; the loss differs from step {evidence.loss_step}")
    return None
