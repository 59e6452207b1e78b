"""Automatic layered layout and alignment, as pure functions over ids and sizes.

The layout follows the usual Sugiyama recipe: longest-path layering (inputs on
the left), a few barycentre sweeps to reduce crossings, then layers placed
left to right and stacked top to bottom. Weakly connected components are laid
out separately and stacked. Nothing here touches Qt or the graph: the canvas
turns the result into one ``Move`` command.
"""
from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Iterable, Mapping

Pos = tuple[float, float]
Size = tuple[float, float]

H_GAP = 70.0
V_GAP = 28.0
COMPONENT_GAP = 70.0
SWEEPS = 4


def _components(ids: list[str], edges: list[tuple[str, str]]) -> list[list[str]]:
    adj: dict[str, list[str]] = defaultdict(list)
    for a, b in edges:
        adj[a].append(b)
        adj[b].append(a)
    seen: set[str] = set()
    out: list[list[str]] = []
    for start in ids:  # ids come in a stable order, so components do too
        if start in seen:
            continue
        comp, queue = [], deque([start])
        seen.add(start)
        while queue:
            n = queue.popleft()
            comp.append(n)
            for m in adj[n]:
                if m not in seen:
                    seen.add(m)
                    queue.append(m)
        out.append(comp)
    return out


def _layers(ids: list[str], edges: list[tuple[str, str]]) -> dict[str, int]:
    """Longest path from the sources; nodes on a cycle go after what precedes them."""
    succ: dict[str, list[str]] = defaultdict(list)
    indeg = {n: 0 for n in ids}
    for a, b in edges:
        succ[a].append(b)
        indeg[b] += 1
    layer = {n: 0 for n in ids}
    queue = deque(n for n in ids if indeg[n] == 0)
    done: set[str] = set()
    while True:
        while queue:
            n = queue.popleft()
            done.add(n)
            for m in succ[n]:
                if m in done:
                    continue  # a back edge of a broken cycle
                layer[m] = max(layer[m], layer[n] + 1)
                indeg[m] -= 1
                if indeg[m] == 0:
                    queue.append(m)
        rest = [n for n in ids if n not in done]
        if not rest:
            return layer
        # A cycle (the checker reports it): break it at the first remaining node.
        indeg[rest[0]] = 0
        queue.append(rest[0])


def _barycentre(n: str, k: int, neighbours: dict[str, list[str]], ref: dict[str, int]) -> float:
    """Mean index of ``n``'s neighbours in the reference layer; keeps ``k`` if it has none."""
    ks = [ref[m] for m in neighbours[n] if m in ref]
    return sum(ks) / len(ks) if ks else float(k)


def _order(layers: dict[str, int], edges: list[tuple[str, str]], initial_y: Mapping[str, float]) -> list[list[str]]:
    count = max(layers.values()) + 1
    rows: list[list[str]] = [[] for _ in range(count)]
    for n in sorted(layers, key=lambda n: initial_y.get(n, 0.0)):
        rows[layers[n]].append(n)
    preds: dict[str, list[str]] = defaultdict(list)
    succs: dict[str, list[str]] = defaultdict(list)
    for a, b in edges:
        preds[b].append(a)
        succs[a].append(b)

    def sweep(index_rows: range, neighbours: dict[str, list[str]], ref_offset: int) -> None:
        for i in index_rows:
            ref = {n: k for k, n in enumerate(rows[i + ref_offset])}
            rows[i] = [n for _, n in sorted(((_barycentre(n, k, neighbours, ref), k), n)
                                            for k, n in enumerate(rows[i]))]

    for _ in range(SWEEPS):
        sweep(range(1, count), preds, -1)
        sweep(range(count - 2, -1, -1), succs, +1)
    return rows


def layered_layout(
    ids: Iterable[str],
    edges: Iterable[tuple[str, str]],
    sizes: Mapping[str, Size],
    origin: Pos = (0.0, 0.0),
    initial: Mapping[str, Pos] | None = None,
) -> dict[str, Pos]:
    """Top-left positions for ``ids``; ``edges`` (src node, dst node) among them only."""
    ids = list(dict.fromkeys(ids))
    idset = set(ids)
    edges = [(a, b) for a, b in edges if a in idset and b in idset and a != b]
    initial_y = {n: p[1] for n, p in (initial or {}).items()}
    out: dict[str, Pos] = {}
    y0 = origin[1]
    for comp in _components(ids, edges):
        cset = set(comp)
        cedges = [(a, b) for a, b in edges if a in cset]
        rows = _order(_layers(comp, cedges), cedges, initial_y)
        heights = [sum(sizes[n][1] for n in row) + V_GAP * (len(row) - 1) for row in rows]
        tallest = max(heights)
        x = origin[0]
        for row, height in zip(rows, heights):
            y = y0 + (tallest - height) / 2  # centre each layer on the component's mid-line
            for n in row:
                out[n] = (x, y)
                y += sizes[n][1] + V_GAP
            x += max(sizes[n][0] for n in row) + H_GAP
        y0 += tallest + COMPONENT_GAP
    return out


ALIGN_AXES = ("left", "right", "top", "bottom", "horizontal", "vertical")


def align(axis: str, rects: Mapping[str, tuple[float, float, float, float]]) -> dict[str, Pos]:
    """New top-left positions lining up ``rects`` (x, y, w, h) along ``axis``.

    left/right/top/bottom align those edges; ``horizontal`` puts the centres on
    one horizontal line (a row), ``vertical`` on one vertical line (a column).
    """
    if axis not in ALIGN_AXES:
        raise ValueError(f"unknown alignment {axis!r}; use one of {', '.join(ALIGN_AXES)}")
    if not rects:
        return {}
    vals = rects.values()
    if axis == "left":
        x = min(r[0] for r in vals)
        return {k: (x, r[1]) for k, r in rects.items()}
    if axis == "right":
        x = max(r[0] + r[2] for r in vals)
        return {k: (x - r[2], r[1]) for k, r in rects.items()}
    if axis == "top":
        y = min(r[1] for r in vals)
        return {k: (r[0], y) for k, r in rects.items()}
    if axis == "bottom":
        y = max(r[1] + r[3] for r in vals)
        return {k: (r[0], y - r[3]) for k, r in rects.items()}
    if axis == "horizontal":
        cy = sum(r[1] + r[3] / 2 for r in vals) / len(rects)
        return {k: (r[0], cy - r[3] / 2) for k, r in rects.items()}
    cx = sum(r[0] + r[2] / 2 for r in vals) / len(rects)
    return {k: (cx - r[2] / 2, r[1]) for k, r in rects.items()}
