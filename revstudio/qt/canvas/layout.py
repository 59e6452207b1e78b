"""Automatic layered layout and alignment, as pure functions over ids and sizes.

The layout follows the Sugiyama recipe: longest-path layering (inputs on the
left, a source pulled next to its first reader), long edges split into dummy
points, one per layer they cross, so a skip wire reserves its own row instead of
running behind the nodes it passes; a few barycentre sweeps order each layer;
y coordinates come from alternating sweeps that pull each node (and each dummy,
strongly, so long wires run straight) towards its neighbours' ports, with
overlaps removed exactly by isotonic regression (pool-adjacent-violators).
Nodes of different reversible regions keep their backdrops apart, vertically
and horizontally. Weakly connected components are stacked. Nothing here touches
Qt or the graph: the canvas turns the result into one ``Move`` command.
"""
from __future__ import annotations

import math
from collections import defaultdict, deque
from collections.abc import Iterable, Mapping, Sequence

Pos = tuple[float, float]
Size = tuple[float, float]

H_GAP = 70.0
V_GAP = 28.0
WIRE_GAP = 30.0          # from a node's edge to a wire passing it
WIRE_PITCH = 14.0        # between parallel wires (ports are 18 apart)
SPRING = 0.15           # pull towards the component's mid-line
CHAIN_W = 1000.0         # a long wire's row holds its height: the nodes make way
REGION_V_GAP = 110.0     # two backdrops above each other: margins plus the label band
REGION_H_GAP = 60.0      # extra room where one region ends and the next begins
COMPONENT_GAP = 90.0
SWEEPS = 4               # ordering sweeps (down + up each)
PASSES = 4               # coordinate passes (down + up each)
GRID = 1.0               # whole pixels: no float noise in the saved file, wires stay straight


def _components(ids: list[str], edges: Sequence[tuple[str, str, float, float]]) -> list[list[str]]:
    adj: dict[str, list[str]] = defaultdict(list)
    for a, b, _, _ in edges:
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


def _layers(ids: list[str], edges: Sequence[tuple[str, str, float, float]]) -> dict[str, int]:
    """Longest path from the sources; nodes on a cycle go after what precedes them.

    A source that feeds only late nodes (a second input, a constant) then moves
    right to sit just before its first reader rather than at the far left.
    """
    succ: dict[str, list[str]] = defaultdict(list)
    indeg = {n: 0 for n in ids}
    for a, b, _, _ in edges:
        succ[a].append(b)
        indeg[b] += 1
    sources = [n for n in ids if indeg[n] == 0]
    layer = {n: 0 for n in ids}
    queue = deque(sources)
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
            break
        # A cycle (the checker reports it): break it at the first remaining node.
        indeg[rest[0]] = 0
        queue.append(rest[0])
    for n in sources:
        later = [layer[m] for m in succ[n] if layer[m] > layer[n]]
        if later:
            layer[n] = min(later) - 1
    return layer


def _isotonic(targets: list[float], weights: list[float]) -> list[float]:
    """Weighted least-squares non-decreasing fit (pool adjacent violators), O(n)."""
    means: list[float] = []
    wsum: list[float] = []
    counts: list[int] = []
    for t, w in zip(targets, weights):
        means.append(t)
        wsum.append(w)
        counts.append(1)
        while len(means) > 1 and means[-2] > means[-1]:
            w2 = wsum[-2] + wsum[-1]
            means[-2] = (means[-2] * wsum[-2] + means[-1] * wsum[-1]) / w2
            wsum[-2] = w2
            counts[-2] += counts[-1]
            means.pop()
            wsum.pop()
            counts.pop()
    out: list[float] = []
    for m, c in zip(means, counts):
        out.extend([m] * c)
    return out


