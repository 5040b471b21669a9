"""An activation that differs anywhere in the segment: a Keras Conv2D(activation="elu") against PyTorch's conv,
BatchNorm and a separate ReLU module, or GELU's tanh approximation (nn.GELU(approximate="tanh"), keras.ops.gelu's
default) against the exact erf form (nn.GELU(), Keras's activation="gelu"). The activations along each side are
compared as a multiset, since one side fuses what the other runs as a module of its own. A side with no activation
module at all says nothing: PyTorch applies many as functions in forward (torch.tanh), which no layer records."""

from collections import Counter

from rosetta.verify.diagnoses import CONTAINERS, diagnosis, innermost, segment

SYNONYMS = {"swish": "silu", "hardswish": "hard_silu", "hard_swish": "hard_silu", "leakyrelu": "leaky_relu",
            "hardsigmoid": "hard_sigmoid", "hardtanh": "hard_tanh"}  # PyTorch's and Keras's names of one function
PLAIN = {"gelu": "gelu (exact, erf)", "gelu_tanh": "gelu_tanh (GELU's tanh approximation)"}


def _activations(layers) -> Counter:
    names = Counter()
    for layer in innermost(layers):
        if layer.kind not in ("conv", "dense", "activation", *CONTAINERS):  # a GRU's tanh is its cell's, not fused
            continue
        name = layer.config.get("activation")
        if isinstance(name, str) and name.lower() not in ("linear", "identity", "none", ""):
            names[SYNONYMS.get(name.lower(), name.lower())] += 1
    return names


def _said(names: Counter, gelus: bool) -> str:
    return ", ".join(PLAIN.get(name, name) if gelus else name for name in sorted(names.elements())) or "none"


@diagnosis("activation")
def activation(reference, port, context):
    references, ports = segment(reference, port, context)
    mine, theirs = _activations(ports), _activations(references)
    if not mine or not theirs or mine == theirs:
        return None
    here, there = mine - theirs, theirs - mine
    gelus = any(name.startswith("gelu") for name in here) and any(name.startswith("gelu") for name in there)
    return f"activation: {_said(here, gelus)} here, {_said(there, gelus)} in the reference"
