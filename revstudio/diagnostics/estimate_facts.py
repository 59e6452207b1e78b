"""What the memory estimate tells beside its figures (``MemoryEstimate.facts``, read by
``explain``): who keeps which value in standard mode, who reads it, what it is a view of, what
the other modes keep instead, and what each Repeat copy keeps. Built on first use from the
estimate's walker.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .estimate_walk import Value, _Walker
from .save_rules import between_bytes


def _facts(walker: _Walker, kept: Mapping[str, set[Value | None]], seg_nodes: set[str]) -> dict[str, Any]:
    """Who keeps which value in standard mode, and what the other modes keep instead."""
    savers: dict[Value, list[str]] = {}
    for nid, saves in walker.saves.items():
        for port in saves.inputs:
            # (where the runtime hands the input on unjoined, its parts: the joined value, never
            # made, is no one's to keep, and a budget's cut before this node gives none of it back)
            fused = walker.unjoined_input(nid, port)
            for v in fused[0] if fused is not None else [walker.input_value(nid, port)]:
                if v is not None:
                    savers.setdefault(v, []).append(nid)
        for port in saves.outputs:
            v = walker.base((nid, port))
            if v is not None:
                savers.setdefault(v, []).append(nid)
    readers: dict[Value, list[str]] = {}
    for (dst, _port), src in walker.source.items():
        readers.setdefault((src.node, src.port), []).append(dst)
    bases = {(nid, port): walker.base((nid, port)) for nid, info in walker.report.nodes.items()
             for port in info.outputs}
    return {"savers": savers, "readers": readers, "bases": bases, "region_of": dict(walker.region_of),
            "kept": {m: {v for v in vals if v is not None} for m, vals in kept.items()},
            "segments": set(seg_nodes), "extra": {n: s.extra_bytes for n, s in walker.saves.items()},
            "types": {n: i.type for n, i in walker.report.nodes.items()}, "copies": _copy_bytes(walker)}


def _copy_bytes(walker: _Walker) -> dict[str, tuple[int, int]]:
    """{Repeat: (bytes one copy keeps inside, bytes it keeps of what the copy before hands
    it)}, as its save rule counts them (its extra bytes are the first times the copies, the
    second times the copies after the first)."""
    out = {}
    for nid, view in walker.views.items():
        body = view.bodies.get("group") if view.type == "Repeat" else None
        if body is not None:
            out[nid] = (int(body.internal_bytes), between_bytes(body, view.batch, view.element_bytes))
    return out