class _Component:
    """One connected component with dummies, ordered and placed."""

    def __init__(self, comp: list[str], edges: list[tuple[str, str, float, float]],
                 sizes: Mapping[str, Size], regions: Mapping[str, str], initial_y: Mapping[str, float]) -> None:
        self.sizes = dict(sizes)
        self.regions = regions
        layer = _layers(comp, edges)
        self.dummies: set[str] = set()
        # segments between adjacent layers: (upper-layer end, lower-layer end, its port offset, ...)
        self.preds: dict[str, list[tuple[str, float, float, float]]] = defaultdict(list)  # n -> (m, m_off, n_off, w)
        self.succs: dict[str, list[tuple[str, float, float, float]]] = defaultdict(list)
        init = {n: initial_y.get(n, 0.0) for n in comp}
        self.chain_src: dict[str, tuple[str, float]] = {}  # dummy -> what it follows (node, port y)
        chains: dict[tuple[str, float], list[str]] = {}
        for a, b, ya, yb in edges:
            la, lb = layer[a], layer[b]
            if lb <= la:
                continue  # a back edge of a cycle: it takes no part in the placement
            if lb == la + 1:
                self._segment(a, b, ya, yb, 1.0, 1.0)
                continue
            # Wires leaving one port share one row of dummies at that port's height:
            # the wire runs level from its output and bends into its input at the end.
            chain = chains.setdefault((a, ya), [])
            while len(chain) < lb - la - 1:
                d = f"\0{len(self.dummies)}"
                self.dummies.add(d)
                layer[d] = la + 1 + len(chain)
                self.sizes[d] = (0.0, 0.0)
                init[d] = init[a] + ya
                prev, off = (chain[-1], 0.0) if chain else (a, ya)
                self.chain_src[d] = (prev, off)
                self._segment(prev, d, off, 0.0, 0.0, CHAIN_W)  # the row follows its source
                chain.append(d)
            self._segment(chain[lb - la - 2], b, 0.0, yb, 0.0, 1.0)
        self.layer = layer
        rows: list[list[str]] = [[] for _ in range(max(layer.values()) + 1)]
        for n in sorted(layer, key=lambda n: init[n]):
            rows[layer[n]].append(n)
        self.rows = rows

    def _segment(self, u: str, v: str, u_off: float, v_off: float, w_u: float, w_v: float) -> None:
        """An edge between adjacent layers; ``w_u`` is how much it pulls ``u``, ``w_v`` ``v``."""
        self.succs[u].append((v, v_off, u_off, w_u))
        self.preds[v].append((u, u_off, v_off, w_v))

    def _frac(self, n: str, off: float) -> float:
        h = self.sizes[n][1]
        return 0.8 * off / h if h > 0 else 0.0

    def order(self) -> None:
        def sweep(index_rows: Iterable[int], nbrs: dict[str, list[tuple[str, float, float, float]]], ref: int) -> None:
            for i in index_rows:
                at = {n: k + self._frac(n, 0.0) for k, n in enumerate(self.rows[i + ref])}
                keyed = []
                for k, n in enumerate(self.rows[i]):
                    ks = [at[m] + self._frac(m, m_off) for m, m_off, _, _ in nbrs[n] if m in at]
                    keyed.append((sum(ks) / len(ks) if ks else float(k), k, n))
                keyed.sort()
                self.rows[i] = [n for _, _, n in keyed]

        count = len(self.rows)
        for _ in range(SWEEPS):
            sweep(range(1, count), self.preds, -1)
            sweep(range(count - 2, -1, -1), self.succs, +1)

    def _gap(self, a: str, b: str) -> float:
        if a in self.dummies and b in self.dummies:
            return WIRE_PITCH
        if a in self.dummies or b in self.dummies:
            return WIRE_GAP
        ra, rb = self.regions.get(a), self.regions.get(b)
        return REGION_V_GAP if ra != rb else V_GAP

    def _place_row(self, row: list[str], want: dict[str, tuple[float, float]]) -> None:
        """Put ``row`` as close to the wanted tops as its order and gaps allow."""
        targets, weights, offsets = [], [], []
        c = 0.0
        for i, n in enumerate(row):
            if i:
                prev = row[i - 1]
                c += self.sizes[prev][1] + self._gap(prev, n)
            d, w = want[n]
            offsets.append(c)
            targets.append(d - c)
            weights.append(w)
        for n, z, c in zip(row, _isotonic(targets, weights), offsets):
            self.y[n] = z + c

    def _wanted(self, n: str, nbrs: list[tuple[str, float, float, float]]) -> tuple[float, float]:
        src = self.chain_src.get(n)
        if src is not None:  # a dummy keeps its wire level
            return self.y[src[0]] + src[1], CHAIN_W
        total = sum(w for *_, w in nbrs)
        if not total:
            return self.y[n], 0.25  # nothing to follow: stay put, lightly
        # A weak pull towards the mid-line: a chain of blocks that each step a row
        # down (a RevNet's second merge sits below the first) would otherwise drift.
        pull = sum((self.y[m] + m_off - n_off) * w for m, m_off, n_off, w in nbrs) + SPRING * self.mid
        return pull / (total + SPRING), total + SPRING

    def place(self) -> None:
        self.y: dict[str, float] = {}
        for row in self.rows:  # start: each layer stacked from the top
            y = 0.0
            for i, n in enumerate(row):
                if i:
                    y += self.sizes[row[i - 1]][1] + self._gap(row[i - 1], n)
                self.y[n] = y
        first = [n for n in self.rows[0] if n not in self.dummies]
        self.mid = sum(self.y[n] + self.sizes[n][1] / 2 for n in first) / len(first) - 40.0
        count = len(self.rows)
        for p in range(PASSES):
            if p == PASSES // 2:
                # Reorder each layer by where its members ended up: a long wire's row
                # sits where its output is, so the order must agree with those heights.
                self.rows = [sorted(row, key=lambda n: (self._height(n), row.index(n))) for row in self.rows]
            for i in range(1, count):
                self._place_row(self.rows[i], {n: self._wanted(n, self.preds[n]) for n in self.rows[i]})
            for i in range(count - 2, -1, -1):
                self._place_row(self.rows[i], {n: self._wanted(n, self.succs[n]) for n in self.rows[i]})
        # a last balanced pass: each node between what feeds it and what it feeds
        for i in range(count):
            self._place_row(self.rows[i], {n: self._wanted(n, self.preds[n] + self.succs[n]) for n in self.rows[i]})
        self._clear_wires()
        self._separate_regions()
        self._clear_wires()

    def _separate_regions(self) -> None:
        """Move a region's backdrop (and what lies below it) clear of the one above."""
        boxes: dict[str, list[float]] = {}
        for n, k in self.layer.items():
            r = self.regions.get(n)
            if r is None or n in self.dummies:
                continue
            b = boxes.setdefault(r, [k, k, self.y[n], self.y[n] + self.sizes[n][1]])
            b[0], b[1] = min(b[0], k), max(b[1], k)
            b[2], b[3] = min(b[2], self.y[n]), max(b[3], self.y[n] + self.sizes[n][1])
        done: list[list[float]] = []
        placed: set[str] = set()
        for rid, box in sorted(boxes.items(), key=lambda kv: kv[1][2]):
            for other in done:
                if box[0] <= other[1] and other[0] <= box[1] and box[2] < other[3] + REGION_V_GAP:
                    shift = other[3] + REGION_V_GAP - box[2]
                    top = box[2]
                    for n, k in self.layer.items():
                        if n not in self.dummies and box[0] <= k <= box[1] and self.y[n] >= top \
                                and self.regions.get(n) not in placed:
                            self.y[n] += shift
                    box[2] += shift
                    box[3] += shift
            done.append(box)
            placed.add(rid)

    def _height(self, n: str) -> float:
        if n in self.dummies:
            a, off = self._root(n)
            return self.y[a] + off
        return self.y[n] + self.sizes[n][1] / 2

    def _root(self, d: str) -> tuple[str, float]:
        src = self.chain_src[d]
        while src[0] in self.chain_src:
            src = self.chain_src[src[0]]
        return src

    def _clear_wires(self) -> None:
        """Left to right, move nodes off the rows of the long wires passing their layer.

        A long wire is drawn level at its output's height; when the balanced
        placement could not keep that row free, the node makes way (up or down,
        whichever is nearer), never the wire.
        """
        for row in self.rows:
            wires = sorted(self.y[a] + off for a, off in (self._root(d) for d in row if d in self.dummies))
            prev: str | None = None
            for n in row:
                if n in self.dummies:
                    continue
                low = self.y[prev] + self.sizes[prev][1] + self._gap(prev, n) if prev is not None else float("-inf")
                self.y[n] = self._dodge(max(self.y[n], low), self.sizes[n][1], wires, low)
                prev = n

    @staticmethod
    def _dodge(y: float, h: float, wires: list[float], low: float) -> float:
        for _ in range(len(wires) + 1):
            hit = next((w for w in wires if y - WIRE_GAP < w < y + h + WIRE_GAP), None)
            if hit is None:
                return y
            up, down = hit - WIRE_GAP - h, hit + WIRE_GAP
            clear_up = up >= low and not any(up - WIRE_GAP < w < up + h + WIRE_GAP for w in wires)
            y = up if clear_up and y - up < down - y else down
        return y

    def xs(self) -> list[float]:
        out, x = [], 0.0
        for i, row in enumerate(self.rows):
            if i:
                prev = self.rows[i - 1]
                x += max([self.sizes[n][0] for n in prev] or [0.0]) + H_GAP
                before = {self.regions.get(n) for n in prev if n not in self.dummies}
                after = {self.regions.get(n) for n in row if n not in self.dummies}
                if (before - after) - {None} or (after - before) - {None}:
                    x += REGION_H_GAP  # a backdrop ends or starts here
            out.append(x)
        return out


