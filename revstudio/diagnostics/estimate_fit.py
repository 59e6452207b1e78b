"""The largest batch that fits a memory budget, per mode, from as few estimates as possible.

The cost of a training step (weights, the input batch, the peak estimate, the
optimizer's state) grows with the batch, and almost linearly, except where a
region's stream updates start working in smaller pieces (the estimate's
``batch_breaks``: there a larger batch peaks lower, as the runtime does; each
stretch between them is searched on its own). Within a stretch two estimates
(batch 1 and 2) predict where the budget runs out, a gallop from that guess
brackets it and a bisection settles it, exactly, in a handful of estimates.
One estimate answers every mode at its batch, so :func:`max_batches_that_fit`
asks for all modes at once (the editor's "fits on my device" runs after edits).
Torch-free.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any


def largest_fitting(cost: Callable[[int], int], budget: int, limit: int,
                    breaks: Iterable[int] = ()) -> int | None:
    """The largest b in [1, limit] with cost(b) <= budget, for a cost that grows with b
    between ``breaks`` (batches where it may drop: each stretch is searched, the last first).
    ``cost`` is best memoised: the search may ask for a batch twice."""
    starts = sorted({b for b in breaks if 1 < b <= limit}, reverse=True)
    for start in starts:  # a later stretch whose first batch fits holds the answer
        if cost(start) <= budget:
            end = next((b - 1 for b in sorted(starts) if b > start), limit)
            found = _largest_growing(_shifted(cost, start - 1), budget, end - start + 1)
            return None if found is None else start - 1 + found
    first_end = min(starts, default=limit + 1) - 1
    return _largest_growing(cost, budget, first_end)


def _shifted(cost: Callable[[int], int], by: int) -> Callable[[int], int]:
    return lambda b: cost(by + b)


def _largest_growing(cost: Callable[[int], int], budget: int, limit: int) -> int | None:
    """:func:`largest_fitting` for a cost that grows with b over all of [1, limit]."""
    if cost(1) > budget:
        return None
    if cost(limit) <= budget:
        return limit
    lo, hi = 1, limit  # cost(lo) fits, cost(hi) does not
    # secant steps toward the budget (the cost is almost linear in the batch)
    x0, c0, guess, c1 = 1, cost(1), 1, cost(1)
    if limit >= 2:
        guess, c1 = 2, cost(2)
    for _ in range(6):
        if c1 <= budget:
            lo = max(lo, guess)
        else:
            hi = min(hi, guess)
        if c1 == c0 or hi - lo <= 1:
            break
        nxt = guess + (budget - c1) * (guess - x0) // (c1 - c0)
        nxt = max(lo + 1, min(hi - 1, nxt))
        if nxt == guess:
            break
        x0, c0, guess, c1 = guess, c1, nxt, cost(nxt)
    # bracket the answer next to the guess, then bisect
    step = 1
    if c1 <= budget:
        while lo + step < hi and cost(lo + step) <= budget:
            lo, step = lo + step, step * 2
        hi = min(hi, lo + step)
    else:
        while hi - step > lo and cost(hi - step) > budget:
            hi, step = hi - step, step * 2
        lo = max(lo, hi - step)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if cost(mid) <= budget:
            lo = mid
        else:
            hi = mid
    return lo


# The key of reversible mode under the project's memory budget in max_batches_that_fit's answer
UNDER_BUDGET = "reversible+budget"


def max_batches_that_fit(graph: Any, report: Any, budget_bytes: int, modes: Iterable[str], *,
                         dtype: str | None = None, optimizer: str | None = None,
                         limit: int = 1 << 16, device: str = "cpu",
                         memory_budget: int | None = None) -> dict[str, int | None]:
    """{mode: the largest batch whose training step fits in ``budget_bytes``} (None: not even 1),
    counting the weights, the input batch, ``estimate_peak`` and the optimizer's state; the
    estimates are shared between the modes. ``device``: "cpu" or "cuda" (see ``estimate``).
    ``memory_budget`` (bytes a reversible run may keep to run faster): also ``UNDER_BUDGET``,
    reversible mode with what that budget keeps at each batch (``budget.budget_peak``)."""
    from .estimate import _checked_mode, _state_bytes, estimate, input_bytes

    modes = [_checked_mode(m) for m in modes]
    _state_bytes(0, optimizer)  # an unknown optimizer is refused before anything runs
    cache: dict[int, Any] = {}

    def estimated(b: int) -> Any:
        est = cache.get(b)  # noqa: SIM401
        if est is None:
            est = cache[b] = estimate(graph, report, getattr(report, "regions", None) or [], batch=b, dtype=dtype,
                                      device=device)
        return est

    def mode_peak(mode: str) -> Callable[[Any], int]:
        return lambda est: int(est.peak_bytes(mode))

    peaks: dict[str, Callable[[Any], int]] = {m: mode_peak(m) for m in modes}
    if memory_budget is not None:
        from .budget import budget_peaks

        peaks[UNDER_BUDGET] = budget_peaks(graph, report, int(memory_budget), dtype=dtype)

    def cost_of(mode: str) -> Callable[[int], int]:
        def cost(b: int) -> int:
            est = estimated(b)
            params = est.parameter_bytes()
            return (params + input_bytes(graph, report, b, est.dtype) + peaks[mode](est)
                    + _state_bytes(params, optimizer))
        return cost

    breaks = estimated(1).batch_breaks  # they do not depend on the batch
    return {mode: largest_fitting(cost_of(mode), int(budget_bytes), max(1, int(limit)), breaks)
            for mode in peaks}
