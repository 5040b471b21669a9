"""No bug class recognised: which parameter tensor or setting differs, with its figures."""

import math

import numpy as np

from rosetta.verify.diagnoses import close, diagnosis


TRAINING_ONLY = ("momentum",)  # settings that cannot change an inference output


@diagnosis("parameters")
def parameters(reference, port, context):
    from rosetta.verify.diagnoses.flatten_order import in_port_order

    differing = []
    reordered = in_port_order(reference, port, context)  # a Dense after a flatten in the other layout
    # one half of a bidirectional RNN (Keras's "rnn/backward_lstm") against PyTorch's whole module: the backward
    # half is compared with the module's *_reverse tensors, the forward half with the others
    suffix = "_reverse" if reference.config.get("bidirectional") and \
        port.name.rsplit("/", 1)[-1].startswith("backward") else ""
    for name in sorted(set(reference.params) & set(port.params)):
        a, b = reference.params.get(name + suffix), port.params[name]
        if a is None or b is None:
            continue
        if name == "weight" and reordered is not None and close(reordered, b):
            continue
        if np.shape(a) != np.shape(b):
            differing.append(f"{name} shape {np.shape(b)} here, {np.shape(a)} in the reference")
        elif not close(a, b):
            difference = float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))))
            scale = float(np.max(np.abs(a), initial=0.0)) or 1.0
            differing.append(f"{name} differs by up to {difference:.3g} ({difference / scale:.2g} of its scale)")
    for name in sorted(set(reference.config) & set(port.config)):
        if name in TRAINING_ONLY and not context.get("training"):
            continue
        a, b = reference.config[name], port.config[name]
        a, b = _plain(a), _plain(b)
        if a != b and not (isinstance(a, float) and isinstance(b, float) and math.isclose(a, b, rel_tol=1e-6)):
            differing.append(f"{name} {b} here, {a} in the reference")
    if not differing:
        return None
    return "no known porting bug recognised; " + "; ".join(differing)


def _plain(value):
    """A setting as JSON holds it (tuples as lists), so that (1, 1) and [1, 1] are the same padding."""
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value