def _snap(v: float) -> float:
    return round(round(v / GRID) * GRID, 6)


def stacked(positions: Iterable[Pos]) -> bool:
    """Whether the nodes at ``positions`` lie on one another, as a project file without ``pos`` (or
    made by ``Graph.add_node``'s default) places them: two or more, and at least half of them sharing
    their exact position with another. A hand-made layout with one node dropped on another is not."""
    counts: dict[Pos, int] = defaultdict(int)
    for p in positions:
        counts[(float(p[0]), float(p[1]))] += 1
    total = sum(counts.values())
    return total >= 2 and 2 * sum(c for c in counts.values() if c > 1) >= total


def layered_layout(
    ids: Iterable[str],
    edges: Iterable[tuple[str, str] | tuple[str, str, float, float]],
    sizes: Mapping[str, Size],
    origin: Pos = (0.0, 0.0),
    initial: Mapping[str, Pos] | None = None,
    regions: Mapping[str, str] | None = None,
) -> dict[str, Pos]:
    """Top-left positions for ``ids``, the top-left of the whole at ``origin``.

    ``edges`` are (src node, dst node) or (src node, dst node, src port y, dst
    port y) with the ports' heights inside their nodes; edges leaving ``ids``
    are ignored. ``regions`` maps a node to its reversible region, whose
    backdrop is kept clear of other regions' nodes. ``initial`` positions break
    ties, so a layout of an already tidy graph changes little.
    """
    ids = list(dict.fromkeys(ids))
    idset = set(ids)
    full: list[tuple[str, str, float, float]] = []
    for e in edges:
        a, b = e[0], e[1]
        if a not in idset or b not in idset or a == b:
            continue
        ya, yb = (e[2], e[3]) if len(e) == 4 else (sizes[a][1] / 2, sizes[b][1] / 2)  # type: ignore[misc]
        full.append((a, b, float(ya), float(yb)))
    initial_y = {n: p[1] for n, p in (initial or {}).items()}
    regions = regions or {}
    raw: dict[str, Pos] = {}
    y0 = 0.0
    by_start: dict[str, list[tuple[str, str, float, float]]] = defaultdict(list)
    for edge in full:
        by_start[edge[0]].append(edge)
    for comp in _components(ids, full):
        cedges = [e for n in comp for e in by_start[n]]
        c = _Component(comp, cedges, sizes, regions, initial_y)
        c.order()
        c.place()
        xs = c.xs()
        top = min(c.y[n] for n in comp)
        bottom = max(c.y[n] + sizes[n][1] for n in comp)
        for n in comp:
            raw[n] = (xs[c.layer[n]], c.y[n] - top + y0)
        y0 += bottom - top + COMPONENT_GAP
    if not raw:
        return {}
    left = min(p[0] for p in raw.values())
    top = min(p[1] for p in raw.values())
    return {n: (_snap(origin[0] + p[0] - left), _snap(origin[1] + p[1] - top)) for n, p in raw.items()}


