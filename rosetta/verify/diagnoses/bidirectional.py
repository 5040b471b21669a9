"""A bidirectional RNN whose forward and backward halves were copied the wrong way round: the port's forward
layer holds PyTorch's *_reverse weights and its backward layer the forward ones (Keras's Bidirectional holds the
halves as two sublayers, PyTorch's LSTM/GRU as one module with `_reverse` tensors)."""

from rosetta.verify.diagnoses import close, diagnosis, segment

RECURRENT = ("lstm", "gru")


def _half(layers, word: str):
    """The port's recurrent sublayer of one direction ("rnn/forward_lstm", "rnn/backward_lstm")."""
    return next((layer for layer in layers if layer.kind in RECURRENT
                 and layer.name.rsplit("/", 1)[-1].startswith(word)), None)


def _holds(half, reference, suffix: str) -> bool:
    names = [name for name in half.params if name.endswith("_l0")]
    return bool(names) and all(close(half.params[name], reference.params.get(name + suffix)) for name in names)


@diagnosis("bidirectional halves swapped")
def bidirectional(reference, port, context):
    references, ports = segment(reference, port, context)
    whole = next((layer for layer in references if layer.kind in RECURRENT and layer.config.get("bidirectional")),
                 None)
    forward, backward = _half(ports, "forward"), _half(ports, "backward")
    if whole is None or forward is None or backward is None:
        return None
    if _holds(forward, whole, "_reverse") and _holds(backward, whole, ""):
        return (f"bidirectional halves swapped: {forward.name} holds the reference's {whole.name} *_reverse "
                f"weights and {backward.name} its forward ones")
    return None
