"""A stride on another conv of the same stack: ResNet v1 strides its bottleneck's first 1x1 conv, v1.5
(torchvision) its 3x3. The two sides' outputs differ in size inside the segment, so this reads the convs' weight
shapes and strides, never their outputs."""

import numpy as np

from rosetta.verify.diagnoses import diagnosis, innermost, segment


def _convs(layers) -> list:
    """(layer, weight shape, strides) of each conv of the segment that says both, in execution order."""
    return [(layer, np.shape(layer.params["weight"]), tuple(layer.config["strides"])) for layer in innermost(layers)
            if layer.kind == "conv" and layer.params.get("weight") is not None and layer.config.get("strides")]


def _kernel(shape) -> str:
    return "x".join(str(size) for size in shape[2:])


def _strided(convs) -> list:
    return [(layer, shape, strides) for layer, shape, strides in convs if any(s > 1 for s in strides)]


def _where(convs) -> str:
    return " and ".join(f"stride {'x'.join(map(str, sorted(set(strides))))} on the {_kernel(shape)} conv "
                        f"{layer.name}" for layer, shape, strides in convs)


@diagnosis("stride placement")
def stride_placement(reference, port, context):
    references, ports = segment(reference, port, context)
    theirs, mine = _convs(references), _convs(ports)
    if len(mine) < 2 or len(mine) != len(theirs) or [s for _, s, _ in mine] != [s for _, s, _ in theirs]:
        return None
    if [strides for *_, strides in mine] == [strides for *_, strides in theirs]:
        return None
    total = lambda convs: tuple(np.prod([strides for *_, strides in convs], axis=0))  # noqa: E731
    if total(mine) != total(theirs):
        return None
    here, there = _strided(mine), _strided(theirs)
    kernels = lambda convs: [np.prod(shape[2:]) for _, shape, _ in convs]  # noqa: E731
    # a bottleneck's names: v1 strides its pointwise (1x1) conv, v1.5 the larger one after it
    versions = ""
    if here and there and max(kernels(here)) == 1 < min(kernels(there)):
        versions = (" (ResNet v1)", " (v1.5)")
    elif here and there and max(kernels(there)) == 1 < min(kernels(here)):
        versions = (" (v1.5)", " (ResNet v1)")
    first, second = versions or ("", "")
    return (f"stride placement: {_where(here) or 'no stride'} here{first}, {_where(there) or 'no stride'} in the "
            f"reference{second}; the same convs and overall stride, the outputs between them of other sizes")
