"""A BatchNorm in inference mode while the other side trains it: Keras' BatchNormalization with trainable=False
(Keras 3 then runs it in inference mode) or called with training=False, PyTorch's BatchNorm left in .eval() in a
module trained in train mode. It normalises with its running statistics, not the batch's: the loss differs from
the first batch on, and its running statistics stay as they were after step 1 (what names it: the behaviour, seen
on one side, whatever the setting that caused it)."""

from rosetta.verify.training_diagnoses import training_diagnosis


def _settings(evidence) -> list[str]:
    said = [f"Keras' {layer['name']} has trainable=False (Keras 3 runs a frozen BatchNormalization in inference "
            "mode)" for layer in evidence.keras.get("batchnorm", []) if layer.get("trainable") is False]
    said += [f"Keras' {layer['name']} is called with training=False" for layer in evidence.keras.get("batchnorm", [])
             if layer.get("training") is False and evidence.port == "Keras"]
    said += [f"Gluon's BatchNorm {layer['name']} has use_global_stats=True"
             for layer in evidence.keras.get("batchnorm", [])
             if layer.get("training") is False and evidence.port == "Gluon"]
    said += [f"PyTorch's {layer['name']} is in eval mode (.eval() left on) in a module trained in train mode"
             for layer in evidence.torch.get("batchnorm", []) if layer.get("training") is False]
    return said


@training_diagnosis("BatchNorm in inference mode")
def batchnorm_inference(evidence):
    idle = evidence.idle or {}
    sides = [side for side in ("keras", "torch") if idle.get(side)]
    if evidence.first_step is None or len(sides) != 1:
        return None
    side = sides[0]
    names = ", ".join(idle[side][:2])
    settings = _settings(evidence)
    return (f"BatchNorm in inference mode during training on the "
            f"{evidence.port if side == 'keras' else 'PyTorch'} side: "
            f"its running statistics ({names}) did not move at step 1 while the other side's did"
            + (f" ({'; '.join(settings)})" if settings else "")
            + f": it normalises with running statistics, not the batch's; the loss differs from step "
            f"{evidence.loss_step or evidence.first_step}")
