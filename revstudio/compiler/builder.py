"""What every executor of one compiled model shares (``module.Builder``): the graph and plan it
was built from, where and in what its weights live, the mode, and the memory-budget state that
chooses per batch size how many of each region's first steps keep their activations
(``kept_steps``) and how the regions keep their residual streams (``stream_for``).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from revstudio.core.graph import Graph

from . import assembly as asm
from . import budget
from . import runtime as rt
from .plan import Plan


class Builder:
    """What every executor of one compiled model shares: graph, plan, device, dtype, mode."""

    def __init__(self, graph: Graph, plan: Plan, device: torch.device, dtype: torch.dtype) -> None:
        self.graph: Graph | None = graph
        self.plan, self.device, self.dtype = plan, device, dtype
        self.mode = "reversible"
        self.track_inversion = True  # each reversible backward measures its inversion error
        self.stream_dtype: torch.dtype | str | None = None  # None: automatic
        self.memory_format: torch.memory_format | None = None  # None: automatic
        # memory budget (reversible mode): bytes of activations regions may keep; None = none,
        # math.inf = unlimited. ``prices(batch)``: per top-level region, what each step keeps in
        # standard mode at that batch (the static estimate), what a cut after n steps gives
        # back and adds (``pricing.Prices``); step_costs and the cuts' figures are batch 1's
        self.memory_budget: float | None = None
        self.prices: Callable[..., Any] | None = None
        self.step_costs: dict[str, list[int]] = {}
        self.cut_refunds: dict[str, list[int]] = {}
        self.cut_fixed: dict[str, list[int]] = {}
        self._kept: dict[tuple[int, float, str], dict[str, int]] = {}

    def kept_steps(self, batch: int) -> dict[str, int]:
        """{region id: its first steps the budget keeps} at this batch size (cached)."""
        assert self.memory_budget is not None
        dtype = str(self.dtype).rpartition(".")[2]  # (the weights' now: .double() after compiling)
        key = (int(batch), float(self.memory_budget), dtype)
        found = self._kept.get(key)
        if found is None:
            costs, refunds, fixed = (self.prices(max(1, int(batch)), dtype) if self.prices is not None
                                     else ({}, {}, {}))
            limit = None if math.isinf(self.memory_budget) else int(self.memory_budget)
            worth = getattr(self.prices, "worth", None)  # (which steps save a rebuild)
            found = self._kept[key] = budget.select_kept(costs, limit, refunds, fixed,
                                                         worth() if callable(worth) else None)
        return found

    def stream_for(self, dtype: torch.dtype) -> torch.dtype | str | None:
        choice = self.stream_dtype
        if choice is None or (rt.is_pair(choice) and dtype != torch.float32):
            return asm.stream_dtype(dtype, self.device)  # pairs are float32: other models keep theirs
        return choice
