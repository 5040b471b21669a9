"""A GroupNorm with another number of groups (Keras's GroupNormalization(groups=...) against nn.GroupNorm(G, C)):
PyTorch's settings do not travel with the layer, so each side's group count is read from its own input and
output: the count whose normalisation (with its own scale and shift) gives the layer's output."""

import numpy as np

from rosetta.verify.diagnoses import diagnosis, segment


def _scale_shift(layer):
    params = layer.params
    scale = next((params[k] for k in ("weight", "gamma", "scale") if params.get(k) is not None), None)
    shift = next((params[k] for k in ("bias", "beta", "shift") if params.get(k) is not None), None)
    return scale, shift


def groups_of(layer):
    """The group count that reproduces the layer's output from its input, None where none or several do."""
    if "groupnorm" not in layer.op.lower().replace("normalization", "norm") or not layer.inputs:
        return None
    x, y = np.asarray(layer.inputs[0], np.float64), np.asarray(layer.output, np.float64)
    if x.shape != y.shape or x.ndim < 3:
        return None
    if layer.channels_last:
        x, y = np.moveaxis(x, -1, 1), np.moveaxis(y, -1, 1)
    channels = x.shape[1]
    scale, shift = _scale_shift(layer)
    scale = np.ones(channels) if scale is None else np.asarray(scale, np.float64).ravel()
    shift = np.zeros(channels) if shift is None else np.asarray(shift, np.float64).ravel()
    if scale.size != channels or shift.size != channels:
        return None
    shape = (1, channels) + (1,) * (x.ndim - 2)
    fits = []
    for groups in (g for g in range(1, channels + 1) if channels % g == 0):
        grouped = x.reshape(x.shape[0], groups, -1)
        normal = (grouped - grouped.mean(-1, keepdims=True)) / np.sqrt(grouped.var(-1, keepdims=True) + 1e-5)
        made = normal.reshape(x.shape) * scale.reshape(shape) + shift.reshape(shape)
        if np.max(np.abs(made - y)) <= 1e-2 * max(float(np.max(np.abs(y))), 1e-12):  # any epsilon up to ~1e-3
            fits.append(groups)
    return fits[0] if len(fits) == 1 else None


@diagnosis("group count")
def group_count(reference, port, context):
    references, ports = segment(reference, port, context)
    theirs = next((layer for layer in references if "groupnorm" in layer.op.lower()), None)
    mine = next((layer for layer in ports if "groupnorm" in layer.op.lower().replace("normalization", "norm")), None)
    if theirs is None or mine is None:
        return None
    a, b = groups_of(theirs), groups_of(mine)
    if a is None or b is None or a == b:
        return None
    return f"groups: {b} here, {a} in the reference (each side's count read from its own input and output)"
