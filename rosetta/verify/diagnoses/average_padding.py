"""Average pooling that counts its padded zeros on one side only: PyTorch's AvgPool2d(padding=p) divides by the
whole window (count_include_pad=True, its default), Keras's AveragePooling2D(padding="same") by the real values
in it. Both sides' settings give the same pads, so which count each uses is read from the layer's own input and
output: the window average recomputed both ways, and the one that gives the layer's output is its rule."""

import numpy as np

from rosetta.verify.diagnoses import diagnosis, segment


def _counts_padding(layer):
    """True where the layer divides by the whole window, False where by the real values, None where not known."""
    config = layer.config
    pads, kernel, strides = config.get("pads"), config.get("kernel"), config.get("strides")
    if config.get("type") != "average" or not layer.inputs or not pads or len(pads) != 2 or \
            not any(a or b for a, b in pads):
        return None
    x, y = np.asarray(layer.inputs[0], np.float64), np.asarray(layer.output, np.float64)
    if layer.channels_last:
        x, y = np.moveaxis(x, -1, 1), np.moveaxis(y, -1, 1)
    if x.ndim != 4 or y.ndim != 4:
        return None
    padded = np.pad(x, ((0, 0), (0, 0), tuple(pads[0]), tuple(pads[1])))
    ones = np.pad(np.ones_like(x), ((0, 0), (0, 0), tuple(pads[0]), tuple(pads[1])))
    rows, columns = y.shape[2], y.shape[3]
    total, count = np.zeros(y.shape), np.zeros(y.shape)
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            window = (slice(None), slice(None), slice(i, i + strides[0] * rows, strides[0]),
                      slice(j, j + strides[1] * columns, strides[1]))
            part, real = padded[window], ones[window]
            if part.shape[2:] != (rows, columns):
                return None
            total += part
            count += real
    whole, real = total / (kernel[0] * kernel[1]), total / np.maximum(count, 1)
    scale = max(float(np.max(np.abs(y), initial=0.0)), 1e-12)
    by_whole, by_real = np.max(np.abs(whole - y)) / scale, np.max(np.abs(real - y)) / scale
    if min(by_whole, by_real) > 1e-4 or abs(by_whole - by_real) < 1e-3:
        return None
    return bool(by_whole < by_real)


def _said(counts: bool) -> str:
    return "the padded zeros counted (count_include_pad=True)" if counts else \
        "only the real values counted (count_include_pad=False, Keras's 'same')"


@diagnosis("average pooling padding count")
def average_padding(reference, port, context):
    references, ports = segment(reference, port, context)
    theirs = next((layer for layer in references if layer.kind == "pool"), None)
    mine = next((layer for layer in ports if layer.kind == "pool"), None)
    if theirs is None or mine is None:
        return None
    a, b = _counts_padding(theirs), _counts_padding(mine)
    if a is None or b is None or a == b:
        return None
    fix = " (pad with ZeroPadding2D, then pool 'valid')" if a else ""
    return f"average pooling count: {_said(b)} here, {_said(a)} in the reference{fix}"
