"""Read-only facts the views show, pulled out of the document's check report.

The report's backend parts (regions, near misses, memory estimate) arrive in
stages, so every accessor here tolerates their absence and returns None or an
empty value rather than guessing; views then show only what exists.
"""
from __future__ import annotations

from typing import Any

from revstudio.diagnostics.estimate import fmt_bytes

MODES = ("reversible", "checkpoint", "standard")


def human_bytes(n: float | int | None) -> str:
    return "–" if n is None else fmt_bytes(n)


def human_count(n: int | None) -> str:
    if n is None:
        return "–"
    if n >= 1_000_000:
        return f"{n / 1_000_000:.2f} M"
    if n >= 10_000:
        return f"{n / 1_000:.1f} k"
    return f"{n:,}"


def _estimate(report: Any) -> dict[str, Any] | None:
    """The estimate as its JSON: for an estimate given as a dict, or an object without the parts."""
    est = getattr(report, "estimate", None)
    if est is None:
        return None
    data = est.to_json() if hasattr(est, "to_json") else est
    return data if isinstance(data, dict) else None


def _entry(report: Any, part: str, key: str) -> Any:
    """One node's or region's figures (``part``: "nodes" or "regions") as the estimate holds them:
    read from its table, not its JSON (the Inspector shows one node's figures: serialising a
    1,000-node estimate to read them cost ~12 ms of an edit's first paint)."""
    est = getattr(report, "estimate", None)
    if est is None:
        return None
    table = est.get(part) if isinstance(est, dict) else getattr(est, part, None)
    if not isinstance(table, dict):
        data = _estimate(report)
        table = data.get(part) if data else None
    return table.get(key) if isinstance(table, dict) else None


def _field(entry: Any, name: str) -> Any:
    return entry.get(name) if isinstance(entry, dict) else getattr(entry, name, None)


def mode_breakdown(report: Any) -> dict[str, tuple[int, int]] | None:
    """(parameter bytes, activation bytes) of the whole network per mode, if estimated."""
    est = getattr(report, "estimate", None)
    totals = getattr(est, "totals", None)
    if callable(totals):
        modes = totals()
    else:
        data = _estimate(report)
        modes = data.get("modes") if data else None
    if not isinstance(modes, dict):
        return None
    out = {}
    for mode in MODES:
        m = modes.get(mode)
        if isinstance(m, dict):
            out[mode] = (int(m.get("parameter_bytes", 0)), int(m.get("activation_bytes", 0)))
    return out or None


def mode_totals(report: Any) -> dict[str, int] | None:
    """Estimated memory (parameters + kept activations) per mode in bytes, if estimated."""
    parts = mode_breakdown(report)
    return {m: p + a for m, (p, a) in parts.items()} if parts else None


def node_memory(report: Any, node_id: str) -> dict[str, int] | None:
    """Activation bytes one node keeps for backward, per mode, if estimated."""
    acts = _field(_entry(report, "nodes", node_id), "activation_bytes")
    if not isinstance(acts, dict):
        return None
    return {m: int(acts[m]) for m in MODES if m in acts}


def node_parameter_bytes(report: Any, node_id: str) -> int | None:
    found = _field(_entry(report, "nodes", node_id), "parameter_bytes")
    return int(found) if found is not None else None


def region_saved(report: Any, region_id: str) -> int | None:
    found = _field(_entry(report, "regions", region_id), "saved_bytes")
    return int(found) if found is not None else None


def node_info(report: Any, node_id: str) -> Any:
    nodes = getattr(report, "nodes", None) or {}
    return nodes.get(node_id) if isinstance(nodes, dict) else None


def region_of(report: Any, node_id: str) -> tuple[int, Any] | None:
    """(index, region) of the reversible region holding the node, if any."""
    for i, region in enumerate(getattr(report, "regions", None) or []):
        members = getattr(region, "nodes", None)
        if members is None and isinstance(region, dict):
            members = region.get("nodes")
        if members is not None and node_id in members:
            return i, region
    return None


def regions_by_node(report: Any) -> dict[str, tuple[int, Any]]:
    """Node id -> (index, region), the first region holding it, as :func:`region_of` finds it: one
    pass over the regions for a whole selection (``region_of`` per node scans every region)."""
    out: dict[str, tuple[int, Any]] = {}
    for i, region in enumerate(getattr(report, "regions", None) or []):
        members = getattr(region, "nodes", None)
        if members is None and isinstance(region, dict):
            members = region.get("nodes")
        for node_id in members or ():
            out.setdefault(node_id, (i, region))
    return out


def region_label(index: int, region: Any) -> str:
    name = getattr(region, "id", None) or getattr(region, "name", None)
    if name is None and isinstance(region, dict):
        name = region.get("id") or region.get("name")
    return str(name) if name else f"region {index + 1}"


def near_misses_for(report: Any, node_id: str) -> list[Any]:
    return [d for d in (getattr(report, "near_misses", None) or []) if getattr(d, "node", None) == node_id]


def diagnostics_for(report: Any, node_id: str) -> list[Any]:
    """The diagnostics about ``node_id``: on it, or naming it among the nodes they concern."""
    return [d for d in (getattr(report, "diagnostics", None) or [])
            if getattr(d, "node", None) == node_id or node_id in getattr(d, "nodes", ())]


ERRORS_SHOWN = 3  # graph errors named in a refusal (the Problems tab lists them all)


def _problem_text(diagnostic: Any) -> str:
    """'head.out: message' (the node and port it is about, as the Problems tab says it)."""
    node, port = getattr(diagnostic, "node", None), getattr(diagnostic, "port", None)
    where = f"{node}.{port}: " if node and port else f"{node}: " if node else ""
    return where + str(getattr(diagnostic, "message", diagnostic))


def graph_problem(graph: Any, report: Any, doing: str = "training") -> str | None:
    """Why ``graph`` cannot be trained, gradient-checked or measured (``doing``), naming its first
    errors; None if it can. The children refuse such a graph too, but only after seconds of
    importing torch, and naming the temporary snapshot they were given."""
    if not graph.nodes:
        return f"The project is empty: draw a network (Input, layers, Output) before {doing}."
    errors = [d for d in getattr(report, "diagnostics", None) or [] if getattr(d, "severity", "") == "error"]
    if errors:
        shown = "; ".join(_problem_text(d) for d in errors[:ERRORS_SHOWN])
        more = f" (and {len(errors) - ERRORS_SHOWN} more)" if len(errors) > ERRORS_SHOWN else ""
        return (f"The graph has {len(errors)} error{'s' * (len(errors) != 1)}: {shown}{more}. "
                f"Fix {'them' if len(errors) != 1 else 'it'} first (see the Problems tab).")
    missing = [t for t in ("Input", "Output") if not any(n.type == t for n in graph.nodes.values())]
    if missing:
        return (f"The graph has no {' and no '.join(missing)} node: {doing} feeds data into an Input "
                "node and takes the loss at an Output node; add "
                f"{' and '.join(f'an {t}' for t in missing)} (Shift+A) and wire it before {doing}.")
    return None


def counts(report: Any) -> tuple[int, int]:
    """(errors, warnings) in the report."""
    diags = getattr(report, "diagnostics", None) or []
    errors = sum(1 for d in diags if getattr(d, "severity", "") == "error")
    return errors, len(diags) - errors


def format_shape(shape: Any) -> str:
    if shape is None:
        return "?"
    return "(" + ", ".join(str(d) for d in shape) + ")"
