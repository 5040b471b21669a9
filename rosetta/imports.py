"""Modules put in sys.modules for the duration of a block, then taken out again (the previous ones, if any,
restored): how rosetta lets an old converter import what it expects without changing any other import."""

from __future__ import annotations

import contextlib
import sys
import types
from typing import Iterator


@contextlib.contextmanager
def stand_in_modules(modules: dict[str, types.ModuleType]) -> Iterator[None]:
    saved = {name: sys.modules.get(name) for name in modules}
    sys.modules.update(modules)
    try:
        yield
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module
