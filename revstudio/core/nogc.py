"""Pausing Python's cyclic garbage collector around big, cycle-free batches of allocation.

Loading and checking a project allocate hundreds of thousands of small objects
and free almost none of them in cycles. Each full collection walks every live
object, and their number grows with the graph, so with the collector running
the cost grows faster than the graph (measured: 100,000 nodes took 1.6x the time
per node of 20,000; see benchmarks/README.md). Reference counting still frees
everything as usual; only the cycle search waits until the batch is done.

The collector's switch is the process's, so the pause is counted across threads: the editor's
memory estimate runs on a worker thread while the UI thread checks the next edit, and a
collection must not start in the worker (it would finalise the UI thread's objects, Qt's
included, there) because the UI thread's block ended first.
"""
from __future__ import annotations

import contextlib
import functools
import gc
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


_lock = threading.Lock()
_open = 0  # blocks open in any thread
_was_enabled = False  # the switch when the first of them began


def hold() -> None:
    """Pause the cyclic collector until the matching :func:`release`, which another thread may
    call: the editor hands a pause to the estimate's worker thread, which ends it once it has
    opened its own."""
    global _open, _was_enabled
    with _lock:
        if _open == 0:
            _was_enabled = gc.isenabled()
        _open += 1
        gc.disable()


def release() -> None:
    """End one :func:`hold` (the collector comes back on with the last one open)."""
    global _open
    with _lock:
        _open -= 1
        if _open == 0 and _was_enabled:
            gc.enable()


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """The cyclic collector off for the block (nesting- and thread-safe: it comes back on when the
    last block open in any thread ends, if it was on when the first began)."""
    hold()
    try:
        yield
    finally:
        release()


def without_cyclic_gc(fn: F) -> F:
    """Run ``fn`` with the cyclic collector paused."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with paused():
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
