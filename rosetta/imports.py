"""Modules put in sys.modules for the duration of a block, then taken out again (the previous ones, if any,
restored): how rosetta lets an old converter import what it expects without changing any other import. The
same for any mapping's entries (entries_restored): what `rosetta.cli.main` sets in os.environ."""

from __future__ import annotations

import contextlib
import sys
import types
from typing import Iterable, Iterator, MutableMapping


@contextlib.contextmanager
def stand_in_modules(modules: dict[str, types.ModuleType]) -> Iterator[None]:
    with entries_restored(sys.modules, modules):
        sys.modules.update(modules)
        yield


@contextlib.contextmanager
def entries_restored(mapping: MutableMapping, names: Iterable[str]) -> Iterator[None]:
    """`mapping`'s entries `names` (sys.modules, os.environ) as they were before the block, after it: put
    back where they existed, removed where they did not."""
    saved = {name: mapping.get(name) for name in names}
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                mapping.pop(name, None)
            else:
                mapping[name] = value
