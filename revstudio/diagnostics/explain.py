"""Words for the memory figures: how a node's bytes are attributed, what a region saves,
and why one mode costs more than another.

Bytes are counted at the node that produced a tensor, once, however many layers
keep it for backward (a ReLU's output that the next Conv also keeps is one
tensor); a view (Split, Flatten, Reshape) owns no memory, its source does. The
sentences here read ``MemoryEstimate.facts`` and the per-mode walks. Torch-free.
"""
from __future__ import annotations

from typing import Any

ATTRIBUTION = ("Bytes are counted at the node that produced a tensor, once, however many layers "
               "keep it for backward; a view (Split, Flatten, Reshape) owns no memory of its own.")


def _fmt(n: float) -> str:
    from .estimate import fmt_bytes

    return fmt_bytes(n)


def _names(ids: list[str], limit: int = 3) -> str:
    shown = ", ".join(ids[:limit])
    return shown + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


def node_attribution(est: Any, node_id: str, mode: str) -> str:
    """Why ``node_id`` is charged what it is in ``mode``, in a sentence or two."""
    facts = est.facts
    node = est.nodes.get(node_id)
    if not facts or node is None:
        return ""
    kind = node.type
    parts: list[str] = []
    region = facts["region_of"].get(node_id)
    outputs = [v for v in facts["bases"] if v[0] == node_id]
    for value in outputs:
        base = facts["bases"][value]
        port = "" if value[1] == "out" else f" {value[1]}"
        readers = sorted(set(facts["readers"].get(value, [])))
        if base is None:
            parts.append(f"its output{port} is a view of an input the caller owns: no memory here")
            continue
        if base != value:
            parts.append(f"its output{port} is a view of {base[0]}'s: counted there")
            continue
        if mode == "reversible" and region is not None:
            if base in facts["kept"]["reversible"]:
                parts.append(f"its output{port} is an output of {region}, kept as a wide stream "
                             "(8 bytes per value) so backward can rebuild the region from it")
            else:
                parts.append(f"inside {region}: its output{port} is rebuilt in backward, not kept")
            continue
        if mode == "checkpoint" and (region is not None or node_id in facts["segments"]):
            where = region or "a checkpoint segment"
            if base in facts["kept"]["checkpoint"]:
                parts.append(f"its output{port} starts a segment of {where}: kept, everything after it "
                             "is recomputed in backward")
            else:
                parts.append(f"inside {where}: its output{port} is recomputed in backward, not kept")
            continue
        if mode == "checkpoint" and base in facts["kept"]["checkpoint"]:
            parts.append(f"keeps its output{port}: it is the input of a checkpoint segment, which "
                         "recomputes from it in backward")
            continue
        savers = sorted(set(facts["savers"].get(base, [])))
        if mode == "reversible" and base in facts["kept"]["reversible"]:
            savers = savers or ["a reversible region"]
        freed = mode == "reversible" and any(facts["region_of"].get(r) for r in readers) and not [
            s for s in savers if not facts["region_of"].get(s) or mode == "standard"]
        if freed:
            parts.append(f"its output{port} feeds a reversible region, which rebuilds it in backward: "
                         "not kept")
        elif savers:
            who = "itself" if savers == [node_id] else _names([s for s in savers if s != node_id] or savers)
            parts.append(f"keeps its output{port}: the backward of {who} needs it")
        elif readers:
            parts.append(f"its output{port} is not kept: the backward of {_names(readers)} does not need it")
        else:
            parts.append(f"its output{port} is read by nothing")
    extra = facts["extra"].get(node_id, 0)
    inside = mode != "standard" and (region is not None or (mode == "checkpoint" and node_id in facts["segments"]))
    if extra and not inside:
        parts.append(f"plus {_fmt(extra * est.batch // max(1, est.batch))} of internal tensors "
                     f"({'gates and workspace' if kind == 'BiRNN' else 'masks, indices or statistics'})")
    text = "; ".join(parts)
    return (text[:1].upper() + text[1:] + ".") if text else ""


def region_text(region: Any) -> str:
    """'saves 20.0 KiB (...)' or 'saves nothing' / 'costs ...' for one RegionEstimate."""
    saved = region.saved_bytes
    detail = (f"its nodes keep {_fmt(region.standard_bytes)} -> {_fmt(region.reversible_bytes)}"
              + (f", and the layers feeding it {_fmt(region.freed_input_bytes)} less"
                 if region.freed_input_bytes else ""))
    if saved > 0:
        return f"saves {_fmt(saved)} of kept activations ({detail})"
    if saved == 0:
        return f"saves nothing ({detail})"
    return f"costs {_fmt(-saved)} more than standard ({detail}: its outputs are kept as wide streams)"


def mode_notes(est: Any) -> list[str]:
    """One line per mode that costs more than another: kept or peak, and why."""
    notes: list[str] = []
    if not est.peaks:
        return notes
    kept = {m: est.activation_bytes(m) for m in est.peaks}
    peak = {m: est.peak_bytes(m) for m in est.peaks}
    wide = sum(-r.saved_bytes for r in est.regions.values() if r.saved_bytes < 0)
    if kept.get("reversible", 0) > kept.get("standard", 0):
        notes.append(f"reversible keeps {_fmt(kept['reversible'] - kept['standard'])} more than standard: "
                     "its regions keep their outputs as compensated float32 pairs (8 bytes per value) "
                     "where standard keeps little there" + (f" ({_fmt(wide)} over all regions)" if wide else ""))
    if peak.get("reversible", 0) > peak.get("standard", 0):
        notes.append(f"reversible peaks {_fmt(peak['reversible'] - peak['standard'])} above standard: "
                     f"rebuilding {est.peaks['reversible'].at or 'a region'} in backward holds its wide "
                     "streams, their gradients and one step's recomputation at once")
    if peak.get("checkpoint", 0) > peak.get("standard", 0):
        notes.append(f"checkpoint peaks {_fmt(peak['checkpoint'] - peak['standard'])} above standard: "
                     "it keeps every segment's inputs and recomputes "
                     f"{est.peaks['checkpoint'].at or 'a segment'} at once in backward")
    if peak.get("reversible", 0) > peak.get("checkpoint", 0) > 0:
        why = ("a region's wide streams and rebuilt steps cost more here than recomputing "
               "segments from their kept inputs") if est.regions else (
               "the graph has no reversible region, so reversible mode runs it as standard does, "
               "while checkpoint mode recomputes its segments")
        notes.append(f"reversible peaks {_fmt(peak['reversible'] - peak['checkpoint'])} above checkpoint: {why}")
    return notes
