"""The scene's region backdrops: one per reversible region of the report, kept across edits.

A region the edit kept keeps its backdrop item (its members and box updated), so an edit
repaints only what it changed. Its badge names memory figures, which the document makes after
the edit's first paint: until ``estimateChanged`` a region keeps the badge it had (not current,
grey once ``estimateWaiting`` fires), then :func:`region_badges.relabel` gives the new ones.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .region_badges import body_region_items, region_items, relabel
from .region_item import RegionItem

if TYPE_CHECKING:
    from revstudio.core.graph import Graph

    from .node_item import NodeItem


class SceneRegions:
    """Mixed into ``GraphScene``: ``region_items`` and the maps from nodes to them."""

    if TYPE_CHECKING:  # provided by GraphScene
        document: Any
        graph: Graph
        node_items: dict[str, NodeItem]
        region_items: list[RegionItem]
        _regions_by_node: dict[str, list[RegionItem]]
        _region_nodes: set[str]

        def report(self) -> Any: ...
        def group_name(self) -> str | None: ...
        def addItem(self, item: Any) -> None: ...  # noqa: N802 - Qt API
        def removeItem(self, item: Any) -> None: ...  # noqa: N802 - Qt API

    def apply_estimate(self) -> None:
        """The report's peaks are walked: the region badges show its figures (at once after the
        analysis when nothing was left to walk; else after the edit's first paint)."""
        if self.group_name() is None and self.graph is self.document.graph \
                and any(not item.current for item in self.region_items):
            relabel(self.graph, self.report(), self.region_items)

    def _estimate_waiting(self) -> None:
        for item in self.region_items:
            item.set_waiting()

    def _apply_regions(self, report: Any) -> list[RegionItem]:
        """The report's backdrops in the scene; returns those to fit (new, or of other members),
        fitted by the caller once the cards are drawn from the report too."""
        before = {item.region_id: item for item in self.region_items}
        name = self.group_name()
        # the badges' figures are the estimate's: while it is made, a region keeps its badge (where
        # the region of that id still holds some of the same nodes)
        pending = getattr(self.document, "estimate_pending", False) and self.graph is self.document.graph
        shown = None
        if pending:
            now = {str(getattr(r, "id", "")): set(getattr(r, "nodes", ())) for r in getattr(report, "regions", None) or ()}
            shown = {rid: (i.label, i.toolTip(), i.saves) for rid, i in before.items()
                     if not now.get(rid, set()).isdisjoint(i.node_ids)}
        found = (region_items(self.graph, report, self.node_items, shown) if name is None else
                 body_region_items(self.document.graph, self.document.report, name, self.node_items))
        overdue = getattr(self.document, "estimate_overdue", False)  # (a wait shown stays grey: no flicker)
        self.region_items[:] = []
        # A region of the same members keeps its box: it is refitted where a member's card changes
        # size (apply_analysis) or moves (flush_moves); measuring its 500 cards after every edit
        # was a few ms of each first paint.
        refit: list[RegionItem] = []
        for item in found:
            # A region the edit kept keeps its backdrop (its members and box updated): replacing a
            # 500-node box repainted the whole canvas (every wire) before the edit showed.
            kept = before.pop(item.region_id, None)
            members_changed = kept is None or kept.node_ids != item.node_ids
            if kept is not None:
                kept.node_ids = item.node_ids
                if item.current:
                    kept.set_badge(item.label, item.toolTip(), item.saves)
                else:
                    kept.current = False
                item = kept
            if item.waiting != (not item.current and overdue):
                item.waiting = not item.waiting
                item.update()
            self.region_items.append(item)
            if members_changed:
                refit.append(item)
        for gone in before.values():
            self.removeItem(gone)
        self._regions_by_node.clear()
        self._region_nodes = set()
        for item in self.region_items:
            for n in item.node_ids:
                self._regions_by_node.setdefault(n, []).append(item)
            self._region_nodes.update(item.node_ids)
            if item.scene() is not self:
                self.addItem(item)
        return refit

    def _fit_region(self, region: RegionItem) -> None:
        region.fit([self.node_items[n].sceneBoundingRect() for n in region.node_ids if n in self.node_items])
