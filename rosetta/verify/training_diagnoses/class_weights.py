"""Class weights on one side only: PyTorch's CrossEntropyLoss(weight=...) weighs each class (and divides by the
weights of the batch's labels); a compiled Keras model cannot carry them (Keras takes class_weight in fit(), not in
compile()). The loss differs from the first batch on."""

from rosetta.verify.training_diagnoses import training_diagnosis


@training_diagnosis("class weights")
def class_weights(evidence):
    weights = (evidence.torch.get("loss") or {}).get("class_weights")
    if not evidence.forward_differs or not weights or len(set(weights)) == 1 and weights[0] == 1.0:
        return None
    shown = ", ".join(f"{w:g}" for w in weights[:6]) + (", ..." if len(weights) > 6 else "")
    return (f"class weights on one side: PyTorch's loss weighs the classes ({shown}), Keras' compiled "
            f"{(evidence.keras.get('loss') or {}).get('class', 'loss')} does not (Keras takes class_weight in fit(), "
            f"not in compile()): the loss differs from step {evidence.loss_step}")
