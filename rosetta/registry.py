"""The one registry type behind models, conversion paths, targets and faults: ordered, refuses a key twice,
and answers an unknown key with a one-line error listing the choices."""

from __future__ import annotations

from typing import Callable, Generic, Hashable, Iterator, TypeVar

from rosetta.errors import RosettaError

T = TypeVar("T")


class Registry(Generic[T]):
    def __init__(self, kind: str, key: Callable[[T], Hashable], hint: str = "") -> None:
        self.kind, self._key, self._hint = kind, key, hint
        self._items: dict[Hashable, T] = {}

    def register(self, item: T) -> T:
        key = self._key(item)
        if key in self._items:
            raise ValueError(f"{self.kind} {key!r} is registered twice")
        self._items[key] = item
        return item

    def unregister(self, key: Hashable) -> None:
        del self._items[key]

    def get(self, key: Hashable, label: str | None = None, choices: list[str] | None = None) -> T:
        try:
            return self._items[key]
        except KeyError:
            listed = ", ".join(choices if choices is not None else map(str, self._items))
            hint = f" {self._hint}" if self._hint else ""
            named = label if label is not None else repr(key)
            raise RosettaError(f"unknown {self.kind} {named}; choose from: {listed}{hint}") from None

    def __contains__(self, key: Hashable) -> bool:
        return key in self._items

    def __iter__(self) -> Iterator[T]:
        return iter(list(self._items.values()))

    def keys(self) -> list[Hashable]:
        return list(self._items)


def load_entry(entry: str):
    """The object an entry point "package.module:name" names, imported on demand (so registries import nothing)."""
    import importlib

    module_name, _, name = entry.partition(":")
    return getattr(importlib.import_module(module_name), name)
