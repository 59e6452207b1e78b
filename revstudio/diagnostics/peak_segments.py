"""Checkpoint mode's units of the peak walk (``peak.simulate``): a run of ordinary layers
checkpointed as one segment, and the segments of a region, whose cuts may fall between the
copies of a Repeat. Built from a ``peak_units.UnitBuilder``'s facts. Torch-free.
"""
from __future__ import annotations

from .peak import Unit, Value, simulate
from .peak_units import UnitBuilder
from .save_rules import between_bytes


def segment(b: UnitBuilder, name: str, nodes: list[str], in_region: bool = False) -> Unit:
    """Checkpoint mode: a segment keeps its inputs; backward recomputes all of it."""
    members = set(nodes)
    reads, makes = b.outside(members)
    saved = {base for base in (b.w.base(v) for v in reads) if base is not None}
    params = sum(int(b.w.report.nodes[n].parameters) for n in nodes) * b.elem
    act = b.largest_of(nodes)
    if in_region:
        # the runtime recomputes a region's segment step by step over its streams, all of it
        # when backward reaches it; then the last step's backward works on one output's worth
        work = b.recompute_bytes(nodes, saved) + act + max(max(b.node_work(n) for n in nodes), 0)
    else:
        # torch.utils.checkpoint recomputes a run of layers when backward reaches it, then
        # runs their backward as standard mode does: the walk of those layers, from nothing
        # (their inputs are kept outside, their outputs' gradients counted outside)
        inner = simulate([b.node(n) for n in sorted(nodes, key=b.position.__getitem__)],
                         b.w.nbytes, b.w.base, b.rg.get)  # type: ignore[arg-type]
        work = inner.peak - params
    return Unit(name, reads, makes, saved, 0, params, True, 2 * act, work,
                any(b.needs_grad(v) for v in makes), late=True)

def _link(b: UnitBuilder, nid: str, copy: int) -> Value:
    """The values copy ``copy - 1`` of Repeat ``nid`` hands copy ``copy``, as one value."""
    v = (nid, f"#{copy}")
    b.w.define(v, b.w.repeat_link_bytes(nid))
    b.rg[v] = any(b.needs_grad(m) for m in b.makes(nid))
    return v

def pieces(b: UnitBuilder, name: str, members: list[tuple[str, int, int, int]]) -> Unit:
    """A checkpoint segment of a region whose cuts may fall between the copies of a Repeat:
    ``members`` are (node, first copy, end copy, copies); a part of a Repeat reads and makes
    the values between its copies and costs its share of the Repeat's work."""
    partial = {nid: (lo, hi, n) for nid, lo, hi, n in members if n > 1 and (lo, hi) != (0, n)}
    nodes = [m[0] for m in members]
    if not partial:
        return segment(b, name, nodes, in_region=True)
    inside = set(nodes)
    reads: dict[Value, None] = {}
    makes: dict[Value, None] = {}
    for nid in nodes:
        lo, hi, n = partial.get(nid, (0, 1, 1))
        if lo > 0:
            reads[_link(b, nid, lo)] = None
        else:
            reads.update((v, None) for v in b.reads(nid) if v[0] not in inside)
        if hi < n:
            makes[_link(b, nid, hi)] = None
        else:
            makes.update((v, None) for v in b.makes(nid)
                         if any(r not in inside for r in b.readers.get(v, ())))
    saved = {base for base in (b.w.base(v) for v in reads) if base is not None}
    whole = [n for n in nodes if n not in partial]
    params = sum(int(b.w.report.nodes[n].parameters) for n in whole) * b.elem
    recompute = b.recompute_bytes(whole, saved)
    for nid, (lo, hi, n) in partial.items():
        share = (hi - lo) / n
        params += int(int(b.w.report.nodes[nid].parameters) * b.elem * share)  # its copies' weights
        # its share of what the copies keep inside; what the Repeat keeps of its own input
        # only the first copy recomputes
        values, extra = b.saved_by(nid)
        body = b.w.views[nid].bodies.get("group") if nid in b.w.views else None
        if body is not None:  # the copies' insides, and what passes between the copies inside
            between = between_bytes(body, b.w.batch, b.elem)
            recompute += body.internal_bytes * (hi - lo) + between * (hi - lo - 1)
        else:
            recompute += int(extra * share)
        if lo == 0:
            recompute += sum(b.w.nbytes(v) for v in values - saved)
    act = b.largest_of(nodes)
    return Unit(name, list(reads), list(makes), saved, 0, params, True, 2 * act,
                recompute + act + max(max(b.node_work(n) for n in nodes), 0),
                any(b.needs_grad(v) for v in makes), late=True)
