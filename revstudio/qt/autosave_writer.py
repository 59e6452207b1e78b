"""The recovery file's background writer: serialisation and disk I/O off the UI thread.

The UI thread hands over a snapshot (a deep copy of the graph, taken between two edits, so it
is never torn) and goes on editing; one thread turns it into project text and writes it
atomically. Only the newest snapshot is written: a newer one, a discard (save, close, undo
back to clean) or a synchronous write supersedes any snapshot not yet on disk, and a write
already under way finishes before the file is removed, so a superseded write never lands
after its replacement.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Snapshot:
    """What one autosave writes: the graph as it was at one moment, and its sidecar facts."""

    key: str
    graph: Any                      # a Graph.copy() nobody else holds
    path: str | None
    name: str
    disk: tuple[int, int, int] | None
    generation: int = field(default=0)


Write = Callable[[Snapshot], None]
Done = Callable[[int, BaseException | None], None]


class RecoveryWriter:
    """One daemon thread writing the newest submitted snapshot with ``write``; ``done(generation,
    error)`` is called from that thread after each write (error None: it is on disk)."""

    def __init__(self, write: Write, done: Done) -> None:
        self._write = write
        self._done = done
        self._cond = threading.Condition()
        self._next: Snapshot | None = None
        self._generation = 0
        self._stopping = False
        self._thread: threading.Thread | None = None
        self.io = threading.Lock()  # held while a recovery file is written or removed

    def submit(self, snap: Snapshot) -> int:
        """Queue ``snap`` (replacing any snapshot not yet taken); its generation is returned."""
        with self._cond:
            self._generation += 1
            snap.generation = self._generation
            self._next = snap
            if self._thread is None or not self._thread.is_alive():
                self._stopping = False
                self._thread = threading.Thread(target=self._run, name="revstudio-autosave", daemon=True)
                self._thread.start()
            self._cond.notify()
            return snap.generation

    def cancel(self) -> None:
        """Nothing submitted so far may be written any more (a write under way still finishes:
        take :attr:`io` before removing or rewriting the file)."""
        with self._cond:
            self._generation += 1
            self._next = None

    def busy(self) -> bool:
        """Whether a snapshot waits or is being written."""
        with self._cond:
            waiting = self._next is not None
        return waiting or self.io.locked()

    def stop(self, timeout: float = 5.0) -> None:
        """Finish the write under way (drop one not begun) and end the thread."""
        with self._cond:
            self._stopping = True
            self._next = None
            self._cond.notify()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def current(self, generation: int) -> bool:
        """Whether ``generation`` is the newest submitted (nothing superseded it)."""
        with self._cond:
            return generation == self._generation

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._next is None and not self._stopping:
                    self._cond.wait()
                if self._stopping:
                    return
                snap, self._next = self._next, None
            if snap is None:
                continue
            error: BaseException | None = None
            with self.io:
                if not self.current(snap.generation):
                    continue  # discarded or superseded while it waited for the lock
                try:
                    self._write(snap)
                except Exception as exc:  # reported to the UI thread: a full disk must not end the thread
                    error = exc
            try:
                self._done(snap.generation, error)
            except RuntimeError:  # the window (and the object relaying to it) is gone
                pass
