"""A GRU's gate blocks in another order (PyTorch r, z, n; Keras and ONNX z, r, h), or reset_after that differs."""

from rosetta.frameworks.layers import gate_blocks
from rosetta.verify.diagnoses import close, diagnosis


@diagnosis("GRU gates")
def gru_gates(reference, port, context):
    if reference.kind != "gru" or port.kind != "gru":
        return None
    if reference.config.get("reset_after", True) != port.config.get("reset_after", True):
        return (f"reset_after={port.config.get('reset_after')} here, {reference.config.get('reset_after')} in the "
                "reference: the candidate state applies the reset gate after the recurrent product in PyTorch "
                "(Keras reset_after=True), before it otherwise")
    names = ("weight_ih_l0", "weight_hh_l0")
    ref, mine = [reference.params.get(n) for n in names], [port.params.get(n) for n in names]
    if any(w is None for w in ref + mine) or all(close(a, b) for a, b in zip(ref, mine)):
        return None
    gates = ("r", "z", "n")
    for order in ((1, 0, 2), (0, 2, 1), (2, 1, 0), (1, 2, 0), (2, 0, 1)):
        if all(close(b, gate_blocks(a, order)) for a, b in zip(ref, mine)):
            swapped = [gates[k] for k in range(3) if order[k] != k]
            return f"GRU gates {' and '.join(swapped)} swapped: the weight blocks are in another gate order"
    return None
