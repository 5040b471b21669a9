"""A normalisation's epsilon that differs: Keras's BatchNormalization and LayerNormalization default to 1e-3,
PyTorch's to 1e-5. Read wherever it sits on each side of the segment: a norm layer's own setting, or a block's
(layer_norm_epsilon, norm_epsilon, epsilon, in nested settings), since a port may hold the whole block as one
layer."""

import math

from rosetta.verify.diagnoses import diagnosis, found_in, innermost, segment


def is_epsilon(key: str) -> bool:
    """A setting's name that says a normalisation's epsilon ("eps", "epsilon", "layer_norm_epsilon", ...)."""
    key = key.lower()
    return key in ("eps", "epsilon") or key.endswith(("_eps", "_epsilon"))


def epsilons(layers) -> list[tuple[str, float]]:
    """(where, value) of every epsilon setting of the layers: "bn1" for a norm layer's own, "block_1.epsilon"
    for one in a block's settings."""
    found = []
    for layer in innermost(layers):
        for where, value in found_in(layer.config, is_epsilon):
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                own = where == "epsilon" and layer.kind in ("batchnorm", "layernorm")
                found.append((layer.name if own else f"{layer.name}.{where}", float(value)))
    return found


def _same(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-3)


@diagnosis("epsilon")
def epsilon(reference, port, context):
    references, ports = segment(reference, port, context)
    mine, theirs = epsilons(ports), epsilons(references)
    if not mine or not theirs:
        return None
    odd = [(where, value) for where, value in mine if not any(_same(value, other) for _, other in theirs)]
    if not odd:
        return None
    values = lambda found: ", ".join(dict.fromkeys(f"{value:g}" for _, value in found))  # noqa: E731
    places = lambda found: ", ".join(dict.fromkeys(where for where, _ in found))  # noqa: E731
    return (f"epsilon {values(odd)} here, {values(theirs)} in the reference ({places(odd)} here; "
            f"{places(theirs)} in the reference)")
