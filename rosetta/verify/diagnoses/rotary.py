"""Rotary position embeddings paired in another order: the classic Llama port bug, rotate_half (Hugging Face and
keras-hub: dimension i turns with i + d/2, "half-split") against pairs of neighbours (Meta's original code and
GPT-J: 2i turns with 2i + 1, "interleaved"). No weight can tell it; the values do. Each side's pairing is read
from what its model shows of the rotation:
- a layer that rotates (its input and output of one shape, a rotary or rope layer by name): a rotation keeps the
  length of each pair it turns, so the pairing whose pair lengths it keeps, and not the other's, is its own;
- a table of angles (Hugging Face's rotary_emb returns cos and sin, computed once for the model): half-split
  repeats its first half in its second, interleaved repeats each value in its neighbour.
Named only where both sides say a pairing, they differ, and the segment holds the attention that applies it."""

from __future__ import annotations

import numpy as np

from rosetta.verify.diagnoses import diagnosis, segment

HALF, PAIRS = "half-split", "interleaved"
WHAT = {HALF: "half-split (dimension i turns with i + d/2: rotate_half)",
        PAIRS: "interleaved (dimension 2i turns with 2i + 1)"}


def is_rotary(name: str) -> bool:
    name = name.lower()
    return "rotary" in name or "rope" in name.replace("/", ".").split(".")[-1]


def _halves(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    d = x.shape[-1] // 2
    return x[..., :d], x[..., d:]


def _neighbours(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return x[..., 0::2], x[..., 1::2]


def _keeps(split, x: np.ndarray, y: np.ndarray) -> bool:
    a, b = split(x)
    c, d = split(y)
    before, after = a * a + b * b, c * c + d * d
    return bool(np.allclose(before, after, rtol=1e-4, atol=1e-6 * max(float(np.max(before, initial=0.0)), 1e-30)))


def pairing(layer) -> str | None:
    """The pairing a rotary layer shows (HALF, PAIRS), or None where its values cannot tell."""
    if not is_rotary(layer.name) and not is_rotary(layer.op):
        return None
    y = np.asarray(layer.output, np.float64)
    if y.ndim == 0 or y.shape[-1] < 4 or y.shape[-1] % 2:
        return None
    x = next((np.asarray(v, np.float64) for v in layer.inputs if np.shape(v) == y.shape
              and np.asarray(v).dtype.kind == "f"), None)
    if x is not None:  # a rotation: the pairs whose lengths it keeps
        if np.allclose(x, y):
            return None
        half, pairs = _keeps(_halves, x, y), _keeps(_neighbours, x, y)
    else:  # a table of cos (or sin): which values repeat
        half, pairs = (bool(np.allclose(*split(y))) for split in (_halves, _neighbours))
    return HALF if half and not pairs else PAIRS if pairs and not half else None


def _side(layers) -> tuple[str, str] | None:
    """(pairing, the layer that shows it) of the first rotary layer whose values tell."""
    for layer in layers:
        found = pairing(layer)
        if found:
            return found, layer.name
    return None


@diagnosis("rotary pairing")
def rotary(reference, port, context):
    references, ports = segment(reference, port, context)
    names = [layer.name for layer in references + ports]
    everything = context.get("port", []) + context.get("reference", [])
    attention = any(is_rotary(name) or any(is_rotary(other.name) and other.name.startswith((name + "/", name + "."))
                                           for other in everything) for name in names)
    if not attention:
        return None
    mine = _side(ports) or _side(context.get("port", []))
    theirs = _side(references) or _side(context.get("reference", []))
    if not mine or not theirs or mine[0] == theirs[0]:
        return None
    return (f"rotary embeddings paired in another order: {WHAT[mine[0]]} here ({mine[1]}), {WHAT[theirs[0]]} in "
            f"the reference ({theirs[1]})")