ALIGN_AXES = ("left", "right", "top", "bottom", "horizontal", "vertical")
# what View > Align and the canvas's context menu call each (one name per action, as the docs use)
ALIGN_NAMES = {"left": "Align Left Edges", "right": "Align Right Edges", "top": "Align Top Edges",
               "bottom": "Align Bottom Edges", "horizontal": "Align Centres Horizontally",
               "vertical": "Align Centres Vertically"}


def align(axis: str, rects: Mapping[str, tuple[float, float, float, float]]) -> dict[str, Pos]:
    """New top-left positions lining up ``rects`` (x, y, w, h) along ``axis``.

    left/right/top/bottom align those edges; ``horizontal`` puts the centres on
    one horizontal line (a row), ``vertical`` on one vertical line (a column).
    Positions are whole pixels, as layout and dragging leave them: centres share
    one whole pixel (a card of odd height sits half a pixel lower than an even one).
    """
    if axis not in ALIGN_AXES:
        raise ValueError(f"unknown alignment {axis!r}; use one of {', '.join(ALIGN_AXES)}")
    if not rects:
        return {}
    vals = rects.values()
    if axis == "left":
        x = min(r[0] for r in vals)
        return {k: (_whole(x), _whole(r[1])) for k, r in rects.items()}
    if axis == "right":
        x = max(r[0] + r[2] for r in vals)
        return {k: (_whole(x - r[2]), _whole(r[1])) for k, r in rects.items()}
    if axis == "top":
        y = min(r[1] for r in vals)
        return {k: (_whole(r[0]), _whole(y)) for k, r in rects.items()}
    if axis == "bottom":
        y = max(r[1] + r[3] for r in vals)
        return {k: (_whole(r[0]), _whole(y - r[3])) for k, r in rects.items()}
    if axis == "horizontal":
        cy = _whole(sum(r[1] + r[3] / 2 for r in vals) / len(rects))
        return {k: (_whole(r[0]), cy - math.floor(r[3] / 2)) for k, r in rects.items()}
    cx = _whole(sum(r[0] + r[2] / 2 for r in vals) / len(rects))
    return {k: (cx - math.floor(r[2] / 2), _whole(r[1])) for k, r in rects.items()}


