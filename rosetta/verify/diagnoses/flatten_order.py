"""A Dense after a flatten of feature maps, its weights in the other layout's row order: NHWC flatten before a
Dense copied from an NCHW model (or the reverse)."""

import numpy as np

from rosetta.verify.diagnoses import close, diagnosis


def _feature_map(layers, before: int):
    """The last 3-D to 5-D output before layer `before`, as (channels-last?, its shape)."""
    for layer in reversed(layers[:before]):
        if 3 <= np.ndim(layer.output) <= 5:
            return layer.channels_last, np.shape(layer.output)
    return None


def _maps(reference, port, context):
    """(the reference Dense's weight, its feature map's (channels-last?, shape), the port's) where both Dense
    layers follow a flattened feature map whose size is the weight's columns; None elsewhere."""
    if reference.kind != "dense" or port.kind != "dense" or "at" not in context:
        return None
    i, j = context["at"]
    ref_map, port_map = _feature_map(context["reference"], i), _feature_map(context["port"], j)
    wr = reference.params.get("weight")
    if ref_map is None or port_map is None or wr is None or int(np.prod(ref_map[1][1:])) != np.shape(wr)[1]:
        return None
    return wr, ref_map, port_map


def _other_order(wr, ref_map):
    """`wr` with its columns in the other layout's flatten order (NCHW <-> NHWC of the map `ref_map`)."""
    last, shape = ref_map
    channels = shape[-1] if last else shape[1]
    spatial = shape[1:-1] if last else shape[2:]
    first_order = np.arange(np.shape(wr)[1]).reshape(channels, *spatial)  # index of each (c, h, w) in C,H,W order
    to_last = np.transpose(first_order, (*range(1, len(spatial) + 1), 0)).ravel()
    return wr[:, np.argsort(to_last)] if last else wr[:, to_last]


def in_port_order(reference, port, context):
    """The reference Dense's weight with its columns in the port's flatten order, where the two flatten feature
    maps laid out otherwise (a correct NHWC port of an NCHW Dense holds exactly this); None elsewhere."""
    found = _maps(reference, port, context)
    if found is None or found[1][0] == found[2][0]:
        return None
    return _other_order(found[0], found[1])


@diagnosis("flatten order")
def flatten_order(reference, port, context):
    found = _maps(reference, port, context)
    wp = port.params.get("weight")
    if found is None or wp is None or np.shape(found[0]) != np.shape(wp):
        return None
    wr, (last, _), port_map = found
    if last == port_map[0] and close(wp, _other_order(wr, found[1])):
        return "flatten order: the Dense weights are permuted for the other layout, though both flatten alike"
    if last != port_map[0] and close(wp, wr):
        here = "NHWC (H, W, C)" if port_map[0] else "NCHW (C, H, W)"
        there = "NHWC" if last else "NCHW"
        return (f"flatten order: the port flattens {here} before this Dense but kept the reference's {there} row "
                "order of its weights; permute the weight rows (or flatten in the reference's order)")
    return None
