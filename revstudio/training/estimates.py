"""A run's memory figures before it starts: the estimated peak for its mode and for standard
mode, and what a memory budget keeps (the figures the first row carries beside the measured peak)."""
from __future__ import annotations

from typing import Any


def estimate_note(precision: str) -> str | None:
    """Why a run at ``precision`` has no estimated peak (None: it has one); see
    :func:`revstudio.diagnostics.estimate.precision_note`."""
    from revstudio.diagnostics.estimate import precision_note

    note = precision_note(precision)
    return None if note is None else f"no memory estimate: {note} (the run measures its peak at --memory-every)"


def estimates(graph: Any, report: Any, batch: int, mode: str, optimizer: str | None = None,
               budget: int | None = None, device: str = "cpu",
               precision: str = "fp32") -> tuple[int | None, int | None]:
    """(estimate for the run's mode, for standard mode) of one step's peak at this batch on
    ``device`` ("cpu" or "cuda"); in reversible mode under a memory ``budget``, with the steps
    the budget keeps. (None, None) where the estimate does not model the run: a low
    ``precision`` (:func:`estimate_note`), a mode or optimizer it does not know."""
    from revstudio.diagnostics.budget import budget_peak
    from revstudio.diagnostics.estimate import estimate_peak

    if estimate_note(precision) is not None:
        return None, None
    try:
        run = (budget_peak(graph, report, budget, batch=batch, optimizer=optimizer, device=device)
               if mode == "reversible" and budget is not None
               else estimate_peak(graph, report, batch=batch, mode=mode, optimizer=optimizer, device=device))
        return int(run), int(estimate_peak(graph, report, batch=batch, mode="standard", optimizer=optimizer,
                                           device=device))
    except ValueError:  # a mode or optimizer the estimate does not model: no reference lines
        return None, None


def budget_kept(graph: Any, report: Any, batch: int, mode: str, budget: int | None) -> dict[str, Any] | None:
    """What a memory ``budget`` keeps at this batch in reversible mode (``memory --budget``'s
    choice: kept bytes, and per region its first steps kept), for the run's first row."""
    if mode != "reversible" or budget is None or not getattr(report, "regions", None):
        return None
    from revstudio.diagnostics.budget import budget_choice

    try:
        return budget_choice(graph, report, budget, batch=batch).to_json()
    except (ValueError, KeyError):  # a graph the prices cannot read: the run goes on without the line
        return None
