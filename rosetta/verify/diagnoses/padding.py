"""Padding that differs: 'same' at stride 2 pads (0, 1) in TensorFlow/Keras, PyTorch pads symmetrically."""

from rosetta.verify.diagnoses import diagnosis


def _pads(pads) -> str:
    return ", ".join(f"({a},{b})" for a, b in pads)


@diagnosis("padding")
def padding(reference, port, context):
    if reference.kind not in ("conv", "pool") or port.kind != reference.kind:
        return None
    mine, theirs = port.config.get("pads"), reference.config.get("pads")
    if not isinstance(mine, list) or not isinstance(theirs, list):
        return None
    mine, theirs = [tuple(p) for p in mine], [tuple(p) for p in theirs]
    if mine == theirs:
        return None
    strides = port.config.get("strides") or []
    how = f"'{port.config['padding']}'" if port.config.get("padding") else "its padding"
    at = f" at stride {strides[0]}" if strides and len(set(strides)) == 1 and strides[0] > 1 else ""
    return f"padding: {how}{at} pads {_pads(mine)} here (before, after per axis), the reference {_pads(theirs)}"
