"""An activation that differs anywhere in the segment: a Keras Conv2D(activation="elu") against PyTorch's conv,
BatchNorm and a separate ReLU module, or GELU's tanh approximation (nn.GELU(approximate="tanh"), keras.ops.gelu's
default) against the exact erf form (nn.GELU(), Keras's activation="gelu"). The activations along each side are
compared as a multiset, since one side fuses what the other runs as a module of its own. A side with no activation
module at all says nothing: PyTorch applies many as functions in forward (torch.tanh), which no layer records;
except a Keras port made only of Keras's own layers (every activation it applies is a layer or a layer's setting),
against a reference whose activation module has no counterpart: the port leaves it out."""

from collections import Counter

from rosetta.verify.diagnoses import CONTAINERS, diagnosis, innermost, segment

SYNONYMS = {"swish": "silu", "hardswish": "hard_silu", "hard_swish": "hard_silu", "leakyrelu": "leaky_relu",
            "hardsigmoid": "hard_sigmoid", "hardtanh": "hard_tanh"}  # PyTorch's and Keras's names of one function
# Keras's own layers, which hold every activation they apply in their settings: a port segment made only of these
# and holding none applies none (a custom layer or a Lambda could apply one unseen)
KERAS_RECORDED = {"Conv1D", "Conv2D", "Conv3D", "Conv1DTranspose", "Conv2DTranspose", "Conv3DTranspose", "Dense",
                  "DepthwiseConv2D", "SeparableConv2D", "BatchNormalization", "LayerNormalization", "ZeroPadding1D",
                  "ZeroPadding2D", "Cropping1D", "Cropping2D", "MaxPooling1D", "MaxPooling2D", "AveragePooling1D",
                  "AveragePooling2D", "GlobalAveragePooling1D", "GlobalAveragePooling2D", "Flatten", "Reshape",
                  "Add", "Concatenate", "UpSampling2D", "Embedding"}
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
    if not mine and theirs and all(layer.op in KERAS_RECORDED for layer in ports):
        left_out = [layer.name for layer in innermost(references) if layer.kind == "activation"]
        return (f"activation: none here, {_said(theirs, False)} in the reference ({', '.join(left_out)} has no "
                "counterpart in the port: left out)")
    if not mine or not theirs or mine == theirs:
        return None
    here, there = mine - theirs, theirs - mine
    gelus = any(name.startswith("gelu") for name in here) and any(name.startswith("gelu") for name in there)
    return f"activation: {_said(here, gelus)} here, {_said(there, gelus)} in the reference"
