"""``revstudio memory --budget``: which regions a memory budget keeps, and what it measures.

The choice comes from the torch-free static estimate (``diagnostics.budget``,
the same selection the compiled model makes); the measurement runs one
reversible training step with ``model.memory_budget`` set, so the kept bytes
can be compared with the budget (measured beyond what reversible mode keeps
anyway: the regions' outputs).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any


def measure_budget(model: Any, inputs: Sequence[Any], budget: float, repeat: int = 1) -> dict[str, Any]:
    """One measured reversible step under ``budget`` (peak, kept, median seconds of ``repeat``)."""
    from revstudio.diagnostics.memory import measure_step

    mode, before = model.mode, model.memory_budget
    try:
        model.mode, model.memory_budget = "reversible", budget
        return dict(measure_step(model, inputs, timing_runs=max(1, repeat)))
    finally:
        model.mode, model.memory_budget = mode, before


def budget_section(graph: Any, report: Any, budget: float, batch: int, modes: dict[str, dict],
                   measured: dict[str, Any], device: str = "cpu", estimated: bool = True) -> dict[str, Any]:
    """The ``"budget"`` object of ``memory --json``: the choice, the measurement and the verdict
    (the peak estimated for ``device``'s type, "cpu" or "cuda"; None where not ``estimated``:
    a step under autocast)."""
    from revstudio.diagnostics.budget import budget_choice, budget_peak

    limit = None if math.isinf(budget) else int(budget)
    out = budget_choice(graph, report, limit, batch=batch).to_json()
    out["estimate_peak_bytes"] = (budget_peak(graph, report, limit, batch=batch, device=device)
                                  if estimated else None)
    base = modes.get("reversible", {}).get("kept_bytes", 0)
    extra = max(0, int(measured["kept_bytes"]) - int(base))
    out["measured"] = {k: measured[k] for k in ("peak_bytes", "kept_bytes", "seconds") if k in measured}
    out["measured"]["kept_beyond_reversible"] = extra
    out["within_budget"] = limit is None or extra <= limit
    standard = modes.get("standard", {}).get("peak_bytes")
    out["peak_above_standard"] = standard is not None and int(measured["peak_bytes"]) > int(standard)
    return out


def budget_lines(section: dict[str, Any]) -> str:
    from revstudio.diagnostics.estimate import fmt_bytes

    limit = section["budget_bytes"]
    name = "unlimited" if limit is None else fmt_bytes(limit)
    regions = section["regions"]
    rest = ("no reversible region: nothing to keep" if not regions else
            "every region runs as in standard mode" if all(r["state"] == "kept" for r in regions) else
            "every region runs reversibly" if not section["kept_bytes"] else "the rest runs reversibly")
    lines = ["", f"memory budget {name}: keeps {fmt_bytes(section['kept_bytes'])} of activations "
                 f"(static estimate); {rest}"]
    for r in section["regions"]:
        lines.append(f"  region {r['region']}: {r['state']}, first {r['kept_compute_steps']} of {r['compute_steps']} steps "
                     f"({fmt_bytes(r['kept_bytes'])} of {fmt_bytes(r['standard_bytes'])})")
    m = section["measured"]
    verdict = "within the budget" if section["within_budget"] else "OVER the budget"
    est = section["estimate_peak_bytes"]
    lines.append(f"  measured: peak {fmt_bytes(m['peak_bytes'])} (estimate {fmt_bytes(est) if est is not None else '-'}), "
                 f"kept after forward {fmt_bytes(m['kept_bytes'])} "
                 f"({fmt_bytes(m['kept_beyond_reversible'])} beyond reversible mode's: {verdict}), "
                 f"{m['seconds']:.4f} s")
    if section.get("peak_above_standard") and not section["kept_bytes"]:
        lines.append("  note: the budget keeps nothing here, and reversible mode's own peak is above standard "
                     "mode's: standard mode is smaller and faster here")
    elif section.get("peak_above_standard"):
        lines.append("  note: the peak under this budget is above standard mode's (the kept steps are alive while "
                     "the rest rebuilds): standard mode is smaller and faster here; a larger budget keeps whole "
                     "regions, a smaller one keeps fewer steps")
    return "\n".join(lines)
