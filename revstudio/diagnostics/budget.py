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

from revstudio.core.find import FLOW_TYPES, find_in
from revstudio.core.graph import Graph

from .estimate import _state_bytes, estimate, fmt_bytes
from .peak_units import SAMPLE_BYTES

_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "m": 1000 ** 2, "mb": 1000 ** 2, "g": 1000 ** 3,
          "gb": 1000 ** 3, "kib": 1024, "mib": 1024 ** 2, "gib": 1024 ** 3, "t": 1000 ** 4, "tb": 1000 ** 4,
          "tib": 1024 ** 4, "pb": 1000 ** 5, "pib": 1024 ** 5, "eb": 1000 ** 6, "eib": 1024 ** 6}


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


def _step_nodes(region: Any) -> list[list[str]]:
    """The nodes of each step of an analysis region (a coupling's merge plus F's nodes)."""
    couplings = getattr(region, "couplings", {}) or {}
    out = []
    for step in region.steps:
        c = couplings.get(step)
        out.append([step, *(c.body if c is not None else ())])
    return out


def step_costs(graph: Graph, report: Any, *, batch: int = 1, dtype: str | None = None,
               regions: Sequence[Any] | None = None) -> dict[str, list[int]]:
    """{region id: standard-mode activation bytes each of its steps keeps}, in execution order.

    ``regions`` defaults to ``report.regions`` (the full check's); each needs
    ``steps`` (and ``couplings`` for wired couplings), like the compiler's analysis.
    """
    return step_prices(graph, report, batch=batch, dtype=dtype, regions=regions)[0]


Prices = tuple[dict[str, list[int]], dict[str, list[int]], dict[str, list[int]]]


