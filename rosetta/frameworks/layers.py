"""Every layer of a model as it runs, in one form for every framework: what `rosetta verify REF PORT --locate`
pairs across two independently written models (verify.port_locate) and what its diagnoses read.

A Layer has its output (and inputs) in the framework's own layout, and its parameters and configuration in one
canonical form (PyTorch's), so that a port's layer can be compared with the reference's across the known layout
transforms: convolution kernels (O, I, kH, kW) with explicit (before, after) pads per spatial axis; dense
matrices (out, in); BatchNorm's scale, shift, mean and variance with `momentum` in PyTorch's convention (the
weight of the new batch); GRU weights as PyTorch's (3H, in) blocks in gate order r, z, n with separate input and
recurrent biases; LSTM weights in gate order i, f, g, o with the two biases summed."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

KINDS = ("conv", "dense", "batchnorm", "layernorm", "gru", "lstm", "pool", "activation", "flatten", "reshape",
         "embedding", "dropout", "add", "concat", "block", "other")  # block: a module holding others
GATES_KERAS_GRU_TO_TORCH = (1, 0, 2)  # Keras z, r, h -> PyTorch r, z, n (ONNX: z, r, h too)


@dataclass
class Layer:
    name: str
    kind: str  # one of KINDS
    op: str  # the framework's own class or op name
    output: np.ndarray  # the layer's (first) output, in the framework's layout
    inputs: list = field(default_factory=list)  # its inputs as it received them (for running it alone)
    params: dict = field(default_factory=dict)  # canonical parameters (see the module docstring)
    config: dict = field(default_factory=dict)  # canonical configuration: strides, pads, dilations, epsilon, ...
    channels_last: bool = False  # its 3-D to 5-D tensors are (N, ..., C)

    def to_json(self) -> dict:
        return {"name": self.name, "kind": self.kind, "op": self.op, "output": self.output, "inputs": self.inputs,
                "params": self.params, "config": self.config, "channels_last": self.channels_last}

    @classmethod
    def from_json(cls, data: dict) -> "Layer":
        return cls(**data)


def same_pads(size: int, kernel: int, stride: int, dilation: int = 1) -> tuple[int, int]:
    """TensorFlow's and Keras's padding="same": as much as needed for ceil(size / stride) outputs, the odd one
    at the end (after), which PyTorch's symmetric padding cannot say."""
    span = (kernel - 1) * dilation + 1
    outputs = -(-size // stride)
    total = max((outputs - 1) * stride + span - size, 0)
    return total // 2, total - total // 2


def gate_blocks(matrix: np.ndarray, order: tuple[int, ...], axis: int = 0) -> np.ndarray:
    """`matrix` with its len(order) equal gate blocks along `axis` taken in `order`."""
    blocks = np.split(np.asarray(matrix), len(order), axis=axis)
    return np.concatenate([blocks[i] for i in order], axis=axis)
