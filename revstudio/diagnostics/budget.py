"""What a memory budget keeps: per region, how many first steps keep their activations.

``budget_choice(graph, report, budget, batch=)`` is the torch-free answer the
editor's region badges, ``revstudio memory --budget`` and the compiler share:
it prices every step of every reversible region with the static estimate
(what standard mode keeps for backward there) and runs the compiler's own
selection (``revstudio.compiler.budget.select_kept``). ``step_prices`` are the
prices (bytes per step, and what a cut after each step gives back); the
compiled model takes them at batch 1 and scales them by the batch it runs. ``parse_bytes("64MiB")`` reads a budget as users write it, ``amount_text`` writes one.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from revstudio.core.graph import Graph

from .budget_prices import Prices, _copies, _step_nodes, step_prices, step_worth
from .budget_prices import step_costs as step_costs  # (re-exported: the budget's one module to import)
from .estimate import _state_bytes, estimate, fmt_bytes

_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "m": 1000 ** 2, "mb": 1000 ** 2, "g": 1000 ** 3,
          "gb": 1000 ** 3, "kib": 1024, "mib": 1024 ** 2, "gib": 1024 ** 3, "t": 1000 ** 4, "tb": 1000 ** 4,
          "tib": 1024 ** 4, "pb": 1000 ** 5, "pib": 1024 ** 5, "eb": 1000 ** 6, "eib": 1024 ** 6}


_UNLIMITED = ("unlimited", "inf", "infinity", "max", "all")
_MOST = (1 << 63) - 1  # (8 EiB: more than any machine's memory, and what a C long holds)
# digits with single underscores between them, as Python writes them (1_000_000): the run
# settings dialog, the CLI and the project file read the same amounts
_DIGITS = r"[0-9](?:_?[0-9])*"
_AMOUNT = re.compile(rf"\s*((?:{_DIGITS}(?:\.(?:{_DIGITS})?)?|\.{_DIGITS})(?:[eE][+-]?[0-9]{{1,3}})?)\s*([A-Za-z]*)\s*")


def parse_bytes(text: str | int) -> int:
    """``"64MiB"``, ``"1.5 GB"``, ``"1e9"``, ``"200000"`` -> bytes; ValueError says what is accepted.

    Exact (decimal arithmetic, no float rounding); an amount in a unit rounds to the nearest
    byte, a fraction of a byte written as bytes is refused rather than cut off."""
    shown = repr(text) if len(str(text)) <= 24 else repr(str(text)[:20] + "...")
    if isinstance(text, bool) or not isinstance(text, (int, str)):
        raise ValueError(f"{shown} is not an amount of memory; write e.g. 64MiB, 1.5GB or 200000 (bytes)")
    if isinstance(text, int):
        value = text
    else:
        m = _AMOUNT.fullmatch(text)
        unit = m.group(2).lower() if m else ""
        if m is None or unit not in _UNITS:
            hint = "cannot be negative" if text.strip().startswith("-") else "is not an amount of memory"
            if text.strip().lower() in _UNLIMITED:  # (only `memory --budget` measures "unlimited")
                hint += "; an amount larger than the model keeps (e.g. 1TiB) keeps every region whole"
            raise ValueError(f"{shown} {hint}; write e.g. 64MiB, 1.5GB or 200000 (bytes)")
        exact = Decimal(m.group(1)) * _UNITS[unit]
        if exact > _MOST:
            value = _MOST + 1
        elif _UNITS[unit] == 1 and exact != exact.to_integral_value():
            raise ValueError(f"{shown} is not a whole number of bytes; write e.g. 200000 or 64MiB")
        else:
            value = int(exact.to_integral_value(ROUND_HALF_UP))
    if value < 0:
        raise ValueError(f"{shown}: a memory budget cannot be negative")
    if value > _MOST:
        raise ValueError(f"{shown} is more memory than any machine has (less than 8EiB)")
    return value


_SHOWN = (("TiB", 1024 ** 4), ("GiB", 1024 ** 3), ("MiB", 1024 ** 2), ("KiB", 1024),
          ("TB", 1000 ** 4), ("GB", 1000 ** 3), ("MB", 1000 ** 2), ("kB", 1000))


def amount_text(n: int) -> str:
    """Bytes as users write them, exactly and shortest: ``67108864`` -> ``"64MiB"``,
    ``64000000`` -> ``"64MB"``, ``1500000000`` -> ``"1.5GB"``, ``1500`` -> ``"1500"``
    (:func:`parse_bytes` reads every result back to the same number)."""
    best = None
    for unit, size in _SHOWN:
        if not n or n % size * 100 % size:  # (at most two decimals, exactly)
            continue
        number = f"{Decimal(n) / size:f}"
        text = (number.rstrip("0").rstrip(".") if "." in number else number) + unit
        if best is None or len(text) < len(best):
            best = text
    return str(n) if best is None or len(best) > len(str(n)) else best


@dataclass
class RegionChoice:
    """One region under a budget: its first ``kept_steps`` of ``steps`` keep their activations;
    of those, ``kept_compute_steps`` of its ``compute_steps`` save a rebuild (couplings, flow
    layers, Repeat copies: a Split or Concat kept saves none), what users read as kept."""

    region: str
    steps: int
    kept_steps: int
    kept_bytes: int       # estimated standard-mode bytes of the kept steps
    standard_bytes: int   # estimated standard-mode bytes of the whole region
    compute_steps: int = 0
    kept_compute_steps: int = 0

    @property
    def state(self) -> str:
        """"kept" (the whole region), "partly kept" or "reversible"."""
        if self.kept_steps >= self.steps and self.steps:
            return "kept"
        return "partly kept" if self.kept_steps else "reversible"

    def to_json(self) -> dict[str, Any]:
        return {"region": self.region, "state": self.state, "steps": self.steps, "kept_steps": self.kept_steps,
                "compute_steps": self.compute_steps, "kept_compute_steps": self.kept_compute_steps,
                "kept_bytes": self.kept_bytes, "standard_bytes": self.standard_bytes}


# The badge of a region the budget keeps whole (``BudgetChoice.badge``; the canvas words it)
KEPT_WHOLE = "kept by budget"


@dataclass
class BudgetChoice:
    """What a budget keeps, region by region (``budget`` None: unlimited)."""

    budget: int | None
    batch: int
    regions: dict[str, RegionChoice] = field(default_factory=dict)

    @property
    def kept_bytes(self) -> int:
        return sum(r.kept_bytes for r in self.regions.values())

    def kept_regions(self) -> list[str]:
        return [rid for rid, r in self.regions.items() if r.state == "kept"]

    def state_of(self, region_id: str) -> str | None:
        r = self.regions.get(region_id)
        return None if r is None else r.state

    def badge(self, region_id: str) -> str:
        """A short label for the region's badge: "" when the budget keeps nothing there."""
        r = self.regions.get(region_id)
        if r is None or not r.kept_steps:
            return ""
        if r.state == "kept":
            return KEPT_WHOLE
        return f"first {r.kept_compute_steps}/{r.compute_steps} steps kept"

    def summary_lines(self) -> list[str]:
        budget = "unlimited" if self.budget is None else fmt_bytes(self.budget)
        lines = [f"memory budget {budget} (batch {self.batch}): keeps {fmt_bytes(self.kept_bytes)} "
                 "of activations (estimate); the rest runs reversibly"]
        for r in self.regions.values():
            lines.append(f"  region {r.region}: {r.state}, {r.kept_compute_steps}/{r.compute_steps} first steps "
                         f"({fmt_bytes(r.kept_bytes)} of {fmt_bytes(r.standard_bytes)})")
        return lines

    def to_json(self) -> dict[str, Any]:
        return {"budget_bytes": self.budget, "batch": self.batch, "kept_bytes": self.kept_bytes,
                "kept_regions": self.kept_regions(),
                "regions": [r.to_json() for r in self.regions.values()]}


