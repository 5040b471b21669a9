"""No bug class recognised across the segment: the first port tensor that equals none of the reference's (in
PyTorch's form, a BatchNorm folded into its conv counted as the port would hold it), with the nearest one and how
far it is; or the reference's tensor that the port does not hold. The last resort, after `parameters` (which reads
the end pair by parameter name)."""

import re

from rosetta.verify.diagnoses import diagnosis, segment
from rosetta.verify.diagnoses.matching import (
    difference,
    nearest,
    relation,
    segment_tensors,
)


@diagnosis("unmatched tensors")
def unmatched_tensors(reference, port, context):
    references, ports = segment(reference, port, context)
    theirs, mine = segment_tensors(references, ports)
    held = set()
    for tensor in mine:
        found = [(other, relation(tensor, other)) for other in theirs]
        equal = [other for other, how in found if how == ("equal",)]
        held.update(id(other) for other in equal)
        if equal:
            continue
        flipped = next((other for other, how in found if how == ("flipped",)), None)
        if flipped:
            return (f"kernel flipped in space: {tensor.label} is the reference's {flipped.label} reversed "
                    "along its spatial axes (a kernel flipped: convolution against correlation)")
        scaled = next(((other, how[1]) for other, how in found if how and how[0] == "scaled"), None)
        if scaled:
            return (f"no known porting bug recognised; {tensor.label} is the reference's {scaled[0].label} x "
                    f"{scaled[1]:.4g}")
        close_by = nearest(tensor, theirs)
        where = (f"nearest {close_by.label}, differs by up to {difference(tensor.value, close_by.value):.3g}"
                 if close_by else f"no tensor of the reference has its shape {tuple(tensor.value.shape)}")
        return f"no known porting bug recognised; {tensor.label} matches no tensor of the reference ({where})"
    return _not_held(theirs, held) if mine else None


def _not_held(theirs, held: set) -> str | None:
    """The reference's first tensor that no port tensor equals (a bias left out); a conv and BatchNorm whose fold
    the port holds count as held, and so does a tensor equal to a held one (two zero biases)."""
    covered = {layer for tensor in theirs if id(tensor) in held for layer in tensor.covers}
    # a fused query/key/value projection is held as one tensor or as its three thirds (diagnoses.matching)
    held_labels = {tensor.label for tensor in theirs if id(tensor) in held}
    thirds = {}
    for tensor in theirs:
        if tensor.third_of:
            thirds.setdefault(tensor.third_of, []).append(tensor.label in held_labels)
    for tensor in theirs:
        # an LSTM's two biases (PyTorch's bias_ih and bias_hh), held by the port as their sum (bias_l0)
        two = re.search(r"bias_(ih|hh)(_l\d+(?:_reverse)?)$", tensor.label)
        if two and tensor.label[:two.start()] + "bias" + two.group(2) in held_labels:
            continue
        if id(tensor) in held or tensor.covers or tensor.layer in covered or \
                tensor.third_of in held_labels or (tensor.label in thirds and all(thirds[tensor.label])) or \
                any(id(other) in held and relation(tensor, other) == ("equal",) for other in theirs):
            continue
        return (f"no known porting bug recognised; the reference's {tensor.label} matches no tensor of the port "
                "(the port holds nothing equal to it)")
    return None
