"""Pausing Python's cyclic garbage collector around big, cycle-free batches of allocation.

Loading and checking a project allocate hundreds of thousands of small objects
and free almost none of them in cycles. Each full collection walks every live
object, and their number grows with the graph, so with the collector running
the cost grows faster than the graph (measured: 100,000 nodes took 1.6x the time
per node of 20,000; see benchmarks/README.md). Reference counting still frees
everything as usual; only the cycle search waits until the batch is done.
"""
from __future__ import annotations

import contextlib
import functools
import gc
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """The cyclic collector off for the block (nesting-safe: only the outermost turns it back on)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def without_cyclic_gc(fn: F) -> F:
    """Run ``fn`` with the cyclic collector paused."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with paused():
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