def step_prices(graph: Graph, report: Any, *, batch: int = 1, dtype: str | None = None,
                regions: Sequence[Any] | None = None) -> Prices:
    """(:func:`step_costs`, refunds, fixed): ``refunds[rid][n]`` is what a cut after the first
    ``n`` steps gives back of their costs, ``fixed[rid][n]`` what keeping them adds whatever
    the batch: the bytes of the first ``n`` steps that do not grow with it, and the samples
    the reversible rest keeps of each value it rebuilds from the head (its inversion-error
    reference; the values themselves it releases). Costs and refunds are at ``batch`` and
    grow with it; ``fixed[rid][len]`` is the whole region's.

    The reversible rest releases the values it reads from the kept head and rebuilds them
    in backward, so a coupling merge whose result crosses the cut keeps nothing after all
    (its bytes were counted to it, as the value a later coupling saves). Only merges count:
    their results are tensors of their own, which the runtime can release; 0 elsewhere
    (inside a Repeat, for views), so the price errs high, never low.
    """
    own = regions is None  # the check's own regions: its estimate can be one of the two below
    regions = list(report.regions if regions is None else regions)
    if not regions:
        return {}, {}, {}
    # a step's bytes are a part per sample and a part whatever the batch (a flow layer's weight
    # built from its factors): priced at two batches, the constant part goes with the cuts
    # (``fixed``), so scaling the costs by the batch never scales it
    one = estimate(graph, report, regions, batch=1, dtype=dtype)
    other = getattr(report, "estimate", None) if own else None
    if other is None or other.batch < 2 or other.dtype != one.dtype:
        other = estimate(graph, report, regions, batch=2, dtype=dtype)
    scale = max(1, int(batch))
    span = int(other.batch) - 1  # (bytes at batch b = per sample * b + constant, exactly)
    costs_of: dict[str, list[int]] = {}
    refunds_of: dict[str, list[int]] = {}
    fixed_of: dict[str, list[int]] = {}
    for region in regions:
        costs: list[int] = []
        consts: list[int] = []
        ends: list[int | None] = []  # per expanded step: the region step it completes (None: a copy inside)
        step_nodes = _step_nodes(region)
        for j, nodes in enumerate(step_nodes):
            at1 = sum(one.nodes[n].activation_bytes["standard"] for n in nodes if n in one.nodes)
            at_b = sum(other.nodes[n].activation_bytes["standard"] for n in nodes if n in other.nodes)
            per = max(0, -(-(at_b - at1) // span))  # (rounded up, should a rule not be exactly linear)
            const = max(0, at1 - per)
            times = _copies(graph, nodes[0])  # each copy of a Repeat is a step (alike: an equal share)
            costs += [-(-per * scale // times)] * times  # (rounded up: a share never prices low)
            consts += [-(-const // times)] * times
            ends += [None] * (times - 1) + [j]
        # the first steps read the region's inputs: where reversible mode releases those
        # (a stem layer's result), keeping the head keeps them alive, so the head pays for them
        freed = one.regions.get(region.id)
        if costs and freed is not None:
            costs[0] += max(0, int(freed.freed_input_bytes)) * scale
        if costs and find_in([graph.nodes[n[0]] for n in step_nodes if n[0] in graph.nodes], graph.groups, FLOW_TYPES):
            # a flow's head hands its log-determinant so far to the rest, which copies it (the
            # runtime's wide dtype): one more float64 per sample at any cut
            costs[0] += 8 * scale
        costs_of[region.id] = costs
        refunds_of[region.id] = refunds = [r * scale for r in _cut_refunds(graph, report, region, step_nodes, ends, one)]
        if freed is not None and costs:  # kept whole, what reversible mode keeps for it (its
            refunds[len(costs)] = max(0, int(freed.reversible_bytes)) * scale  # wide outputs) is given back
        samples = [SAMPLE_BYTES * n for n in _cut_values(graph, step_nodes, ends)]
        fixed_of[region.id] = [samples[n] + sum(consts[:n]) for n in range(len(samples))]
    return costs_of, refunds_of, fixed_of


def _cut_values(graph: Graph, step_nodes: list[list[str]], ends: list[int | None]) -> list[int]:
    """Per cut position (0..len(ends)): how many values made before the cut are read after it
    (inside a Repeat, between its copies: one per copy output, counted from the Repeat's)."""
    step_of = {n: j for j, nodes in enumerate(step_nodes) for n in nodes}
    spans: list[tuple[int, int]] = []  # (made by step, last read by step) per value
    for j, nodes in enumerate(step_nodes):
        ports: dict[str, int] = {}
        for e in graph.edges_from(nodes[0]):
            r = step_of.get(e.dst.node)
            if r is not None and r > j:
                ports[e.src.port] = max(r, ports.get(e.src.port, r))
        spans += [(j, last) for last in ports.values()]
    widest = max((len(graph.ports(nodes[0])[1]) for nodes in step_nodes if nodes[0] in graph.nodes), default=1)
    out = [0] * (len(ends) + 1)
    for n in range(1, len(ends)):
        end = ends[n - 1]
        out[n] = widest if end is None else sum(1 for made, last in spans if made <= end < last)
    return out


def _cut_refunds(graph: Graph, report: Any, region: Any, step_nodes: list[list[str]], ends: list[int | None],
                 est: Any) -> list[int]:
    """Per cut position (0..len(ends)): the bytes of merge results read across it."""
    step_of = {n: j for j, nodes in enumerate(step_nodes) for n in nodes}
    outputs = {str(v) for v in getattr(region, "outputs", ())}
    outside = {v.partition(".")[0] for v in outputs}
    renames = _renames(graph, report, region)
    # (made by step, last read by step, bytes, cuts it does not cross: between a Concat and its Split)
    crossing: list[tuple[int, int, int, set[int]]] = []
    for j, nodes in enumerate(step_nodes):
        merge = nodes[0]
        node = graph.nodes.get(merge)
        if node is None or node.type != "Merge" or merge in outside or merge not in est.nodes:
            continue
        found: list[int | None] = []
        apart: set[int] = set()
        for e in graph.edges_from(merge):
            alias = renames.get((e.dst.node, e.dst.port))
            if alias is None:
                found.append(step_of.get(e.dst.node))
            elif f"{alias[0]}.{alias[1]}" in outputs:
                found.append(None)
            else:  # a Concat the next Split undoes: the runtime hands the very tensor on,
                # unless the cut falls between the two (then the head concatenates: a copy)
                found += [step_of.get(e2.dst.node) for e2 in graph.edges_from(alias[0], alias[1])]
                apart.add(step_of[e.dst.node])
        readers = [r for r in found if r is not None]
        if not readers or len(readers) < len(found):
            continue  # read outside the region too
        crossing.append((j, max(readers), int(est.nodes[merge].activation_bytes["standard"]), apart))
    out = [0] * (len(ends) + 1)
    for n in range(1, len(ends)):
        end = ends[n - 1]
        if end is not None:
            out[n] = sum(b for made, last, b, apart in crossing if made <= end < last and end not in apart)
    return out



def _renames(graph: Graph, report: Any, region: Any) -> dict[tuple[str, str], tuple[str, str]]:
    """{(Concat, input port): (Split, output port)} where a Concat step is undone by the next
    step, a Split into the same parts along the same axis: the runtime renames the parts
    (``runtime_layout.fuse_cat_slice``) instead of copying them, so a part read after the
    Split is the very tensor the Concat was given."""
    out: dict[tuple[str, str], tuple[str, str]] = {}
    steps = list(getattr(region, "steps", ()))
    for cat, cut in zip(steps, steps[1:]):
        a, b = graph.nodes.get(cat), graph.nodes.get(cut)
        if a is None or b is None or a.type != "Concat" or b.type != "Split":
            continue
        edges = graph.edges_from(cat)
        if len(edges) != 1 or edges[0].dst.node != cut:
            continue
        if graph.resolved_params(cat).get("dim", 0) != graph.resolved_params(cut).get("dim", 0):
            continue
        ins, outs = graph.ports(cat)[0], graph.ports(cut)[1]
        given = {e.dst.port: e.src for e in graph.edges_into(cat)}
        if len(ins) != len(outs) or any(
                p not in given or report.shape(given[p]) is None
                or report.shape(given[p]) != report.shape(f"{cut}.{o}") for p, o in zip(ins, outs)):
            continue
        out.update({(cat, p): (cut, o) for p, o in zip(ins, outs)})
    return out


@dataclass
class RegionChoice:
    """One region under a budget: its first ``kept_steps`` of ``steps`` keep their activations."""

    region: str
    steps: int
    kept_steps: int
    kept_bytes: int       # estimated standard-mode bytes of the kept steps
    standard_bytes: int   # estimated standard-mode bytes of the whole region

    @property
    def state(self) -> str:
        """"kept" (the whole region), "partly kept" or "reversible"."""
        if self.kept_steps >= self.steps and self.steps:
            return "kept"
        return "partly kept" if self.kept_steps else "reversible"

    def to_json(self) -> dict[str, Any]:
        return {"region": self.region, "state": self.state, "steps": self.steps, "kept_steps": self.kept_steps,
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
        return f"first {r.kept_steps}/{r.steps} steps kept"

    def summary_lines(self) -> list[str]:
        budget = "unlimited" if self.budget is None else fmt_bytes(self.budget)
        lines = [f"memory budget {budget} (batch {self.batch}): keeps {fmt_bytes(self.kept_bytes)} "
                 "of activations (estimate); the rest runs reversibly"]
        for r in self.regions.values():
            lines.append(f"  region {r.region}: {r.state}, {r.kept_steps}/{r.steps} first steps "
                         f"({fmt_bytes(r.kept_bytes)} of {fmt_bytes(r.standard_bytes)})")
        return lines

    def to_json(self) -> dict[str, Any]:
        return {"budget_bytes": self.budget, "batch": self.batch, "kept_bytes": self.kept_bytes,
                "kept_regions": self.kept_regions(),
                "regions": [r.to_json() for r in self.regions.values()]}


def choose(costs: Mapping[str, Sequence[int]], budget: int | None, batch: int = 1,
           refunds: Mapping[str, Sequence[int]] | None = None,
           fixed: Mapping[str, Sequence[int]] | None = None) -> BudgetChoice:
    """The choice for per-step ``costs`` and cut ``refunds`` (both already at ``batch``) and the
    cuts' ``fixed`` bytes (the same at every batch)."""
    from revstudio.compiler.budget import prefix_cost, select_kept

    kept = select_kept(costs, budget, refunds, fixed)
    out = BudgetChoice(budget, batch)
    for rid, steps in costs.items():
        k = kept.get(rid, 0)
        cost = prefix_cost(steps, (refunds or {}).get(rid), k, (fixed or {}).get(rid))
        out.regions[rid] = RegionChoice(rid, len(steps), k, cost, sum(steps))
    return out


def budget_choice(graph: Graph, report: Any, budget: int | None, *, batch: int = 1,
                  dtype: str | None = None) -> BudgetChoice:
    """Which regions a ``budget`` (bytes; None = unlimited) keeps at ``batch``, from the
    full check's ``report`` (torch-free; the canvas badges call it). Priced at batch 1
    and scaled, exactly as the compiled model does, so both make the same choice."""
    return _choice(graph, report, budget, batch, dtype)[0]


def _choice(graph: Graph, report: Any, budget: int | None, batch: int,
            dtype: str | None) -> tuple[BudgetChoice, dict[str, list[int]]]:
    """:func:`budget_choice` and the per-step costs it priced (at ``batch``)."""
    return _choose_at(step_prices(graph, report, batch=1, dtype=dtype), budget, batch)


def _choose_at(prices: Prices, budget: int | None,
               batch: int) -> tuple[BudgetChoice, dict[str, list[int]]]:
    """The choice from ``step_prices`` at batch 1, scaled to ``batch``, and the costs it priced."""
    costs, refunds, fixed = prices
    at_batch = scaled(costs, batch)
    return choose(at_batch, budget, batch, scaled(refunds, batch), fixed), at_batch


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
    the steps priced once (a search over batches asks at many: ``estimate_fit``)."""
    prices = step_prices(graph, report, batch=1, dtype=dtype)
    regions = list(getattr(report, "regions", None) or [])

    def peak(est: Any) -> int:
        return _peak_under(graph, est, regions, *_choose_at(prices, budget, est.batch))

    return peak


def _peak_under(graph: Graph, est: Any, regions: Sequence[Any], choice: BudgetChoice,
                costs: Mapping[str, Sequence[int]], optimizer: str | None = None) -> int:
    heads: dict[str, frozenset[str]] = {}
    inside: dict[str, int] = {}
    for r in regions:
        kept = choice.regions[r.id].kept_steps if r.id in choice.regions else 0
        if kept:
            heads[r.id], inside[r.id] = kept_parts(graph, r, kept, costs.get(r.id, ()))
    return est.peak_keeping(heads, inside).peak + _state_bytes(est.parameter_bytes(), optimizer)


def budget_summary(graph: Graph, report: Any, budget: int, *, batch: int) -> str:
    """One line on what ``budget`` does at ``batch``: what it keeps, region by region, and the
    estimated peak beside reversible and standard mode's (for the run settings)."""
    choice, costs = _choice(graph, report, budget, batch, None)
    if not choice.regions:
        return "no reversible region: the budget has nothing to keep"
    parts = []
    for r in choice.regions.values():
        what = ("whole" if r.state == "kept" else f"first {r.kept_steps}/{r.steps} steps") if r.kept_steps else "none"
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


def kept_parts(graph: Graph, region: Any, kept_steps: int, costs: Sequence[int]) -> tuple[frozenset[str], int]:
    """The nodes of the whole steps among a region's first ``kept_steps`` (a Repeat's copies each
    a step), and where the cut falls inside a Repeat, the bytes its kept copies keep (``costs``:
    per step, at the batch): those copies run in the region's rest, keeping their activations
    until its backward is done."""
    out: set[str] = set()
    n = 0
    for nodes in _step_nodes(region):
        if n >= kept_steps:
            break
        times = _copies(graph, nodes[0])
        if n + times > kept_steps:
            return frozenset(out), int(sum(costs[n:kept_steps]))
        n += times
        out.update(nodes)
    return frozenset(out), 0


def _copies(graph: Graph, step: str) -> int:
    """How many budget steps a region step counts as: a Repeat's copies, else 1."""
    node = graph.nodes.get(step)
    return max(1, int(graph.resolved_params(step).get("times", 1))) if node and node.type == "Repeat" else 1


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
