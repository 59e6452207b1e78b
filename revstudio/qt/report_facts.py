"""Read-only facts the views show, pulled out of the document's check report.

The report's backend parts (regions, near misses, memory estimate) arrive in
stages, so every accessor here tolerates their absence and returns None or an
empty value rather than guessing; views then show only what exists.
"""
from __future__ import annotations

from typing import Any

MODES = ("reversible", "checkpoint", "standard")


def human_bytes(n: float | int | None) -> str:
    if n is None:
        return "–"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"  # pragma: no cover - loop always returns


def human_count(n: int | None) -> str:
    if n is None:
        return "–"
    if n >= 1_000_000:
        return f"{n / 1_000_000:.2f} M"
    if n >= 10_000:
        return f"{n / 1_000:.1f} k"
    return f"{n:,}"


def _as_data(obj: Any) -> Any:
    if obj is None or isinstance(obj, (dict, list, int, float, str)):
        return obj
    if hasattr(obj, "to_json"):
        return obj.to_json()
    if hasattr(obj, "__dict__"):
        return dict(vars(obj))
    return None


def _bytes_of(value: Any) -> int | None:
    """A memory figure: a number, or a mapping with a total-like entry."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return int(value)
    data = _as_data(value)
    if isinstance(data, dict):
        for key in ("total", "total_bytes", "peak", "peak_bytes", "bytes"):
            if isinstance(data.get(key), (int, float)):
                return int(data[key])
        parts = [data.get(k) for k in ("activations", "activation_bytes", "parameters", "parameter_bytes")]
        nums = [int(p) for p in parts if isinstance(p, (int, float)) and not isinstance(p, bool)]
        if nums:
            return sum(nums)
    return None


def _per_mode(data: Any) -> dict[str, int] | None:
    data = _as_data(data)
    if not isinstance(data, dict):
        return None
    for key in ("modes", "totals", "per_mode", "total"):
        inner = _as_data(data.get(key))
        if isinstance(inner, dict) and any(m in inner for m in MODES):
            data = inner
            break
    out = {m: b for m in MODES if m in data and (b := _bytes_of(data[m])) is not None}
    return out or None


def mode_totals(report: Any) -> dict[str, int] | None:
    """Estimated memory of the whole network per mode (bytes), if the estimate exists."""
    return _per_mode(getattr(report, "estimate", None))


def node_memory(report: Any, node_id: str) -> dict[str, int] | None:
    """Estimated memory of one node per mode (bytes), if the estimate has it."""
    data = _as_data(getattr(report, "estimate", None))
    if not isinstance(data, dict):
        return None
    nodes = _as_data(data.get("nodes") or data.get("per_node"))
    if isinstance(nodes, dict):
        return _per_mode(nodes.get(node_id))
    return None


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


def region_label(index: int, region: Any) -> str:
    name = getattr(region, "id", None) or getattr(region, "name", None)
    if name is None and isinstance(region, dict):
        name = region.get("id") or region.get("name")
    return str(name) if name else f"region {index + 1}"


def near_misses_for(report: Any, node_id: str) -> list[Any]:
    return [d for d in (getattr(report, "near_misses", None) or []) if getattr(d, "node", None) == node_id]


def diagnostics_for(report: Any, node_id: str) -> list[Any]:
    return [d for d in (getattr(report, "diagnostics", None) or []) if getattr(d, "node", None) == node_id]


def counts(report: Any) -> tuple[int, int]:
    """(errors, warnings) in the report."""
    diags = getattr(report, "diagnostics", None) or []
    errors = sum(1 for d in diags if getattr(d, "severity", "") == "error")
    return errors, len(diags) - errors


def format_shape(shape: Any) -> str:
    if shape is None:
        return "?"
    return "(" + ", ".join(str(d) for d in shape) + ")"
