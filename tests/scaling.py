"""Complexity checks that hold on a shared, noisy machine.

A unit test never compares a duration with a fixed number of seconds (the
absolute targets live in benchmarks/). It compares two sizes measured in the
same test, best of a few repeats: linear work grows about ``factor`` times,
quadratic work ``factor ** 2`` times, and load on the machine cancels out.
Sizes are timed in this process's CPU time, not wall time: another process
taking the core mid-run (CI under load showed a quadratic self-check reading
under the line) then costs nothing.
"""
from __future__ import annotations

import gc
import time
from collections.abc import Callable

# With factor 4: linear ~4, n log n ~5, quadratic ~16. 8 separates them with room for noise.
NOT_QUADRATIC = 8.0


def best_time(thunk: Callable[[], object], repeats: int = 3,
              clock: Callable[[], float] = time.perf_counter) -> float:
    """The fastest of ``repeats`` runs of ``thunk`` in seconds (GC paused, as timeit does)."""
    best = float("inf")
    for _ in range(repeats):
        enabled = gc.isenabled()
        gc.disable()
        try:
            start = clock()
            thunk()
            best = min(best, clock() - start)
        finally:
            if enabled:
                gc.enable()
    return best


def growth(prepare: Callable[[int], Callable[[], object]], n: int, factor: int = 4, repeats: int = 3,
           tries: int = 3, clock: Callable[[], float] = time.process_time) -> float:
    """time(factor * n) / time(n), each the best of ``repeats``.

    ``prepare(size)`` does the untimed setup and returns the thunk to time; it
    is called afresh for every run, so a thunk may consume what it was given.
    A ratio at or over ``NOT_QUADRATIC`` is measured again, up to ``tries`` times,
    and the smallest is returned: quadratic work is slow every time, while a
    burst of load from another process (seen once as 8.6x for linear work) is not.
    """
    def best(size: int) -> float:
        runs = []
        for _ in range(repeats):
            thunk = prepare(size)
            runs.append(best_time(thunk, repeats=1, clock=clock))
        return min(runs)

    ratios = []
    for _ in range(max(1, tries)):
        ratios.append(best(factor * n) / max(best(n), 1e-9))
        if ratios[-1] < NOT_QUADRATIC:
            break
    return min(ratios)

