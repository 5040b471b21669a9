"""An LSTM's bias that keeps one of PyTorch's two biases (b_ih + b_hh) instead of their sum."""

from rosetta.verify.diagnoses import close, diagnosis


@diagnosis("LSTM bias")
def lstm_bias(reference, port, context):
    if reference.kind != "lstm" or port.kind != "lstm":
        return None
    mine, total = port.params.get("bias_l0"), reference.params.get("bias_l0")
    if mine is None or total is None or close(mine, total):
        return None
    for name in ("bias_ih_l0", "bias_hh_l0"):
        if close(mine, reference.params.get(name)):
            return (f"LSTM bias: the port's bias is PyTorch's {name} alone; it must be bias_ih + bias_hh (Keras "
                    "and ONNX have one bias where PyTorch has two)")
    return None