def choose(costs: Mapping[str, Sequence[int]], budget: int | None, batch: int = 1,
           refunds: Mapping[str, Sequence[int]] | None = None,
           fixed: Mapping[str, Sequence[int]] | None = None,
           worth: Mapping[str, Sequence[bool]] | None = None) -> BudgetChoice:
    """The choice for per-step ``costs`` and cut ``refunds`` (both already at ``batch``), the
    cuts' ``fixed`` bytes (the same at every batch) and which steps save a rebuild (``worth``,
    :func:`step_worth`; by default those that cost something)."""
    from revstudio.compiler.budget import prefix_cost, select_kept

    kept = select_kept(costs, budget, refunds, fixed, worth)
    out = BudgetChoice(budget, batch)
    for rid, steps in costs.items():
        k = kept.get(rid, 0)
        cost = prefix_cost(steps, (refunds or {}).get(rid), k, (fixed or {}).get(rid))
        saves = list((worth or {}).get(rid) or [bool(c) for c in steps])
        out.regions[rid] = RegionChoice(rid, len(steps), k, cost, sum(steps), sum(saves), sum(saves[:k]))
    return out


def budget_choice(graph: Graph, report: Any, budget: int | None, *, batch: int = 1,
                  dtype: str | None = None) -> BudgetChoice:
    """Which regions a ``budget`` (bytes; None = unlimited) keeps at ``batch``, from the
    full check's ``report`` (torch-free; the canvas badges call it). Priced at ``batch``
    itself, exactly as the compiled model prices the batch it runs, so both make the same
    choice."""
    return _choice(graph, report, budget, batch, dtype)[0]


