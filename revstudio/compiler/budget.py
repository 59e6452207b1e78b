"""A memory budget: which regions (or first steps of a region) keep their activations.

Reversible mode rebuilds every region's activations in backward; a user with
memory to spare can buy that time back. Given what each step of each region
would keep for backward in standard mode (bytes, from the static estimate),
:func:`select_kept` picks, within ``budget`` bytes, how many of the *first*
steps of each region run as in standard mode (autograd keeps their
activations), starting with the last region. The remaining (later) steps run
reversibly. :func:`split_region_data` cuts a region's plain data
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

from collections.abc import Mapping, Sequence
from typing import Any


def prefix_cost(costs: Sequence[int], refunds: Sequence[int] | None, n: int,
                fixed: Sequence[int] | None = None) -> int:
    """What keeping the first ``n`` steps costs beyond reversible mode: their bytes less what
    the cut after them gives back (``refunds[n]``: values the reversible rest releases), plus
    what keeping them adds whatever the batch (``fixed[n]``: the rest's inversion-error
    samples of them, their bytes that do not grow with the batch). A whole region has no
    cut and no samples; its ``refunds[len(costs)]`` is what reversible mode keeps for it
    anyway (its wide outputs), which keeping it whole gives back."""
    total = sum(max(0, int(c)) for c in costs[:n])
    if n <= 0:
        return total
    if refunds is not None and n < len(refunds):
        total = max(0, total - max(0, int(refunds[n])))
    if fixed is not None and n < len(fixed):
        total += max(0, int(fixed[n]))
    return total


def select_kept(costs: Mapping[str, Sequence[int]], budget: int | None,
                refunds: Mapping[str, Sequence[int]] | None = None,
                fixed: Mapping[str, Sequence[int]] | None = None) -> dict[str, int]:
    """{region id: number of its first steps kept}, greedy from the last region backwards.

    ``costs``: per region (in execution order) the standard-mode bytes each step
    keeps; ``refunds`` and ``fixed`` (optional): per region, what a cut after the first
    ``n`` steps gives back and adds (see :func:`prefix_cost`). ``None`` = unlimited
    (every step kept: standard mode's speed); 0 keeps only steps that cost nothing.
    Within a region the kept steps are the longest prefix that fits (the whole region
    often costs less than a long prefix: see :func:`prefix_cost`), and what is left of
    the budget goes to the region before it. A partial prefix ends in steps that keep
    nothing (a Concat, a Split) only where that costs less than the cut right after the
    coupling before them (whose results the reversible rest releases and rebuilds).
    """
    left = None if budget is None else max(0, int(budget))
    kept: dict[str, int] = {}
    for rid in reversed(list(costs)):
        steps = list(costs[rid])
        back = None if refunds is None else refunds.get(rid)
        extra = None if fixed is None else fixed.get(rid)
        if left is None:
            kept[rid] = len(steps)
            continue
        price = [prefix_cost(steps, back, k, extra) for k in range(len(steps) + 1)]
        n = max((k for k in range(len(steps) + 1) if price[k] <= left), default=0)
        if n < len(steps):
            # free steps ride with the reversible rest: among the cuts back over them the
            # cheapest, the earliest of equals (right after a coupling). Prices need not grow
            # with the steps (a cut between a Concat and its Split copies); a later cut wins
            # only by costing less, so the steps kept grow with the budget
            m = n
            while m and not steps[m - 1]:
                m -= 1
            n = min(range(m, n + 1), key=lambda k: (price[k], k))
        left -= price[n]
        kept[rid] = n
    return {rid: kept[rid] for rid in costs}


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
