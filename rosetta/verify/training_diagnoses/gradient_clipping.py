"""Gradient clipping that differs: Keras' clipnorm clips each variable's gradient to the norm, PyTorch's
torch.nn.utils.clip_grad_norm_ the global norm of all of them (Keras' global_clipnorm); clipping by value against
by norm; clipping on one side only. The PyTorch side's clipping is the optimizer's clip_grad_norm or
clip_grad_value attribute (rosetta.verify.port_training: what the user's loop calls). The loss of step 1 agrees;
the first update does not (where a gradient exceeds the bound)."""

from rosetta.verify.training_diagnoses import training_diagnosis

KERAS = {"clipnorm": "per-variable norm", "global_clipnorm": "global norm", "clipvalue": "value"}
TORCH = {"clip_grad_norm": "global norm", "clip_grad_value": "value"}


def _clipping(setup: dict, names: dict) -> dict:
    optimizer = setup.get("optimizer") or {}
    return {kind: float(optimizer[key]) for key, kind in names.items() if optimizer.get(key) is not None}


@training_diagnosis("gradient clipping")
def gradient_clipping(evidence):
    if not evidence.optimizer_differs:
        return None
    torch, keras = _clipping(evidence.torch, TORCH), _clipping(evidence.keras, KERAS)
    if torch == keras:
        return None
    shown = lambda clips: ", ".join(f"by {k} {v:g}" for k, v in clips.items()) or "none"  # noqa: E731
    said = f"gradient clipping: PyTorch clips {shown(torch)}, Keras {shown(keras)}"
    if "global norm" in torch and "per-variable norm" in keras:
        said += (" (Keras' clipnorm clips each variable; PyTorch's clip_grad_norm_ is Keras' global_clipnorm)")
    return said + f": the parameters differ after step {evidence.trainable_step}"
