"""An LSTM's two PyTorch biases against Keras' one: PyTorch's LSTM adds bias_ih and bias_hh, Keras' LSTM holds
their sum. Equal before training, they train apart where both PyTorch biases are trainable: each receives the
same gradient, so their sum moves twice as far as Keras' bias (SGD). The loss of step 1 agrees; the bias pair
differs after step 1. The port trains alike with one of the two frozen at zero (requires_grad=False)."""

from rosetta.verify.training_diagnoses import training_diagnosis


@training_diagnosis("RNN biases")
def rnn_biases(evidence):
    if evidence.forward_differs:
        return None
    frozen = set(evidence.torch.get("frozen", []))
    for figure in evidence.first:
        torch_name = figure.name.rpartition(" ~ ")[2]
        layer, _, part = torch_name.rpartition(".")
        if part != "bias_ih_l0+bias_hh_l0":
            continue
        if {f"{layer}.bias_ih_l0", f"{layer}.bias_hh_l0"} & frozen:
            return None
        return (f"RNN biases: PyTorch's {layer} holds two biases (bias_ih_l0 + bias_hh_l0), both trainable, Keras' "
                f"LSTM their sum as one: each PyTorch bias takes the same gradient, so their sum steps twice as far; "
                f"the pair differs after step {evidence.first_step} (freeze one at zero: requires_grad=False)")
    return None
