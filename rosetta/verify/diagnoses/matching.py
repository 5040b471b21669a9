"""Every parameter tensor of a segment, matched across the two sides (a helper of the diagnoses, none itself): a
port whose one layer is a whole block of the reference (a Keras layer holding MultiHeadAttention, Dense and
LayerNormalization) names its weights by variable path and keeps them in Keras's layouts, so a port tensor is
brought to PyTorch's form first (Dense kernels (in, out) -> (out, in); MultiHeadAttention's query/key/value kernels
(hidden, heads, head_dim) -> (heads * head_dim, hidden), its output kernel (heads, head_dim, hidden) -> (hidden,
heads * head_dim)), then found among the reference's tensors as it is, or as a known porting bug makes it:
transposed, its rows in another head order, scaled. A fused query/key/value projection (GPT-2's c_attn) is also
read as its three thirds, so three separate projections on the other side are matched against them."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np

from rosetta.verify.diagnoses import CONTAINERS, close, found_in, innermost

ROLES = {"query": ("query", "q", "wq"), "key": ("key", "k", "wk"), "value": ("value", "v", "wv")}
HEAD_COUNTS = ("num_heads", "heads", "n_heads", "n_head", "num_attention_heads")  # how configs name it


@dataclass
class Tensor:
    label: str  # "blocks.0.query.weight", "block_0/attention/query/kernel"
    value: np.ndarray  # in PyTorch's canonical form
    role: str = ""  # query, key or value where its name says so
    part: str = ""  # weight, bias, ...
    layer: str = ""  # the layer that holds it
    covers: tuple = ()  # a conv's tensor with a BatchNorm folded in: (the conv, the BatchNorm) it stands for
    third_of: str = ""  # a third of a fused query/key/value projection: the fused tensor's label
    _sorted: np.ndarray | None = field(default=None, repr=False)

    def sorted_values(self) -> np.ndarray:
        """Its values in order: a permutation or transpose of another tensor has the same (a cheap first test)."""
        if self._sorted is None:
            self._sorted = np.sort(self.value, axis=None)
        return self._sorted


def _tokens(label: str) -> list[str]:
    return [token for token in re.split(r"[/._\-]", label.lower()) if token]


def role_of(label: str) -> str:
    """query, key or value where a tensor's name says so ("attn.q_proj.weight", ".../attention/key/kernel")."""
    for token in reversed(_tokens(label)):
        for role, names in ROLES.items():
            if token in names:
                return role
    return ""


def _part(label: str) -> str:
    last = _tokens(label)[-1] if _tokens(label) else ""
    return {"kernel": "weight"}.get(last, last)


def from_keras(label: str, value: np.ndarray) -> np.ndarray:
    """A Keras variable (by its path) in PyTorch's form; names first, shapes where the names do not tell."""
    value = np.asarray(value, np.float64)
    last = label.split("/")[-1]
    if last == "bias" and value.ndim == 2:  # MultiHeadAttention's (heads, head_dim)
        return value.ravel()
    if last not in ("kernel", "recurrent_kernel"):
        return value
    if value.ndim == 2:  # a Dense's kernel, a recurrent cell's kernel and recurrent kernel: (in, out)
        return value.T
    if value.ndim == 3:
        a, b, c = value.shape
        output = "output" in _tokens(label) or "attention_output" in label.lower()
        if output or (not role_of(label) and c == a * b and a != b * c):
            return value.reshape(a * b, c).T
        if role_of(label) or a == b * c:
            return value.reshape(a, b * c).T
        return np.transpose(value, (2, 1, 0))  # Conv1D (k, in, out)
    if value.ndim >= 4:  # Conv (k..., in, out)
        return np.transpose(value, (value.ndim - 1, value.ndim - 2, *range(value.ndim - 2)))
    return value


def tensors(layers, fold: bool = False) -> list[Tensor]:
    """Every parameter tensor of the layers, once ("block_0" and its sublayer "block_0/attention/query" name the
    same variable "block_0/attention/query/kernel"), in PyTorch's form: a layer of a known kind has its parameters
    in it already, one of unknown kind (a whole Keras block) has them by variable path in Keras's layouts.
    `fold`: also each conv's weight and bias with the BatchNorm after it folded in, as a port that folds them
    holds them."""
    found: dict[str, Tensor] = {}
    names = {layer.name for layer in layers}
    for layer in layers:
        separator = "/" if layer.kind in CONTAINERS or "/" in layer.name else "."
        for name, value in layer.params.items():
            if value is None or np.size(value) == 0 or np.asarray(value).dtype.kind not in "fiu":
                continue
            steps = name.split("/")[:-1]  # a block's variable that a sublayer of the list holds already
            if any(f"{layer.name}/{'/'.join(steps[:n])}" in names for n in range(1, len(steps) + 1)):
                continue
            label = f"{layer.name}{separator}{name}"
            if label in found:
                continue
            canonical = from_keras(label, value) if layer.kind in CONTAINERS else np.asarray(value, np.float64)
            found[label] = Tensor(label, canonical, role_of(label), _part(label), layer.name)
            for third in fused_thirds(found[label]):
                found[third.label] = third
    if fold:
        from rosetta.verify.diagnoses.folded_batchnorm import (
            _conv_then_batchnorm,
            folded,
        )

        for conv, bn in _conv_then_batchnorm(layers):
            weight, bias = folded(conv, bn, bn.config.get("epsilon", 0.0))
            for part, value in (("weight", weight), ("bias", bias)):
                label = f"{conv.name}.{part} with {bn.name} folded in"
                found[label] = Tensor(label, value, "", part, conv.name, (conv.name, bn.name))
    return list(found.values())


