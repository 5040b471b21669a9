"""torchvision beside a CPU torch whose build it does not match: its model definitions (and timm's, and
Hugging Face transformers', which import it) made importable without its compiled operators.

PyPI's torchvision wheel for Linux is a CUDA build: its `_C.so` links libtorch_cuda, which CPU torch lacks, so
the library does not load; torchvision goes on without its operators (its `ops.nms`, `roi_align`, ... then
raise "Couldn't load custom C++ ops"), except that its `_meta_registrations` registers fake kernels for
`torchvision::nms` and `torchvision::qnms` unconditionally, and registering a kernel for an operator nobody
defined fails the whole import: `RuntimeError: operator torchvision::nms does not exist`. Defining those two
operators' schemas (as torchvision's C++ defines them, with no kernel) is all `import torchvision` lacks; a
model that calls them still gets torchvision's own "Couldn't load custom C++ ops" error. The classification,
segmentation and backbone definitions are plain torch.nn and need none of its operators.

Where torchvision's library does load (a build that matches torch), it defines the operators itself and
nothing is done."""

from __future__ import annotations

import importlib.util
from pathlib import Path

# the operators torchvision's Python code registers kernels for whether or not its library loaded
UNCONDITIONAL_SCHEMAS = ("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
                         "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
_LIBRARY = None  # the torch.library.Library holding the schemas: they live as long as it does


def make_importable() -> bool:
    """Prepare `import torchvision` (and so timm and transformers) on this torch; True where torchvision's
    operators are schemas only (its compiled library could not be loaded). Idempotent; nothing is imported
    when torchvision is not installed."""
    global _LIBRARY
    import sys

    if _LIBRARY is not None:
        return True
    if "torchvision" in sys.modules:  # already imported, so it worked
        return False
    spec = importlib.util.find_spec("torchvision")
    if spec is None or not spec.submodule_search_locations:
        return False
    import torch

    if _defined("nms"):
        return False
    compiled = next(iter(sorted(Path(next(iter(spec.submodule_search_locations))).glob("_C*.so"))), None)
    if compiled is not None:
        try:
            torch.ops.load_library(str(compiled))
        except (OSError, RuntimeError):
            pass
        if _defined("nms"):
            return False
    library = torch.library.Library("torchvision", "FRAGMENT")
    for schema in UNCONDITIONAL_SCHEMAS:
        if not _defined(schema.split("(", 1)[0]):
            library.define(schema)
    _LIBRARY = library
    return True


def _defined(operator: str) -> bool:
    import torch

    try:
        getattr(torch.ops.torchvision, operator)
        return True
    except (AttributeError, RuntimeError):
        return False
