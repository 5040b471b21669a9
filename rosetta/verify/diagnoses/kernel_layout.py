"""Convolution kernels copied across layouts wrongly: H and W swapped, or flipped (convolution vs correlation)."""

import numpy as np

from rosetta.verify.diagnoses import close, diagnosis


@diagnosis("kernel layout")
def kernel_layout(reference, port, context):
    if reference.kind != "conv" or port.kind != "conv":
        return None
    wr, wp = reference.params.get("weight"), port.params.get("weight")
    if wr is None or wp is None or close(wr, wp) or np.ndim(wr) != 4:
        return None
    if np.shape(wp) == np.shape(np.swapaxes(wr, 2, 3)) and close(wp, np.swapaxes(wr, 2, 3)):
        return "kernel transposed in H and W: the weights were copied OIHW -> HWIO with H and W swapped"
    if close(wp, wr[:, :, ::-1, ::-1]):
        return "kernel flipped in H and W: a convolution's weights used as a cross-correlation's (or the reverse)"
    return None
