"""A causal mask shifted by one: position q attends to keys up to q + 1 (it sees the next token: a `triu(..., 1)`
written `triu(..., 2)`, or `<` for `<=`), or only to keys before q (its own key masked). No weight can tell it;
the attention probabilities do: a softmax layer's output (batch, heads, queries, keys) is exactly 0 where the mask
removed a key, so the diagonal from which every key is removed is read from it, a padding mask's columns apart.
Named where the port's diagonal is not the causal one (keys after q) and the reference's is, or the reference
shows none (a reference that computes its softmax as a function, Hugging Face's)."""

from __future__ import annotations

import numpy as np

from rosetta.verify.diagnoses import diagnosis, segment

OFFSETS = (-2, -1, 0, 1, 2)  # the diagonals tried: key k removed from query q where k > q + offset


def offset_of(probabilities) -> int | None:
    """The diagonal of a causal mask in attention probabilities (..., Q, K), Q == K: the least offset o whose
    keys k > q + o are all removed (for every query that keeps a key) while some key k == q + o is not; None where
    the tensor shows no causal mask (a bidirectional encoder's)."""
    p = np.asarray(probabilities)
    if p.ndim < 2 or p.shape[-1] != p.shape[-2] or p.shape[-1] < 3 or p.dtype.kind != "f":
        return None
    size = p.shape[-1]
    removed = (p == 0).reshape(-1, size, size)
    rows = ~removed.all(axis=-1)  # a query with every key removed (padding, or an own key masked at q = 0)
    q, k = np.indices((size, size))
    for offset in OFFSETS:
        # a query that such a mask leaves no key (q < -offset) holds whatever a framework gives a row all masked
        # (uniform, or zeros): not read
        kept = rows[..., None] & (q >= -offset)[None]
        above = (k > q + offset)[None] & kept
        if not above.any() or not removed[above].all():
            continue
        boundary = (k == q + offset)[None] & kept
        return offset if boundary.any() and not removed[boundary].all() else None
    return None


def _softmaxes(layers) -> list:
    return [layer for layer in layers if "softmax" in (layer.name + layer.op).lower()]


def _said(layers) -> tuple[int, str] | None:
    for layer in _softmaxes(layers):
        found = offset_of(layer.output)
        if found is not None:
            return found, layer.name
    return None


def _words(offset: int) -> str:
    if offset == 0:
        return "query q attends to keys up to q"
    if offset > 0:
        return f"query q attends to keys up to q + {offset} (it sees {'the next token' if offset == 1 else 'later tokens'})"
    return f"query q attends to keys up to q - {-offset} (its own key masked)"


@diagnosis("causal mask")
def causal_mask(reference, port, context):
    references, ports = segment(reference, port, context)
    mine = _said(ports)
    if mine is None or mine[0] == 0:
        return None
    theirs = _said(references) or _said(context.get("reference", []))
    if theirs is not None and theirs[0] != 0:
        return None
    shift = "by one" if abs(mine[0]) == 1 else f"by {abs(mine[0])}"
    where = f"; {_words(0)} in the reference ({theirs[1]})" if theirs else ""
    return f"causal mask shifted {shift}: {_words(mine[0])} here ({mine[1]}){where}"