def _choice(graph: Graph, report: Any, budget: int | None, batch: int,
            dtype: str | None) -> tuple[BudgetChoice, dict[str, list[int]]]:
    """:func:`budget_choice` and the per-step costs it priced (at ``batch``)."""
    costs, refunds, fixed = step_prices(graph, report, batch=batch, dtype=dtype)
    worth = step_worth(graph, list(getattr(report, "regions", None) or []))
    return choose(costs, budget, batch, refunds, fixed, worth), costs


def _choose_at(prices: Prices, budget: int | None, batch: int,
               worth: Mapping[str, Sequence[bool]]) -> tuple[BudgetChoice, dict[str, list[int]]]:
    """The choice from ``step_prices`` at batch 1, scaled to ``batch``, and the costs it priced."""
    costs, refunds, fixed = prices
    at_batch = scaled(costs, batch)
    return choose(at_batch, budget, batch, scaled(refunds, batch), fixed, worth), at_batch


def budget_peak(graph: Graph, report: Any, budget: int | None, *, batch: int, dtype: str | None = None,
                optimizer: str | None = None, device: str = "cpu") -> int:
    """Estimated peak of one reversible training step under ``budget`` (bytes; None: unlimited),
    as ``estimate_peak`` counts it (on ``device``, "cpu" or "cuda"): the steps the budget keeps
    walked as standard mode runs them, the rest of their regions reversibly. (Which steps it
    keeps is priced the same on every device.)"""
    regions = list(getattr(report, "regions", None) or [])
    est = estimate(graph, report, regions, batch=batch, dtype=dtype, device=device)
    return _peak_under(graph, est, regions, *_choice(graph, report, budget, batch, dtype), optimizer)


def budget_peaks(graph: Graph, report: Any, budget: int | None, *, dtype: str | None = None) -> Any:
    """``peak(est)``: :func:`budget_peak` (without optimizer state) for an estimate at any batch,
    the steps priced once, at batch 1, and scaled (a search over batches asks at many:
    ``estimate_fit``; where a rule changes at one sample, the batch it finds may keep a
    different cut as it runs, which prices that batch itself)."""
    prices = step_prices(graph, report, batch=1, dtype=dtype)
    regions = list(getattr(report, "regions", None) or [])
    worth = step_worth(graph, regions)

    def peak(est: Any) -> int:
        return _peak_under(graph, est, regions, *_choose_at(prices, budget, est.batch, worth))

    return peak


def _peak_under(graph: Graph, est: Any, regions: Sequence[Any], choice: BudgetChoice,
                costs: Mapping[str, Sequence[int]], optimizer: str | None = None) -> int:
    heads: dict[str, frozenset[str]] = {}
    inside: dict[str, tuple[int, int]] = {}
    for r in regions:
        kept = choice.regions[r.id].kept_steps if r.id in choice.regions else 0
        if kept:
            heads[r.id], within, copies = kept_parts(graph, r, kept, costs.get(r.id, ()))
            inside[r.id] = (within, copies)
    return est.peak_keeping(heads, inside).peak + _state_bytes(est.parameter_bytes(), optimizer)


