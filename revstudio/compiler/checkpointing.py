"""Where checkpoint mode cuts a reversible region into segments (torch-free).

``torch.utils.checkpoint`` over a whole region recomputes all of it at once in
backward, so the peak is standard mode's. Cut into ``k`` segments, backward
holds the ``k`` segment inputs plus one segment's activations: about
``sqrt(N)`` segments of ``sqrt(N)`` steps each for ``N`` computing steps keeps
both small (Chen et al. 2016, ``checkpoint_sequential``). The compiler and the
static estimate both call :func:`region_segments`, so what the estimate counts
is what runs.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

# Steps that only move memory around: they add no activations worth a segment of their own.
STRUCTURAL_STEPS = frozenset({"Split", "Concat", "Flatten", "Reshape", "Permute", "Squeeze"})


def step_weight(step_type: str) -> int:
    """1 for a step that computes (a coupling, an invertible layer, a group), 0 for a layout step."""
    return 0 if step_type in STRUCTURAL_STEPS else 1


def region_segments(weights: Sequence[int]) -> list[tuple[int, int]]:
    """(start, end) step ranges of the checkpoint segments of a region whose steps weigh ``weights``.

    ``k = round(sqrt(N))`` segments for ``N`` computing steps, each holding
    ``N / k`` of them (the first ones one more when it does not divide); a cut
    always falls just before a computing step, so layout steps stay with the
    step they follow. One segment when there are fewer than three computing steps.
    """
    total = sum(1 for w in weights if w)
    if not weights:
        return []
    k = max(1, round(math.sqrt(total))) if total >= 3 else 1
    if k == 1:
        return [(0, len(weights))]
    # the computing step each segment after the first starts with
    starts, base, extra = set(), total // k, total % k
    seen, target = 0, 0
    for s in range(k - 1):
        target += base + (1 if s < extra else 0)
        starts.add(target)
    bounds = [0]
    for i, w in enumerate(weights):
        if w:
            if seen in starts and i > 0:
                bounds.append(i)
            seen += 1
    bounds.append(len(weights))
    return [(a, b) for a, b in zip(bounds, bounds[1:]) if b > a]
