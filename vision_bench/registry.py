"""A small name -> entry registry with one-line descriptions and close-match suggestions.

One way to register: `@REGISTRY.register(name, description)` beside the definition (a function,
a class, or a factory returning the entry), as timm's `@register_model` does; `add(name, entry,
description)` for entries that are data rather than definitions. `check(name)` validates a name
(raising `UnknownNameError` with close matches) without using the entry; `remove(name)` takes a
temporary entry out again.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from vision_bench.errors import UnknownNameError

T = TypeVar("T")


class Registry(Generic[T]):
    """An ordered mapping from names to entries; unknown names raise `UnknownNameError` with close matches."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, T] = {}
        self._descriptions: dict[str, str] = {}

    def add(self, name: str, entry: T, description: str) -> T:
        if name in self._entries:
            raise ValueError(f"{self.kind} {name!r} is registered twice")
        self._entries[name] = entry
        self._descriptions[name] = description
        return entry

    def register(self, name: str, description: str) -> Callable[[T], T]:
        """A decorator that adds the decorated object under `name` and returns it unchanged."""

        def decorate(entry: T) -> T:
            return self.add(name, entry, description)

        return decorate

    def remove(self, name: str) -> T:
        """Take `name` out again and return its entry (for plugins and tests that register temporarily)."""
        entry = self[name]
        del self._entries[name], self._descriptions[name]
        return entry

    def check(self, name: str) -> None:
        """Raise `UnknownNameError` (with close matches) unless `name` is registered."""
        self[name]

    def __getitem__(self, name: str) -> T:
        try:
            return self._entries[name]
        except KeyError:
            raise UnknownNameError(unknown_name_message(self.kind, name, self._entries)) from None

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def names(self) -> list[str]:
        return list(self._entries)

    def items(self) -> list[tuple[str, T]]:
        return list(self._entries.items())

    def description(self, name: str) -> str:
        self.check(name)
        return self._descriptions[name]


LISTING_COMMANDS = {
    "metric": "vision-bench metrics",
    "transformation": "vision-bench transformations",
    "study": "vision-bench studies",
    "model family": "vision-bench models",
    "model": "vision-bench models",
    "timm model": "vision-bench models --timm 'PATTERN*'",
}
"""Kind -> the command that lists every known name of that kind."""


def unknown_name_message(kind: str, name: str, known: object) -> str:
    """'unknown KIND NAME; did you mean ...? (known: ...)' with difflib close matches; a long list
    is replaced by the command that prints it."""
    names = sorted(str(k) for k in known)  # type: ignore[attr-defined]
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    if len(names) <= 12:
        listing = f"known: {', '.join(names)}"
    elif kind in LISTING_COMMANDS:
        listing = f"`{LISTING_COMMANDS[kind]}` lists all {len(names)}"
    else:
        listing = f"known: {', '.join(names[:12])}, ... ({len(names)} in all)"
    return f"unknown {kind} {name!r}{hint} ({listing})"
