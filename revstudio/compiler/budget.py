"""A memory budget: which regions (or first steps of a region) keep their activations.

Reversible mode rebuilds every region's activations in backward; a user with
memory to spare can buy that time back. Given what each step of each region
would keep for backward in standard mode (bytes, from the static estimate),
:func:`select_kept` picks, within ``budget`` bytes, how many of the *first*
steps of each region run as in standard mode (autograd keeps their
activations): a prefix of one plan for all budgets (:func:`kept_plan`), so a
larger budget keeps all a smaller one keeps, region by region. The remaining
(later) steps run reversibly. :func:`split_region_data` cuts a region's plain data
(``assembly.region_data``) at that step: a standard head and a reversible
tail over the very same layers. The head comes first because a cut there is
free: the tail releases the head's last values and rebuilds them in backward
(and the first step reads the region's input, which the caller keeps anyway),
while a reversible head would keep its outputs with their compensation at the
cut, a whole stream's worth (measured in benchmarks/README.md).

Torch-free: the editor's badges and ``revstudio memory --budget`` call the
same selection the runtime uses.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any


def budget_bytes(value: Any) -> float | None:
    """``CompiledModel.memory_budget``'s value checked: None (no budget), a whole number of bytes
    >= 0 (an int), an amount as users write it (``"64MiB"``, ``"1.5GB"``: the parser the
    ``memory_budget`` training setting and ``revstudio memory --budget`` use) or ``math.inf``
    (unlimited); a ValueError names the value and says what to use otherwise."""
    if value is None:
        return None
    if isinstance(value, str):
        # (lazily: the parser's module imports this one; both are torch-free)
        from revstudio.diagnostics.budget import parse_bytes

        try:
            return parse_bytes(value)
        except ValueError as exc:
            raise ValueError(f"memory_budget {exc}; or an int of bytes, math.inf (unlimited) or "
                             "None (no budget)") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) or value < 0:
        raise ValueError(f"memory_budget {value!r} is not a number of bytes; use an int >= 0, an amount "
                         "such as \"64MiB\" or \"1.5GB\", math.inf (unlimited) or None (no budget)")
    if math.isinf(value):
        return value
    if value != int(value):  # (as the project file; 1.5 kept 1 byte)
        raise ValueError(f"memory_budget {value!r} is not a whole number of bytes; use an int such as "
                         f"{math.floor(value)}")
    return int(value)


def prefix_cost(costs: Sequence[int], refunds: Sequence[int] | None, n: int,
                fixed: Sequence[int] | None = None) -> int:
    """What keeping the first ``n`` steps costs beyond reversible mode: their bytes less what
    the cut after them gives back (``refunds[n]``: values the reversible rest releases), plus
    what keeping them adds whatever the batch (``fixed[n]``: the rest's inversion-error
    samples of them, their bytes that do not grow with the batch). A whole region has no
    cut and no samples; its ``refunds[len(costs)]`` is what reversible mode keeps for it
    anyway per sample (its wide outputs) and ``fixed[len(costs)]`` less what it keeps whatever
    the batch (its inputs' inversion-error samples), which keeping it whole gives back."""
    total = sum(max(0, int(c)) for c in costs[:n])
    if n <= 0:
        return total
    if refunds is not None and n < len(refunds):
        total = max(0, total - max(0, int(refunds[n])))
    if fixed is not None and n < len(fixed):
        total = max(0, total + int(fixed[n]))
    return total


def select_kept(costs: Mapping[str, Sequence[int]], budget: int | None,
                refunds: Mapping[str, Sequence[int]] | None = None,
                fixed: Mapping[str, Sequence[int]] | None = None,
                worth: Mapping[str, Sequence[bool]] | None = None) -> dict[str, int]:
    """{region id: number of its first steps kept}: as many steps that save a rebuild as fit.

    ``costs``: per region (in execution order) the standard-mode bytes each step
    keeps; ``refunds`` and ``fixed`` (optional): per region, what a cut after the first
    ``n`` steps gives back and adds (see :func:`prefix_cost`); ``worth`` (optional): per
    region and step, whether keeping it saves a rebuild (a coupling, a flow layer, a Repeat's
    copy; not a Split, Concat or Squeeze, whose inverse is a view or a copy), by default
    every step that costs something. ``None`` = unlimited (every step kept: standard mode's
    speed); 0 keeps nothing (reversible mode's memory).

    The choice is a prefix of one fixed plan (:func:`kept_plan`), the longest whose price fits,
    so a larger budget keeps every step a smaller one keeps, in every region (a cheapest
    combination per budget, a knapsack, kept the most steps in all but moved them between
    regions: 8 KiB more gave up one region's steps for a longer stretch of another's). A
    cut falls after free steps (a Concat, a Split) only where that costs less than the cut
    right after the coupling before them (whose results the rest releases and rebuilds).
    """
    if budget is None:
        return {rid: len(steps) for rid, steps in costs.items()}
    left = max(0, int(budget))
    kept = {rid: 0 for rid in costs}
    if left == 0:  # reversible mode's memory, exactly (a region whose whole costs nothing included)
        return kept
    for price, rid, k in kept_plan(costs, refunds, fixed, worth):
        if price > left:
            break
        kept[rid] = k
    return kept


def kept_plan(costs: Mapping[str, Sequence[int]], refunds: Mapping[str, Sequence[int]] | None = None,
              fixed: Mapping[str, Sequence[int]] | None = None,
              worth: Mapping[str, Sequence[bool]] | None = None) -> list[tuple[int, str, int]]:
    """The order in which growing budgets keep steps: (total price, region, its steps kept
    from then on), the prices never falling. Each move takes one region to its next cut worth
    having (one that keeps more steps than every cheaper cut of it), the move whose added
    bytes per step saved are least (ties: the fewer bytes, then the earlier region). Any
    budget keeps a prefix of it, so no region's kept steps fall as the budget grows. The price
    of that: on the examples, two two-region chains and 60 random networks at batches 1 and 8
    (22,875 budgets, 200 per case), it keeps 0.26 % fewer steps than the most any choice of cuts
    could keep within each budget, fewer at 183 of those budgets (benchmarks/README.md)."""
    fronts: list[list[tuple[int, int, int]]] = []
    for rid, steps in costs.items():
        back = None if refunds is None else refunds.get(rid)
        extra = None if fixed is None else fixed.get(rid)
        saves = None if worth is None else worth.get(rid)
        found: list[tuple[int, int, int]] = []
        value = 0
        for k in range(len(steps) + 1):
            if k and (steps[k - 1] if saves is None else (k - 1 < len(saves) and saves[k - 1])):
                value += 1
            found.append((prefix_cost(steps, back, k, extra), value, k))
        # from keeping nothing, the cuts that keep more than every cheaper one
        fronts.append([c for c in _frontier(found) if c[1] > 0])
    ids = list(costs)
    at = [(0, 0, 0)] * len(ids)  # per region: (price, value, cut) now
    nxt = [0] * len(ids)  # per region: its next cut in ``fronts``
    total = 0
    plan: list[tuple[int, str, int]] = []
    while True:
        best: tuple[tuple[float, int, int], int] | None = None
        for i, front in enumerate(fronts):
            if nxt[i] < len(front):
                price, value, _ = front[nxt[i]]
                key = ((price - at[i][0]) / (value - at[i][1]), price - at[i][0], i)
                if best is None or key < best[0]:
                    best = (key, i)
        if best is None:
            return plan
        i = best[1]
        step = fronts[i][nxt[i]]
        total += step[0] - at[i][0]
        at[i], nxt[i] = step, nxt[i] + 1
        plan.append((total, ids[i], step[2]))


def _frontier(choices: Sequence[tuple[int, int, Any]]) -> list[tuple[int, int, Any]]:
    """The choices (price, value, what) that nothing cheaper or as cheap beats in value: by
    price, each keeping more than every cheaper one (of equal ones the first, the earliest cut)."""
    out: list[tuple[int, int, Any]] = []
    for price, value, what in sorted(choices, key=lambda c: (c[0], -c[1])):
        if not out or value > out[-1][1]:
            out.append((price, value, what))
    return out


def step_reads(step: Mapping[str, Any]) -> list[str]:
    """Values a step of region data reads from before it (in a stable order)."""
    if step["kind"] == "coupling":
        made: set[str] = set()
        reads = [step["a"], *step["b"]]
        for layer in step["body"]:
            reads += [v for v in layer["inputs"] if v not in made]
            made.update(layer["outputs"])
        return list(dict.fromkeys(reads))
    return list(dict.fromkeys(step["inputs"]))


def step_writes(step: Mapping[str, Any]) -> list[str]:
    """Values a step of region data makes (visible to the steps after it)."""
    return [step["output"]] if step["kind"] == "coupling" else list(step["outputs"])


def blocks_of(step: Mapping[str, Any]) -> int:
    """How many budget steps a step of region data counts as: each copy of a Repeat is one."""
    return max(1, int(step.get("times", 1))) if step.get("type") == "Repeat" and "body" in step else 1


def expand(steps: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Steps with every Repeat as its copies, one step each (``"blocks": [i, i + 1]``), chained
    through the names ``assembly`` gives the values between copies."""
    out: list[dict[str, Any]] = []
    for step in steps:
        n = blocks_of(step)
        if n == 1:
            out.append(dict(step))
            continue
        values = list(step["inputs"])
        for i in range(n):
            nxt = list(step["outputs"]) if i == n - 1 else [f"{step['module']}#{i}:{k}"
                                                             for k in range(len(step["outputs"]))]
            out.append({**step, "inputs": values, "outputs": nxt, "blocks": [i, i + 1]})
            values = nxt
    return out


def split_region_data(data: Mapping[str, Any], kept: int) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(standard head, reversible tail) of a region whose first ``kept`` steps (each
    copy of a Repeat counts as one, see :func:`expand`) keep their activations; either
    is None when it would have no steps.

    The head returns every value it makes (or passes through) that the tail or the
    region's result reads; region inputs the tail reads directly go to it as they are.
    The tail may release (``free``) what the head made: autograd keeps those values
    for the head's backward, and the tail's backward rebuilds them in place before
    that runs, so the cut costs no copy of the streams there (a reversible head
    would keep its outputs and their compensation at the cut instead).
    """
    steps = expand(data["steps"])
    cut = max(0, min(len(steps), int(kept)))
    if cut == len(steps):
        return dict(data), None
    if cut == 0:
        return None, dict(data)
    head, tail = steps[:cut], steps[cut:]
    inputs = list(data["inputs"])
    made_head: list[str] = []
    head_reads: list[str] = []
    for step in head:
        head_reads += [v for v in step_reads(step) if v not in made_head]
        made_head += step_writes(step)
    made_tail: set[str] = set()
    tail_reads: list[str] = []
    for step in tail:
        tail_reads += [v for v in step_reads(step) if v not in made_tail]
        made_tail.update(step_writes(step))
    needed = list(dict.fromkeys(tail_reads + [v for v in data["outputs"] if v not in made_tail]))
    made = set(made_head)
    passed = [v for v in needed if v in made]  # what the head hands to the tail
    direct = [v for v in needed if v not in made]  # region inputs the tail reads itself
    reads = set(head_reads)
    if not passed or not any(v in made for v in tail_reads):
        return dict(data), None  # the rest reads nothing the head makes: keep the whole region
    outputs = set(data["outputs"])
    head_data = {
        "id": data["id"], "steps": head,
        "inputs": [v for v in inputs if v in reads],
        "outputs": passed,
        "side": [v for v in data["side"] if v in reads],
        "free": [], "given": [],
    }
    tail_data = {
        "id": data["id"], "steps": tail,
        "inputs": list(dict.fromkeys(passed + direct)),
        "outputs": list(data["outputs"]),
        "side": [v for v in data["side"] if v in set(tail_reads)],
        "free": [v for v in passed if v not in outputs] + [v for v in data["free"] if v in direct],
        "given": [v for v in data.get("given", ()) if v in direct],
    }
    return head_data, tail_data
