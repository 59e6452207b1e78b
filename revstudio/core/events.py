"""Plain-Python events: a tiny observer list so the core can notify views without Qt.

An :class:`Event` holds callbacks; ``emit`` calls them in subscription order.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

Callback = Callable[..., Any]


class Event:
    """A list of subscribers called with the emitted arguments."""

    __slots__ = ("_subscribers", "name")

    def __init__(self, name: str = "") -> None:
        self.name = name
        self._subscribers: list[Callback] = []

    def sub(self, callback: Callback) -> Callback:
        if callback not in self._subscribers:
            self._subscribers.append(callback)
        return callback

    def unsub(self, callback: Callback) -> None:
        try:
            self._subscribers.remove(callback)
        except ValueError:
            pass

    def emit(self, *args: Any) -> None:
        for callback in list(self._subscribers):
            callback(*args)

    def __len__(self) -> int:
        return len(self._subscribers)
