"""A BatchNorm folded into the conv before it (the port has the conv alone, the reference conv then BatchNorm):
w' = w * g / sqrt(var + eps), b' = (b - mean) * g / sqrt(var + eps) + beta. Folded with another epsilon than the
reference's (Keras's 1e-3 for PyTorch's 1e-5), not folded at all, or with a scale, shift, mean or variance that is
not the reference's: the port conv's weights say which."""

import numpy as np

from rosetta.verify.diagnoses import close, diagnosis, innermost, segment

# the epsilons people fold with where the reference's does not reproduce the port's weights: Keras's
# BatchNormalization default, PyTorch's, keras.applications ResNet's, ConvNeXt's and ViT's, BERT's, none
USUAL_EPSILONS = (1e-3, 1e-5, 1.001e-5, 1e-6, 1e-12, 0.0)


def _conv_then_batchnorm(layers) -> list:
    """(conv, the BatchNorm after it) of each conv that a BatchNorm follows before the next conv."""
    found, conv = [], None
    for layer in innermost(layers):
        if layer.kind == "conv":
            conv = layer if layer.params.get("weight") is not None else None
        elif layer.kind == "batchnorm" and conv is not None and layer.params.get("var") is not None:
            found.append((conv, layer))
            conv = None
    return found


def _parts(conv, bn):
    """(w, b, g, beta, mean, var) in float64, a missing bias, scale or shift as its neutral value."""
    w = np.asarray(conv.params["weight"], np.float64)
    out = w.shape[0]
    value = lambda params, name, neutral: np.asarray(params[name], np.float64) \
        if params.get(name) is not None else np.full(out, neutral)  # noqa: E731
    return (w, value(conv.params, "bias", 0.0), value(bn.params, "scale", 1.0), value(bn.params, "shift", 0.0),
            np.asarray(bn.params["mean"], np.float64), np.asarray(bn.params["var"], np.float64))


def folded(conv, bn, epsilon: float):
    """The conv's (weight, bias) with the BatchNorm after it folded in with `epsilon`."""
    w, b, g, beta, mean, var = _parts(conv, bn)
    factor = g / np.sqrt(var + epsilon)
    return w * factor.reshape(-1, *[1] * (w.ndim - 1)), (b - mean) * factor + beta


def _figure(a, b) -> str:
    return f"{float(np.max(np.abs(np.asarray(a) - np.asarray(b)))):.3g}"


def _why_not(conv, bn, epsilon: float, mine_w, mine_b) -> str:
    """Which of scale/variance (the weights' factor per channel) and shift/mean (the bias) the port's folded
    weights do not reproduce, with the figures they imply."""
    w, b, g, beta, mean, var = _parts(conv, bn)
    flat, port_flat = w.reshape(len(w), -1), np.asarray(mine_w, np.float64).reshape(len(w), -1)
    norms = np.sum(flat * flat, axis=1)
    factor = np.where(norms > 0, np.sum(flat * port_flat, axis=1) / np.where(norms > 0, norms, 1.0), 0.0)
    said = []
    if not close(port_flat, flat * factor[:, None]):
        said.append(f"{conv.name}'s weights here are not the reference conv's times a factor per output channel "
                    f"(they differ by up to {_figure(port_flat, flat * factor[:, None])} from the nearest)")
    elif not close(mine_w, folded(conv, bn, epsilon)[0]):
        safe = np.where(factor != 0, factor, np.nan)
        said.append(f"its weights imply a scale differing from {bn.name}'s by up to "
                    f"{_figure(np.nan_to_num(factor * np.sqrt(var + epsilon) - g), 0)} or a variance differing by "
                    f"up to {_figure(np.nan_to_num((g / safe) ** 2 - epsilon - var), 0)}")
    if factor.any() and not close(mine_b, (b - mean) * factor + beta):
        safe = np.where(factor != 0, factor, np.nan)
        said.append(f"its bias implies a shift differing from {bn.name}'s by up to "
                    f"{_figure(np.asarray(mine_b) - (b - mean) * factor, beta)} or a running mean differing by up to "
                    f"{_figure(np.nan_to_num(b - (np.asarray(mine_b) - beta) / safe - mean), 0)}")
    return "; ".join(said)


def _estimated_epsilon(conv, bn, mine_w) -> float | None:
    """The epsilon the port's weights were folded with, solved per channel from their factor g / sqrt(var + eps)
    (the median over channels); None where the weights give none."""
    w, _, g, _, _, var = _parts(conv, bn)
    flat, port_flat = w.reshape(len(w), -1), np.asarray(mine_w, np.float64).reshape(len(w), -1)
    norms = np.sum(flat * flat, axis=1)
    factor = np.sum(flat * port_flat, axis=1) / np.where(norms > 0, norms, 1.0)
    usable = (norms > 0) & (factor != 0)
    if not usable.any():
        return None
    estimate = float(np.median((g[usable] / factor[usable]) ** 2 - var[usable]))
    return estimate if estimate >= 0 else None


@diagnosis("folded BatchNorm")
def folded_batchnorm(reference, port, context):
    references, ports = segment(reference, port, context)
    if any(layer.kind == "batchnorm" for layer in ports):
        return None
    pairs = _conv_then_batchnorm(references)
    convs = [layer for layer in innermost(ports) if layer.kind == "conv" and layer.params.get("weight") is not None]
    for conv, bn in pairs:
        mine = next((c for c in convs if np.shape(c.params["weight"]) == np.shape(conv.params["weight"])), None)
        if mine is None:
            continue
        convs.remove(mine)
        mine_w = np.asarray(mine.params["weight"], np.float64)
        mine_b = np.asarray(mine.params["bias"], np.float64) if mine.params.get("bias") is not None \
            else np.zeros(len(mine_w))
        theirs = bn.config.get("epsilon", 0.0)
        if all(close(a, b) for a, b in zip((mine_w, mine_b), folded(conv, bn, theirs))):
            continue
        if all(close(a, b) for a, b in zip((mine_w, mine_b), _parts(conv, bn)[:2])):
            return (f"BatchNorm {bn.name} not folded: {mine.name} here holds the reference conv {conv.name}'s "
                    "weights as they are, and the port has no BatchNorm after it")
        estimate = _estimated_epsilon(conv, bn, mine_w)
        for epsilon in (*USUAL_EPSILONS, *([estimate] if estimate is not None else [])):
            if all(close(a, b) for a, b in zip((mine_w, mine_b), folded(conv, bn, epsilon))):
                return (f"BatchNorm {bn.name} folded into {mine.name} with epsilon {epsilon:.4g} here, the "
                        f"reference's is {theirs:g}")
        return (f"BatchNorm {bn.name} folded into {mine.name}: no epsilon reproduces the port's weights; "
                + (_why_not(conv, bn, theirs, mine_w, mine_b) or "each part agrees alone, the fold as a whole does not"))
    return None
