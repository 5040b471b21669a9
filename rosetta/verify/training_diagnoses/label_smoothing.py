"""Label smoothing on one side only, or at another value: PyTorch's CrossEntropyLoss(label_smoothing=...) against
Keras' CategoricalCrossentropy(label_smoothing=...) (Keras' sparse cross-entropy has none). The loss differs from
the first batch on."""

from rosetta.verify.training_diagnoses import training_diagnosis


@training_diagnosis("label smoothing")
def label_smoothing(evidence):
    if not evidence.forward_differs:
        return None
    torch = float((evidence.torch.get("loss") or {}).get("label_smoothing") or 0.0)
    keras_loss = evidence.keras.get("loss") or {}
    keras = float(keras_loss.get("label_smoothing") or 0.0)
    if abs(torch - keras) <= 1e-9:
        return None
    return (f"label smoothing: PyTorch's {(evidence.torch.get('loss') or {}).get('class', 'loss')} has "
            f"label_smoothing={torch:g}, Keras' {keras_loss.get('class', 'loss')} label_smoothing={keras:g}"
            + (" (SparseCategoricalCrossentropy takes none: smoothing needs CategoricalCrossentropy)"
               if torch and keras_loss.get("class") == "SparseCategoricalCrossentropy" else "")
            + f": the loss differs from step {evidence.loss_step}")