FUSED = ("c_attn", "qkv", "in_proj", "query_key_value", "wqkv", "qkv_proj")  # how a fused projection is named


def fused_thirds(tensor: Tensor) -> list[Tensor]:
    """A projection holding query, key and value in one tensor (GPT-2's c_attn, PyTorch's in_proj_weight, a qkv
    Linear) as three tensors of those roles, so that a port that keeps three projections is matched against it:
    (3E, E) as a Linear keeps it (out, in), (E, 3E) as Hugging Face's Conv1D keeps it (in, out), a bias (3E,)."""
    label = tensor.label.lower()
    if tensor.role or not any(name in label for name in FUSED):
        return []
    value = tensor.value
    if value.ndim == 2 and value.shape[1] == 3 * value.shape[0]:
        value = value.T
    if not (value.ndim in (1, 2) and value.shape[0] % 3 == 0 and (value.ndim == 1 or value.shape[0] == 3 *
                                                                   value.shape[1])):
        return []
    return [Tensor(f"{tensor.label} (the {role} third of the fused projection)", part, role, tensor.part,
                   tensor.layer, third_of=tensor.label) for role, part in zip(("query", "key", "value"),
                                                                           np.split(value, 3))]


def head_count(layers) -> int | None:
    """The number of attention heads a layer's settings say, where one does."""
    for layer in layers:
        for _, value in found_in(layer.config, lambda key: key.lower() in HEAD_COUNTS):
            if isinstance(value, int) and not isinstance(value, bool) and value > 1:
                return value
    return None


def relation(mine: Tensor, theirs: Tensor) -> tuple | None:
    """How a port tensor is the reference's: ("equal",), ("transposed",) (a square matrix), ("flipped",) (a
    kernel reversed along every spatial axis), ("heads", h, d) (its rows read as (d, h) where the reference's are
    (h, d)), ("scaled", s), or None."""
    a, b = mine.value, theirs.value
    if a.shape == b.shape and close(a, b):
        return ("equal",)
    permuted = a.shape == b.shape and close(mine.sorted_values(), theirs.sorted_values())
    spatial = tuple(range(2, a.ndim))
    if permuted and spatial and any(a.shape[axis] > 1 for axis in spatial) and close(a, np.flip(b, spatial)):
        return ("flipped",)
    if permuted and a.ndim == 2 and a.shape[0] == a.shape[1] and close(a, b.T):
        return ("transposed",)
    if permuted and a.ndim in (1, 2):
        rows = a.shape[0]
        for heads in range(2, rows):
            if rows % heads == 0 and close(a, b.reshape(heads, rows // heads, *b.shape[1:]).swapaxes(0, 1)
                                           .reshape(b.shape)):
                return ("heads", heads, rows // heads)
    norm = float(np.sum(b * b)) if a.shape == b.shape else 0.0
    if norm > 0:
        scale = float(np.sum(a * b)) / norm
        if scale and not math.isclose(scale, 1.0, rel_tol=1e-4) and close(a, scale * b):
            return ("scaled", scale)
    return None


def counterpart(mine: Tensor, index: int, theirs: list[Tensor], ports: list[Tensor]) -> Tensor | None:
    """The reference tensor a port tensor stands for: the one of its role and part where both names say a role,
    else the one at its place among the tensors of its shape and part (query, key, value come in one order)."""
    if mine.role:
        named = [t for t in theirs if t.role == mine.role and t.part == mine.part and t.value.shape == mine.value.shape]
        if named:
            return named[0]
    alike = lambda tensor, other: tensor.part == other.part and tensor.value.shape == other.value.shape  # noqa: E731
    place = sum(1 for other in ports[:index] if alike(other, mine))
    candidates = [t for t in theirs if alike(t, mine)]
    return candidates[place] if place < len(candidates) else None


def difference(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(a - b))) if a.shape == b.shape else math.inf


def nearest(mine: Tensor, theirs: list[Tensor]) -> Tensor | None:
    """The reference tensor of its shape closest to a port tensor (the largest difference smallest)."""
    alike = [t for t in theirs if t.value.shape == mine.value.shape]
    return min(alike, key=lambda t: difference(mine.value, t.value)) if alike else None


def segment_tensors(references, ports) -> tuple[list[Tensor], list[Tensor]]:
    """(reference tensors, with any BatchNorm folded into its conv too; port tensors), innermost layers first so
    that a tensor is named by the layer that holds it."""
    def order(layers):  # by identity: a Layer's fields hold arrays, which == cannot compare
        inner = innermost(layers)
        held = {id(x) for x in inner}
        return inner + [x for x in layers if id(x) not in held]

    return tensors(order(references), fold=True), tensors(order(ports))
