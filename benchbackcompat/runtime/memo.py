"""Results computed from live objects, remembered while those very objects stand.

A key names a result (``id(record)``, or ``(id(table), column)``); the objects it was computed from are held with it,
so that no id is reused while it is remembered, and a later lookup finds it only when it is asked with the very same
objects (by identity: a table whose rows were replaced computes again). The least recently used results go beyond
the memo's size.
"""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

T = TypeVar("T")


class IdentityMemo:
    """Up to ``size`` results, each with the objects it was computed from."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._held: OrderedDict[Hashable, tuple[tuple[Any, ...], Any]] = OrderedDict()

    def get(self, key: Hashable, sources: tuple[Any, ...], compute: Callable[[], T]) -> T:
        """The result of ``key`` computed from ``sources``: remembered, or ``compute()`` now (and remembered)."""
        held = self._held.get(key)
        if held is not None and len(held[0]) == len(sources) and all(a is b for a, b in zip(held[0], sources)):
            self._held.move_to_end(key)
            return held[1]
        value = compute()
        self._held[key] = (sources, value)
        self._held.move_to_end(key)
        if len(self._held) > self.size:
            self._held.popitem(last=False)
        return value
