"""A compiled model's memory-budget prices: per top-level region, the standard-mode bytes each
step keeps (the static estimate, ``diagnostics.budget.step_prices``), what a cut after each
step gives back and adds, priced at the batch that runs, as the check prices it. A batch of
one is no per-sample rate where a rule changes at one sample: priced from batches 1 and 2 and
scaled, random sequence model 0 kept 26,948 B under a budget of 22,924 B at batch 8.
"""
from __future__ import annotations

from typing import Any

from revstudio.core.graph import Graph

from .plan import Plan


class Prices:
    """``prices(batch)``: (costs, refunds, fixed) at ``batch``, one pair of static estimates per
    batch, cached. It keeps a copy of the graph (the document it was compiled from may change)
    and the check's report."""

    def __init__(self, graph: Graph, report: Any, plan: Plan, dtype: str) -> None:
        self.graph, self.report, self.regions, self.dtype = graph.copy(), report, plan.regions.regions, dtype
        self._at: dict[tuple[int, str], Any] = {}
        self._worth: dict[str, list[bool]] | None = None

    def __call__(self, batch: int, dtype: str | None = None) -> Any:
        """At ``batch``, in ``dtype`` (a name, "float64"; None: the compiled one): a model cast
        after compiling (``.double()``) keeps steps of that dtype's size."""
        key = (batch, dtype or self.dtype)
        found = self._at.get(key)
        if found is None:
            from revstudio.diagnostics.budget import step_prices  # torch-free; above the compiler

            found = self._at[key] = step_prices(self.graph, self.report, batch=batch, dtype=key[1],
                                                regions=self.regions)
        return found

    def worth(self) -> dict[str, list[bool]]:
        """Per region and step, whether keeping it saves a rebuild (``step_worth``)."""
        if self._worth is None:
            from revstudio.diagnostics.budget_prices import step_worth  # torch-free; above the compiler

            self._worth = step_worth(self.graph, self.regions)
        return self._worth
