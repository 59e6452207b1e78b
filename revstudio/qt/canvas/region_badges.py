"""What a region backdrop says: its label and tooltip, from the analysis report.

A reversible region's badge names what it saves (the memory figures' estimate
at the project's batch, or an older estimate's per-region table) and, when the
training memory budget keeps some of its activations, that too.
:func:`region_items` turns a report's regions into backdrops carrying them.
"""
from __future__ import annotations

from typing import Any

from revstudio.diagnostics.budget import KEPT_WHOLE
from revstudio.diagnostics.estimate import fmt_bytes as format_bytes

from .region_item import RegionItem


class RegionBadges:
    """The badges of one report's regions: ``badge(region_id, node_count)``."""

    def __init__(self, graph: Any, report: Any) -> None:
        self.report = report
        self.estimate = getattr(report, "estimate", None)
        self.budget = _budget_badges(graph, report)

    def badge(self, region_id: str, count: int) -> tuple[str, str, bool]:
        """(label, tooltip, saves?): a region that saves nothing is drawn neutral."""
        saves = True
        if hasattr(self.estimate, "peak_bytes"):
            from revstudio.qt.memory_figures import region_badge

            label, tip, saves = region_badge(self.report, region_id)
            tip = f"{count} nodes run without storing activations. " + tip
        else:
            saved = region_saving(self.estimate, region_id)
            label = "reversible" + (f" · saves {format_bytes(saved)}" if saved is not None else "")
            tip = (f"Reversible region {region_id}: {count} nodes run without storing activations"
                   + (f"; saves about {format_bytes(saved)} of activation memory" if saved is not None else ""))
        kept = self.budget.get(region_id)
        if kept == KEPT_WHOLE:  # kept whole: it runs as standard mode does, saving nothing
            return ("kept whole by budget · runs as standard",
                    f"{count} nodes in reversible region {region_id}: the memory budget keeps all of its "
                    "activations, so it runs as standard mode does (nothing rebuilt, nothing saved)", False)
        if kept is not None:  # the training memory budget keeps part of it: no rebuild there
            label += f" · {kept}"
            tip += (f"; the memory budget keeps its activations ({kept}) to run faster, so it saves less "
                    "than reversible mode's figures above by what those steps keep")
            if kept.endswith("peak above standard's"):
                tip += (": the estimated peak under that budget is above standard mode's, "
                        "so standard mode would be both smaller and faster here")
        return label, tip, saves


Badge = tuple[str, str, bool]


def region_items(graph: Any, report: Any, shown: Any,
                 shown_before: dict[str, Badge] | None = None) -> list[RegionItem]:
    """A backdrop per region of ``report`` with a node in ``shown`` (the scene's node ids),
    holding those nodes, labelled with its badge; not yet fitted or added to a scene.
    ``shown_before``: the report's peaks are not walked yet, so each region keeps the badge it
    had (by id; a new region reads just "reversible") until :func:`relabel` gives the new ones."""
    badges = RegionBadges(graph, report) if shown_before is None else None
    out: list[RegionItem] = []
    for region in list(getattr(report, "regions", None) or ()):
        rid = str(getattr(region, "id", len(out)))
        nodes = tuple(n for n in getattr(region, "nodes", ()) if n in shown)
        if not nodes:
            continue
        if badges is not None:
            label, tip, saves = badges.badge(rid, len(nodes))
        else:
            label, tip, saves = shown_before.get(rid) or (  # type: ignore[union-attr]
                "reversible", f"Reversible region {rid}: {len(nodes)} nodes run without storing activations "
                              "(its memory figures are being updated)", True)
        item = RegionItem(rid, nodes, label, tip)
        item.saves = saves
        item.current = badges is not None
        out.append(item)
    return out


def relabel(graph: Any, report: Any, items: list[RegionItem]) -> None:
    """Give each backdrop its badge from ``report``, whose peaks are walked now."""
    badges = RegionBadges(graph, report)
    for item in items:
        item.set_badge(*badges.badge(item.region_id, len(item.node_ids)))


def body_region_items(project: Any, report: Any, name: str, shown: Any) -> list[RegionItem]:
    """Backdrops for a group body's tab: its reversible regions as the compiler finds them (the
    project's report has them for the top level only). The body's memory is counted where the
    group is used, so the label says what the region does, not what it saves."""
    try:
        from revstudio.compiler.regions import body_regions, layout_only
    except ImportError:  # pragma: no cover - the compiler ships with the package
        return []
    found = body_regions(project, report, name) if report is not None else None
    if found is None:
        return []
    regions, analyzer = found
    out: list[RegionItem] = []
    for region in regions:
        steps = list(getattr(region, "steps", ()))
        if not region.couplings and all(layout_only(analyzer.v.type(n)) for n in steps):
            continue  # only slicing and joining: nothing to rebuild
        nodes = tuple(n for n in region.nodes if n in shown)
        if not nodes:
            continue
        tip = (f"Reversible region {region.id} of group {name!r}: wherever the group runs, its {len(nodes)} "
               "nodes run without storing activations (rebuilt from the outputs in backward). Its memory "
               "is counted where the group is used: see the badge of the region around the Group node.")
        out.append(RegionItem(str(region.id), nodes, "reversible (group body)", tip))
    return out


def _budget_badges(graph: Any, report: Any) -> dict[str, str]:
    try:
        from revstudio.diagnostics.budget import region_badges as budget_badges
    except ImportError:  # pragma: no cover - diagnostics ships with the package
        return {}
    return budget_badges(graph, report)


def region_saving(estimate: Any, region_id: str) -> float | None:
    """Bytes of activation memory a region saves, from whatever shape the estimate takes."""
    if estimate is None:
        return None
    for attr in ("region_savings", "regions_saved", "saved_by_region", "regions"):
        table = getattr(estimate, attr, None)
        if isinstance(table, dict) and region_id in table:
            value = table[region_id]
            if isinstance(value, (int, float)):
                return float(value)
            for key in ("saved_bytes", "saved", "bytes_saved"):
                got = value.get(key) if isinstance(value, dict) else getattr(value, key, None)
                if isinstance(got, (int, float)):
                    return float(got)
    return None