def budget_summary(graph: Graph, report: Any, budget: int, *, batch: int) -> str:
    """One line on what ``budget`` does at ``batch``: what it keeps, region by region, and the
    estimated peak beside reversible and standard mode's (for the run settings)."""
    choice, costs = _choice(graph, report, budget, batch, None)
    if not choice.regions:
        return "no reversible region: the budget has nothing to keep"
    parts = []
    for r in choice.regions.values():
        what = ("whole" if r.state == "kept" else f"first {r.kept_compute_steps}/{r.compute_steps} steps") \
            if r.kept_steps else "none"
        # one region needs no name; several are named as their backdrops' tooltips name them
        parts.append(what if len(choice.regions) == 1 else f"{r.region} {what}")
    regions = list(getattr(report, "regions", None) or [])
    est = estimate(graph, report, regions, batch=batch)
    peak = _peak_under(graph, est, regions, choice, costs)
    std = est.peak_bytes("standard")
    line = (f"at batch {batch} keeps {fmt_bytes(choice.kept_bytes)} ({', '.join(parts)}); estimated peak "
            f"{fmt_bytes(peak)} (reversible {fmt_bytes(est.peak_bytes('reversible'))}, standard {fmt_bytes(std)})")
    if peak > std:
        line += ": above standard mode's, which is smaller and faster here"
    return line


def kept_parts(graph: Graph, region: Any, kept_steps: int, costs: Sequence[int]) -> tuple[frozenset[str], int, int]:
    """The nodes of the whole steps among a region's first ``kept_steps`` (a Repeat's copies each
    a step), and where the cut falls inside a Repeat, the bytes its kept copies keep (``costs``:
    per step, at the batch) and how many they are (the rest runs the others)."""
    out: set[str] = set()
    n = 0
    for nodes in _step_nodes(region):
        if n >= kept_steps:
            break
        times = _copies(graph, nodes[0])
        if n + times > kept_steps:
            return frozenset(out), int(sum(costs[n:kept_steps])), kept_steps - n
        n += times
        out.update(nodes)
    return frozenset(out), 0, 0


def scaled(costs: Mapping[str, Sequence[int]], batch: int) -> dict[str, list[int]]:
    """Per-step costs (or refunds) at batch 1 times ``batch`` (activations grow with the batch)."""
    return {rid: [int(c) * max(1, int(batch)) for c in steps] for rid, steps in costs.items()}


def project_budget(training: Mapping[str, Any]) -> int | None:
    """The bytes the project's ``training`` section lets a run keep (``memory_budget``), where a
    run uses them: in reversible mode, and more than 0 (0 keeps nothing: reversible mode's own
    memory). None otherwise, or for a value that does not read (the run settings report it)."""
    budget = training.get("memory_budget")
    if budget is None or training.get("mode", "reversible") != "reversible":
        return None
    try:
        limit = parse_bytes(budget if isinstance(budget, int) else str(budget))
    except ValueError:
        return None
    return limit or None


def region_badges(graph: Graph, report: Any) -> dict[str, str]:
    """{region id: badge text} for the regions the project's own training budget keeps
    (``training.memory_budget`` at ``training.batch_size``, in reversible mode: the other modes
    do not use it); empty without a budget. Where the budget's estimated peak passes standard
    mode's, the badge says so (standard mode would be smaller and faster).
    Torch-free and never raises: the canvas calls it after every analysis."""
    section = getattr(graph, "training", None) or {}
    limit = project_budget(section)
    if limit is None or getattr(report, "estimate", None) is None:
        return {}
    try:
        batch = max(1, int(section.get("batch_size", 32) or 32))
        choice, costs = _choice(graph, report, limit, batch, None)
        badges = {rid: text for rid in choice.regions if (text := choice.badge(rid))}
        # kept activations alive while something rebuilds (the rest of a cut region, or another
        # region) can lift the peak; every region kept whole peaks as standard mode
        if badges and not all(r.state == "kept" for r in choice.regions.values()):
            regions = list(getattr(report, "regions", None) or [])
            est = report.estimate  # (the figures' own, at this batch: its peaks are walked already)
            if est.batch != batch:
                est = estimate(graph, report, regions, batch=batch)
            if _peak_under(graph, est, regions, choice, costs) > est.peak_bytes("standard"):
                badges = {rid: f"{text}, peak above standard's" for rid, text in badges.items()}
    except (ValueError, TypeError, KeyError):
        return {}  # a bad setting is the training dialog's to report, not the canvas's
    return badges