def distribute(axis: str, rects: Mapping[str, tuple[float, float, float, float]]) -> dict[str, Pos]:
    """New top-left positions spacing ``rects`` (x, y, w, h) evenly along ``axis``.

    ``horizontal`` keeps the leftmost and rightmost where they are and makes the gaps
    between neighbours equal; ``vertical`` does so from top to bottom. The other
    coordinate is kept; positions are whole pixels.
    """
    if axis not in ("horizontal", "vertical"):
        raise ValueError(f"unknown distribution {axis!r}; use horizontal or vertical")
    k = 0 if axis == "horizontal" else 1
    order = sorted(rects, key=lambda n: (rects[n][k] + rects[n][k + 2] / 2, n))
    if len(order) < 3:
        return {n: (_whole(rects[n][0]), _whole(rects[n][1])) for n in order}
    first, last = rects[order[0]], rects[order[-1]]
    span = last[k] + last[k + 2] - first[k]
    gap = (span - sum(rects[n][k + 2] for n in order)) / (len(order) - 1)
    out: dict[str, Pos] = {}
    at = first[k]
    for n in order:
        r = rects[n]
        lead = _whole(at)
        out[n] = (lead, _whole(r[1])) if k == 0 else (_whole(r[0]), lead)
        at += r[k + 2] + gap
    return out


def _whole(v: float) -> float:
    """``v`` on the whole pixel nearest to it (halves go up, unlike ``round``'s even rule)."""
    return float(math.floor(v + 0.5))
