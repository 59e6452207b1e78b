"""Where checkpoint mode cuts a reversible region into segments (torch-free).

``torch.utils.checkpoint`` over a whole region recomputes all of it at once in
backward, so the peak is standard mode's. Cut into ``k`` segments, backward
holds the ``k`` segment inputs plus one segment's activations: about
``sqrt(N)`` segments of ``sqrt(N)`` steps each for ``N`` computing steps keeps
both small (Chen et al. 2016, ``checkpoint_sequential``).

A region's plan steps are cut between *pieces*: a step is one piece, except a
``Repeat``, whose copies are one piece each (so a Repeat of 32 blocks, a single
plan step, still gets about sqrt(N) segments). A piece weighs the computing
steps the runtime makes of it. The compiler (``assembly.region_data``), the
exported code (the same data) and the static estimate all call
:func:`region_cuts`, so what the estimate counts is what runs.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from revstudio.core.spec import registry


def step_weight(step_type: str) -> int:
    """Computing steps the runtime makes of one layer, as its type declares them: 0 for a step
    that only moves values around (``NodeSpec.layout_only``: it adds no activations worth a
    segment of its own), else ``NodeSpec.runtime_steps`` (2 for an AdditiveCoupling: F and G;
    1 for a coupling, an invertible layer, or a type the registry does not know)."""
    spec = registry.find(step_type)
    if spec is None:
        return 1
    return 0 if spec.layout_only else max(1, int(spec.runtime_steps))


def piece_weights(step_type: str, times: int = 1, body: int | None = None) -> list[int]:
    """The weights of the pieces of one plan step: a Repeat's ``times`` copies of a body
    weighing ``body`` each; a Group, its body as one piece; any other step, itself."""
    if step_type in ("Repeat", "Group") and body is not None:
        copies = max(1, int(times)) if step_type == "Repeat" else 1
        return [max(0, int(body))] * copies
    return [step_weight(step_type)]


def body_weight(pieces: Iterable[Sequence[int]]) -> int:
    """The weight of a group body whose steps have these pieces (one copy of a Repeat)."""
    return sum(sum(p) for p in pieces)


def _cut_points(weights: Sequence[int]) -> list[int]:
    """Indices of the pieces that start segments 2..k (see :func:`region_segments`)."""
    total = sum(max(0, int(w)) for w in weights)
    k = max(1, round(math.sqrt(total))) if total >= 3 else 1
    if k == 1:
        return []
    base, extra = total // k, total % k
    targets, acc = [], 0
    for s in range(k - 1):  # the weight before each segment after the first
        acc += base + (1 if s < extra else 0)
        targets.append(acc)
    cuts: list[int] = []
    seen = t = 0
    for i, w in enumerate(weights):
        if w <= 0:
            continue
        if i > 0 and t < len(targets) and seen >= targets[t]:
            cuts.append(i)
            while t < len(targets) and seen >= targets[t]:
                t += 1
        seen += int(w)
    return cuts


def region_segments(weights: Sequence[int]) -> list[tuple[int, int]]:
    """(start, end) piece ranges of the checkpoint segments of a region whose pieces weigh ``weights``.

    ``k = round(sqrt(N))`` segments for a total weight ``N`` of computing steps, each
    holding about ``N / k`` of it (the first ones one more when it does not divide); a
    cut always falls just before a computing piece, so layout steps stay with the step
    they follow. One segment when there are fewer than three computing steps.
    """
    if not weights:
        return []
    bounds = [0, *_cut_points(weights), len(weights)]
    return [(a, b) for a, b in zip(bounds, bounds[1:]) if b > a]


def region_cuts(pieces: Sequence[Sequence[int]]) -> list[tuple[int, int]]:
    """Where segments 2..k start, as (plan step, copy) pairs, for a region whose plan
    steps have these pieces (:func:`piece_weights`; a copy is 0 for a step that is not a Repeat)."""
    flat = [(i, c, w) for i, ws in enumerate(pieces) for c, w in enumerate(ws)]
    return [(flat[j][0], flat[j][1]) for j in _cut_points([w for _i, _c, w in flat])]
