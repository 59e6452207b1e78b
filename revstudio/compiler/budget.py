"""A memory budget: which regions (or late steps of a region) keep their activations.

Reversible mode rebuilds every region's activations in backward; a user with
memory to spare can buy that time back. Given what each step of each region
would keep for backward in standard mode (bytes, from the static estimate),
:func:`select_kept` picks, within ``budget`` bytes, how many of the *last*
steps of each region run as in standard mode (autograd keeps their
activations), starting with the last region: late activations are the first
backward frees, so keeping them raises the peak least. The remaining
(earliest) steps run reversibly. :func:`split_region_data` cuts a region's
plain data (``assembly.region_data``) at that step: a reversible prefix and a
standard suffix over the very same layers.

Torch-free: the editor's badges and ``revstudio memory --budget`` call the
same selection the runtime uses.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def select_kept(costs: Mapping[str, Sequence[int]], budget: int | None) -> dict[str, int]:
    """{region id: number of its last steps kept}, greedy from the last region backwards.

    ``costs``: per region (in execution order) the standard-mode bytes each step
    keeps. ``None`` = unlimited (every step kept: standard mode's speed); 0 keeps
    only steps that cost nothing. Within a region the kept steps are a suffix: the
    first step that does not fit ends that region's share, and what is left of
    the budget goes to the region before it.
    """
    left = None if budget is None else max(0, int(budget))
    kept: dict[str, int] = {}
    for rid in reversed(list(costs)):
        steps = list(costs[rid])
        n = 0
        for cost in reversed(steps):
            if left is not None and cost > left:
                break
            if left is not None:
                left -= max(0, int(cost))
            n += 1
        if left is not None and not any(steps[len(steps) - n:]):
            n = 0  # steps that keep nothing anyway: running them reversibly costs no memory
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
    """(reversible prefix, standard suffix) of a region whose last ``kept`` steps (each
    copy of a Repeat counts as one, see :func:`expand`) keep their activations; either
    is None when it would have no steps.

    The prefix returns every value it makes (or passes through) that the suffix
    or the region's result reads; region inputs the suffix reads directly go to
    it as they are, so the prefix never releases them (``free``).
    """
    steps = expand(data["steps"])
    cut = max(0, min(len(steps), len(steps) - int(kept)))
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
    passed = [v for v in needed if v in made]  # what the prefix hands to the suffix
    direct = [v for v in needed if v not in made]  # region inputs the suffix reads itself
    reads = set(head_reads)
    if not passed or not any(v in reads for v in inputs):
        return None, dict(data)  # nothing to cut at: keep the whole region
    prefix = {
        "id": data["id"], "steps": head,
        "inputs": [v for v in inputs if v in reads],
        "outputs": passed,
        "side": [v for v in data["side"] if v in reads],
        "free": [v for v in data["free"] if v in reads and v not in direct],
        "given": [v for v in data.get("given", ()) if v in reads],
    }
    suffix = {
        "id": data["id"], "steps": tail,
        "inputs": list(dict.fromkeys(passed + direct)),
        "outputs": list(data["outputs"]),
        "side": [v for v in data["side"] if v in set(tail_reads)],
        "free": [], "given": [],
    }
    return prefix, suffix
