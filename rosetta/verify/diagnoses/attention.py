"""Attention's parameter bugs, read from the segment's dense weights matched across sides (diagnoses.matching):
query and key projections swapped; a projection kernel copied without its transpose (a square matrix: the shape
cannot tell); heads split in another order (the output rows head-major on one side, head-minor on the other); the
1/sqrt(head_dim) scale folded into the query weights, or missing from them where the reference folds it.
Rotary embeddings and causal-mask shifts have no parameters: no weight can tell them."""

import math

from rosetta.verify.diagnoses import diagnosis, segment
from rosetta.verify.diagnoses.matching import (
    counterpart,
    head_count,
    relation,
    segment_tensors,
)

MOST = 3  # findings said at most (a block holds several projections; the first few tell the bug)


def _swapped(mine, theirs, ports) -> list[str]:
    """Two port tensors each equal to the reference tensor the other stands for (and those two differ)."""
    said, seen = [], set()
    stands_for = {id(t): counterpart(t, i, theirs, ports) for i, t in enumerate(ports)}
    for i, a in enumerate(ports):
        for b in ports[i + 1:]:
            ra, rb = stands_for[id(a)], stands_for[id(b)]
            if ra is None or rb is None or ra is rb or relation(ra, rb) == ("equal",):
                continue
            if relation(a, rb) == ("equal",) and relation(b, ra) == ("equal",):
                names = f"{a.role} and {b.role} projections" if a.role and b.role else f"{a.label} and {b.label}"
                if (names, a.part) in seen:
                    continue
                seen.add((names, a.part))
                said.append(f"{names} swapped: {a.label} here holds the reference's {rb.label}, {b.label} its "
                            f"{ra.label}")
    return said


def _heads(heads: int, size: int, count: int | None) -> str:
    if count == heads:
        return f"head-minor here ({size} per head, {heads} heads interleaved), head-major in the reference"
    if count == size:
        return f"head-major here ({size} heads of {heads}), head-minor in the reference"
    return f"rows read as ({size}, {heads}) here, ({heads}, {size}) in the reference"


def _scale(tensor, reference, scale: float) -> str | None:
    """The attention scale 1/sqrt(d) folded into query weights (or taken out of them), d a whole head size."""
    if tensor.role != "query":
        return None
    for factor, folded in ((scale, True), (1 / scale, False)):
        size = round(1 / factor ** 2) if factor > 0 else 0
        if size > 1 and math.isclose(factor, size ** -0.5, rel_tol=1e-4):
            if folded:
                return (f"attention scale: {tensor.label} is the reference's {reference.label} x 1/sqrt({size}) "
                        f"({scale:.4g}): the 1/sqrt(head_dim) scale folded into the query weights here")
            return (f"attention scale: {tensor.label} is the reference's {reference.label} x sqrt({size}) "
                    f"({scale:.4g}): the 1/sqrt(head_dim) scale the reference folds into its query weights is "
                    "missing here")
    return None


@diagnosis("attention parameters")
def attention(reference, port, context):
    references, ports_side = segment(reference, port, context)
    theirs, mine = segment_tensors(references, ports_side)
    if not theirs or not mine:
        return None
    said = _swapped(mine, theirs, mine)
    count = head_count(ports_side) or head_count(references)
    for index, tensor in enumerate(mine):
        if any(relation(tensor, other) == ("equal",) for other in theirs):
            continue
        expected = counterpart(tensor, index, theirs, mine)
        for other in [expected] * (expected is not None) + [t for t in theirs if t is not expected]:
            found = relation(tensor, other)
            if found is None:
                continue
            if found[0] == "transposed":
                said.append(f"{tensor.label} transposed: it holds the reference's {other.label} transposed (square, "
                            "so its shape agrees); a Dense kernel is the weight transposed, (in, out)")
            elif found[0] == "heads":
                said.append(f"heads split in another order: {tensor.label} holds the reference's {other.label} with "
                            f"its output rows {_heads(found[1], found[2], count)}")
            elif found[0] == "scaled" and _scale(tensor, other, found[1]):
                said.append(_scale(tensor, other, found[1]))
            else:
                continue
            break
    said = list(dict.fromkeys(said))
    return "; ".join(said[:MOST]) if said else None
