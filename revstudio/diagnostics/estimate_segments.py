"""What checkpoint mode keeps: the segments it cuts regions and runs of ordinary nodes into.

Mirrors the compiler (``compiler.checkpointing``, ``assembly.region_data``): a region is cut
into about sqrt(N) segments of its N computing steps, weighed as the compiler weighs them
(a Repeat's copies each a piece, a group body by its region steps), and every run of two or
more ordinary nodes is one ``torch.utils.checkpoint`` segment. Each segment keeps its inputs.
Torch-free.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .estimate_walk import Value, _params, _prod, _Walker
from .save_rules import coupling_split

# A piece of a segment: (node, first copy, end copy, copies); whole nodes are (node, 0, 1, 1).
Piece = tuple[str, int, int, int]


def _saves_any(walker: _Walker, nodes: Sequence[str]) -> bool:
    """Whether any of ``nodes`` keeps something for backward, so that a checkpoint segment of
    them holds its inputs (one that keeps nothing holds none: they are gone after forward)."""
    return any(walker.saved_values(n) or walker.extra_bytes(n) for n in nodes)


def _body_weight(walker: _Walker, name: str, memo: dict[str, int | None], active: set[str]) -> int | None:
    """Computing steps one copy of group ``name`` makes, as the compiler weighs it
    (``assembly._pieces``): the steps of the region its body is, a wired coupling one step;
    None where the body is not one invertible region (the compiler then weighs the step itself)."""
    from revstudio.compiler.checkpointing import piece_weights, step_weight

    if name in memo:
        return memo[name]
    body = walker.graph.groups.get(name)
    if body is None or name in active:
        return None
    steps = walker.bodies.steps(name)
    if steps is None:
        memo[name] = None
        return None
    active.add(name)
    total = 0
    for nid, kind in steps:
        if kind in ("Repeat", "Group"):
            params = _params(body, nid)
            sub = params.get("group")
            inner = _body_weight(walker, sub, memo, active) if isinstance(sub, str) else None
            total += sum(piece_weights(kind, int(params.get("times", 1) or 1), inner))
        else:
            total += 1 if kind == "coupling" else step_weight(kind)
    active.discard(name)
    memo[name] = total
    return total


def _region_pieces(walker: _Walker, region: Any) -> list[list[int]]:
    """``checkpointing.piece_weights`` of each step of a region, as the compiler counts them."""
    from revstudio.compiler.checkpointing import piece_weights

    couplings = getattr(region, "couplings", {}) or {}
    memo: dict[str, int | None] = {}
    out: list[list[int]] = []
    for nid in getattr(region, "steps", ()) or ():
        if nid in couplings:
            out.append([1])
            continue
        view = walker.views.get(nid)
        kind = view.type if view is not None else "?"
        body = None
        if kind in ("Repeat", "Group") and view is not None and isinstance(view.params.get("group"), str):
            body = _body_weight(walker, str(view.params["group"]), memo, set())
        times = int(view.params.get("times", 1) or 1) if view is not None and kind == "Repeat" else 1
        out.append(piece_weights(kind, times, body))
    return out


def _region_segment_nodes(walker: _Walker, region: Any) -> tuple[dict[str, tuple[int, int]], list[list[Piece]]]:
    """(node -> (first, last) segment, pieces per segment) of a region in checkpoint mode
    (``compiler.checkpointing``: about sqrt(N) segments of its N computing steps; a Repeat's
    copies may fall into several)."""
    from revstudio.compiler.checkpointing import region_cuts

    found = walker.segment_cache.get(id(region))
    if found is not None:
        return found
    steps = list(getattr(region, "steps", ()) or ())
    couplings = getattr(region, "couplings", {}) or {}
    pieces = _region_pieces(walker, region)
    cuts = set(region_cuts(pieces))
    k = 0
    spans: dict[int, list[tuple[int, int, int]]] = {}  # step -> (segment, first copy, end copy)
    for i, ws in enumerate(pieces):
        for c in range(len(ws)):
            if (i, c) in cuts:
                k += 1
            run = spans.setdefault(i, [])
            if run and run[-1][0] == k:
                run[-1] = (k, run[-1][1], c + 1)
            else:
                run.append((k, c, c + 1))
    step_of: dict[str, int] = {}
    for i, nid in enumerate(steps):
        step_of[nid] = i
        coupling = couplings.get(nid)
        for body in getattr(coupling, "body", ()) or ():
            step_of.setdefault(body, i)
    where: dict[str, tuple[int, int]] = {}
    members: list[list[Piece]] = [[] for _ in range(k + 1)]
    for nid in getattr(region, "nodes", ()):
        if nid not in step_of or nid not in walker.report.nodes:
            continue
        i = step_of[nid]
        run = spans.get(i) or [(0, 0, 1)]
        copies = len(pieces[i]) if i < len(pieces) else 1
        where[nid] = (run[0][0], run[-1][0])
        for seg, lo, hi in run:
            members[seg].append((nid, lo, hi, copies) if len(run) > 1 else (nid, 0, 1, 1))
    result = (where, members)
    walker.segment_cache[id(region)] = result
    return result


def _region_segment_inputs(walker: _Walker, region: Any) -> tuple[list[Value | None], dict[str, int], set[Value]]:
    """What checkpoint mode keeps for a region: the inputs of each of its segments, (bytes per
    node) the values between copies of a Repeat that a cut falls inside, and the values only
    segments that keep nothing read (not kept, not even as the region's inputs)."""
    where, members = _region_segment_nodes(walker, region)
    saving = [_saves_any(walker, [nid for nid, *_ in seg]) for seg in members]
    kept: list[Value | None] = []
    unheld: set[Value] = set()
    for nid in getattr(region, "nodes", ()):
        info = walker.report.nodes.get(nid)
        if info is None or nid not in where:
            continue
        for port in info.inputs:
            src = walker.source.get((nid, port))
            if src is None or where.get(src.node, (-1, -1))[1] == where[nid][0]:
                continue
            for value in _held_parts(walker, region, (src.node, src.port), nid):
                if saving[where[nid][0]]:
                    kept.append(value)
                elif value is not None:
                    unheld.add(value)
    inner: dict[str, int] = {}
    for seg in members:
        for nid, lo, _hi, _n in seg:
            if lo > 0:  # a segment starting inside a Repeat keeps what the copy before made
                inner[nid] = inner.get(nid, 0) + walker.repeat_link_bytes(nid)
    return kept, inner, unheld - set(kept)


# The parts of a coupling node's output that are tensors of their own (``assembly``: an
# AffineCoupling hands on x1, a view of its input, and y2; an AdditiveCoupling y1 and, with a G,
# y2), by the index of the part
_NEW_PARTS = {"AffineCoupling": (1,), "AdditiveCoupling": (0, 1)}


def _kept_storage(walker: _Walker, region: Any, value: Value) -> Value | None:
    """The storage a segment keeps for its input ``value``: ``walker.base``, but for a part of a
    coupling node's output that the next step, a Split of the same region, hands on unjoined
    (``runtime_layout.fuse_cat_slice``: the node's Cat and the Split's Slice become a rename),
    which is a tensor of its own, half the size, and the joined output is never made. A
    multi-scale flow (a Split after a coupling, one part Flattened to the output) kept 25 % less
    after forward in checkpoint mode than this figure said with the joined output counted."""
    seen = 0
    v = value
    while seen < 10_000:
        seen += 1
        info = walker.report.nodes.get(v[0])
        kind = info.type if info is not None else None
        if kind == "Split":
            part = _unjoined_part(walker, region, v[0], v[1])
            if part is not None:
                return part
        if kind not in ("Split", "Flatten", "Reshape"):
            break
        src = walker.source.get((v[0], "in"))
        if src is None:
            break
        v = (src.node, src.port)
    return walker.base(value)


def _held_parts(walker: _Walker, region: Any, value: Value, reader: str) -> list[Value | None]:
    """The storages a segment holds for its input ``value``: :func:`_kept_storage`, but for the
    output of an AffineCoupling node of the region that ``reader`` takes in the same halves (a
    coupling node, or a Group or Repeat whose body starts with one: the runtime fuses the Concat
    and the Slice into a rename, ``runtime_layout.fuse_cat_slice``), so that a segment cut right
    after it is handed its halves unjoined, each where it lives: checkpoint mode runs the steps owning nothing
    (``runtime._SegmentPart``), so y2 is made anew and x1 is a view of the coupling's input,
    whose whole storage it keeps alive (following x1 back through couplings before it). Skip
    networks 94 and 65 (a segment cut after a coupling on an InvConv1x1's output) kept a half
    more than the output's size: 5 % under at batch 8. (Before an ActNorm the halves are joined:
    glow_flow kept the joined output alone.)"""
    if not _takes_halves(walker, reader, value):
        return [_kept_storage(walker, region, value)]
    chain: list[str] = []
    v = value
    while len(chain) < 10_000 and _halves_anew(walker, region, v, chain):
        chain.append(v[0])
        src = walker.source.get((v[0], "in"))
        if src is None:
            break
        v = (src.node, src.port)
    if not chain:
        return [_kept_storage(walker, region, value)]
    parts: list[Value | None] = [_kept_storage(walker, region, v)]
    for nid in chain:
        node = walker.report.nodes[nid]
        shape = node.inputs["in"]
        half = coupling_split(_params(walker.graph, nid), shape)[1]
        part = (nid, "#y2")
        walker.define(part, walker.batch * _prod((half, *shape[1:])) * walker.elem)
        parts.append(part)
    return parts


def _takes_halves(walker: _Walker, reader: str, value: Value) -> bool:
    """Whether node ``reader`` first slices ``value`` (a coupling node's output) into the halves
    the coupling made: a coupling node with the same split, or a Group or Repeat whose body hands
    its input to one alone."""
    info = walker.report.nodes.get(value[0])
    graph, nid = walker.graph, reader
    for _ in range(100):
        node = graph.nodes.get(nid)
        if node is None or info is None or not info.inputs.get("in"):
            return False
        if node.type in _NEW_PARTS:
            return coupling_split(_params(graph, nid), info.inputs["in"]) == \
                coupling_split(_params(walker.graph, value[0]), info.inputs["in"])
        body = graph.groups.get(str(node.params.get("group"))) if node.type in ("Group", "Repeat") else None
        if body is None:
            return False
        starts = [e for n in body.nodes.values() if n.type == "GroupInput" for e in body.edges_from(n.id)]
        if len(starts) != 1:
            return False
        graph, nid = body, starts[0].dst.node
    return False


def _halves_anew(walker: _Walker, region: Any, value: Value, chain: Sequence[str]) -> bool:
    """Whether ``value`` is an AffineCoupling node's output handed on as halves inside ``region``
    (a step of it, not a wired coupling; after ``chain``'s first, one with the same split, whose
    x1 is the first half of this one's output)."""
    steps = getattr(region, "steps", ()) or ()
    info = walker.report.nodes.get(value[0])
    if info is None or info.type != "AffineCoupling" or value[0] not in steps or value[1] != "out":
        return False
    shape = info.inputs.get("in")
    if not shape or shape != info.outputs.get("out"):
        return False
    if chain:
        after = walker.report.nodes[chain[-1]]
        cut = coupling_split(_params(walker.graph, chain[-1]), after.inputs["in"])
        if cut != coupling_split(_params(walker.graph, value[0]), shape):
            return False
    return True


def _unjoined_part(walker: _Walker, region: Any, split: str, port: str) -> Value | None:
    """The part of a coupling node's output that Split ``split`` hands on as ``port``, named
    (node, "#y1"/"#y2") with its bytes, where the runtime never joins the node's output (it is
    the Split's alone, the Split the next step of the region, into the node's two halves) and
    the part is a tensor of its own; else None."""
    src = walker.source.get((split, "in"))
    steps = list(getattr(region, "steps", ()) or ())
    if src is None or split not in steps or steps.index(split) == 0 or steps[steps.index(split) - 1] != src.node:
        return None
    node, cut = walker.report.nodes.get(src.node), walker.report.nodes.get(split)
    if node is None or cut is None or node.type not in _NEW_PARTS:
        return None
    if walker.readers.get((src.node, src.port), 0) != 1 or (src.node, src.port) in walker.region_kept:
        return None
    shape = node.inputs.get("in")
    params = _params(walker.graph, src.node)
    if not shape or port not in cut.outputs:
        return None
    halves = [(c, *shape[1:]) for c in coupling_split(params, shape)]
    if [tuple(s) for s in cut.outputs.values()] != halves:
        return None
    index = list(cut.outputs).index(port)
    if index not in _NEW_PARTS[node.type] or (node.type == "AdditiveCoupling" and index == 1 and not params.get("g")):
        return None
    part = (src.node, f"#y{index + 1}")
    walker.define(part, walker.batch * _prod(halves[index]) * walker.elem)
    return part


def _checkpoint_segments(walker: _Walker, order: Sequence[str], region_of: Mapping[str, str],
                         runs: list[list[str]] | None = None) -> tuple[set[str], list[Value | None]]:
    """(nodes, kept inputs) of the runs of ordinary nodes checkpoint mode recomputes.

    Mirrors the compiler: in execution order, each region is one op and every
    run of two or more consecutive ordinary ops is one torch.utils.checkpoint
    segment, which keeps its inputs instead of what happens inside.
    """
    items: list[tuple[str, str]] = []
    for nid in order:
        info = walker.report.nodes.get(nid)
        if info is None or info.type in ("Input", "Output"):
            continue
        rid = region_of.get(nid)
        item = ("region", rid) if rid is not None else ("node", nid)
        if rid is None or not items or items[-1] != item:
            items.append(item)
    nodes: set[str] = set()
    kept: list[Value | None] = []
    run: list[str] = []
    for kind, name in [*items, ("end", "")]:
        if kind == "node":
            run.append(name)
            continue
        if len(run) >= 2:
            if runs is not None:
                runs.append(list(run))
            inside = set(run)
            nodes |= inside
            for nid in run if _saves_any(walker, run) else ():
                for port in walker.report.nodes[nid].inputs:
                    src = walker.source.get((nid, port))
                    if src is not None and src.node not in inside:
                        kept.append(walker.base((src.node, src.port)))
        run = []
    return nodes, kept
