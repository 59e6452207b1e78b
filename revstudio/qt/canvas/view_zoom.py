"""The canvas's zoom and fit: zoom steps about a point, Fit, and the project's saved view.

A fit the view made by itself (a project opened without a saved view, a group's or a run's
tab just opened) is redone when the view is resized, until the user zooms or pans: a graph
shown before the window's first paint is fitted while the docks are still settling, and would
stay drawn too small (or cut off, in a window made smaller).

That first view fits the graph only down to the zoom at which the cards' words read
(:data:`OPEN_ZOOM`); a wider graph opens at that zoom on its start (its Inputs), and the
overview (overview.py) shows the rest. Fit All still fits everything, however small.
"""
from __future__ import annotations

from typing import Any

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtWidgets import QGraphicsView

ZOOM_STEP = 1.2
ZOOM_MIN, ZOOM_MAX = 0.002, 4.0  # fit must show even a 100,000 px wide graph
FIT_MAX = 1.25          # fitting one small node should not blow it up
ZOOM_OUT_FLOOR = 0.1    # the wheel and Ctrl+- stop here, or where the whole graph fits if that is less
READABLE_ZOOM = 0.8     # revealing a node (a Problem's click, a search) zooms in at least this far
# A project without a saved view opens no further out than this: at 100 % text the cards draw their
# port names and parameters (from WORDS_ZOOM, 0.67); at larger text sizes their simplified titles.
OPEN_ZOOM = 0.7
BACK_DEPTH = 20         # views View > Previous View can go back through
MARGIN = 40.0           # scene units kept around a fitted graph
START_TYPES = ("Input", "GroupInput")  # where a graph starts: a too-wide one opens on these
END_TYPES = ("Output", "GroupOutput")   # where it ends (End in the overview goes there)


class ZoomMixin(QGraphicsView):
    """Zoom and fit for :class:`GraphView` (which provides ``_scene`` and ``selected_node_ids``)."""

    _scene: Any
    # (zoom, centre) of a fit the view made by itself; None once the user zoomed or panned
    _auto_fit: tuple[float, QPointF] | None = None
    _readable_fit = False  # that fit is a project's first view (else a group's or run's tab: all of it)
    # (zoom, centre) of the last view shown without the user: the project's saved view or a fit of
    # its own; a Save stores the view only once the user moved off it (moved_by_user)
    _shown: tuple[float, QPointF] | None = None

    # Views the canvas jumped away from (Fit, Ctrl+L's framing, a Problem's or a search's click),
    # newest last: View > Previous View goes back. Views are no undo steps (as in Blender or Qt
    # Creator): Ctrl+Z takes back what a layout did to the nodes, never where the view is.
    _back: list[tuple[float, QPointF]] | None = None

    def remember_view(self) -> None:
        """Keep the view as it is now for Previous View (before a jump the user did not drag to)."""
        if self._back is None:
            self._back = []
        here = (self.zoom(), self._centre())
        if not self._back or not self._showing(self._back[-1]):
            self._back.append(here)
            del self._back[:-BACK_DEPTH]

    def previous_view(self) -> bool:
        """View > Previous View: the view before the last jump (False where there is none to go to)."""
        while self._back:
            zoom, centre = self._back.pop()
            if self._showing((zoom, centre)):
                continue  # (the user came back there by hand)
            self._auto_fit = None
            self.resetTransform()
            self.scale(zoom, zoom)
            self.centerOn(centre)
            return True
        return False

    def selected_node_ids(self) -> list[str]:  # pragma: no cover - GraphView's
        raise NotImplementedError

    def zoom(self) -> float:
        return self.transform().m11()

    def _zoom_by(self, factor: float, anchor: QPointF | None = None) -> None:
        """Scale by ``factor`` keeping the scene point under ``anchor`` (viewport px) in place."""
        target = max(ZOOM_MIN, min(ZOOM_MAX, self.zoom() * factor))
        if factor < 1 and target < ZOOM_OUT_FLOOR:  # (a small graph shrank to a dot at 0.002)
            target = max(target, min(ZOOM_OUT_FLOOR, self._fit_zoom(), self.zoom()))
        factor = target / self.zoom()
        if anchor is None:
            anchor = QPointF(self.viewport().rect().center())
        fixed = self.mapToScene(anchor.toPoint())
        old = self.transformationAnchor()
        self.setTransformationAnchor(QGraphicsView.ViewportAnchor.NoAnchor)
        self.scale(factor, factor)
        self.setTransformationAnchor(old)
        drift = self.mapFromScene(fixed) - anchor.toPoint()
        self.horizontalScrollBar().setValue(self.horizontalScrollBar().value() + drift.x())
        self.verticalScrollBar().setValue(self.verticalScrollBar().value() + drift.y())

    def _fit_zoom(self) -> float:
        """The zoom at which the whole graph fits the view (as Fit shows it)."""
        rect = self._scene.nodes_rect().adjusted(-40, -40, 40, 40)
        if rect.isEmpty():
            return ZOOM_OUT_FLOOR
        size = self.viewport().size()
        return min(size.width() / rect.width(), size.height() / rect.height())

    def _step_anchor(self) -> QPointF | None:
        """Where Ctrl++ / Ctrl+- (menu, toolbar) zoom about: the middle of the selection's part in
        view, so a selection near an edge stays where it is instead of drifting out of view; with
        no selection in view, None (the view's centre). The wheel zooms about the pointer."""
        ids = self.selected_node_ids()
        if not ids:
            return None
        shown = self.mapToScene(self.viewport().rect()).boundingRect()
        part = self._scene.nodes_rect(ids).intersected(shown)
        if part.isEmpty():
            return None
        return QPointF(self.mapFromScene(part.center()))

    def zoom_in(self) -> None:
        self._zoom_by(ZOOM_STEP, self._step_anchor())

    def zoom_out(self) -> None:
        self._zoom_by(1 / ZOOM_STEP, self._step_anchor())

    def reset_zoom(self) -> None:
        center = self.mapToScene(self.viewport().rect().center())
        self.resetTransform()
        self.centerOn(center)

    def fit_all(self) -> None:
        self.remember_view()
        self._fit(self._scene.nodes_rect())

    def fit_selection(self) -> None:
        self.remember_view()
        ids = self.selected_node_ids()
        self._fit(self._scene.nodes_rect(ids) if ids else self._scene.nodes_rect())

    def _fit(self, rect: QRectF) -> None:
        if rect.isNull() or rect.isEmpty():
            self.resetTransform()
            self.centerOn(0, 0)
            return
        self.fitInView(rect.adjusted(-40, -40, 40, 40), Qt.AspectRatioMode.KeepAspectRatio)
        if self.zoom() > FIT_MAX:
            self.resetTransform()
            self.scale(FIT_MAX, FIT_MAX)
            self.centerOn(rect.center())
        elif self.zoom() < ZOOM_MIN:
            self.resetTransform()
            self.scale(ZOOM_MIN, ZOOM_MIN)
            self.centerOn(rect.center())

    def view_state(self) -> dict[str, float]:
        """Zoom and centre, for the project's ``view`` section."""
        c = self.mapToScene(self.viewport().rect().center())
        return {"zoom": round(self.zoom(), 4), "x": round(c.x(), 1), "y": round(c.y(), 1)}

    def restore_view_state(self, state: dict[str, Any]) -> None:
        try:
            zoom = max(ZOOM_MIN, min(ZOOM_MAX, float(state["zoom"])))
            x, y = float(state["x"]), float(state["y"])
        except (KeyError, TypeError, ValueError):
            self.fit_by_itself(readable=True)  # no usable saved view: its start, readable, or all of it
            return
        self._auto_fit = None
        self.resetTransform()
        self.scale(zoom, zoom)
        self.centerOn(x, y)
        self._shown = (self.zoom(), self._centre())


    def _centre(self) -> QPointF:
        return self.mapToScene(self.viewport().rect().center())

    def fit_by_itself(self, readable: bool = False) -> None:
        """Fit the whole graph, and fit it again on each resize until the user zooms or pans.

        ``readable``: a project's first view, which fits the graph only where it fits at
        :data:`OPEN_ZOOM` or closer, and else shows its start at that zoom. (A group's or a run's
        tab shows all of its graph, as Blender's Tab does; its overview helps there too.)"""
        self._readable_fit = readable
        self._fit(self._scene.nodes_rect())
        if readable and self.zoom() < OPEN_ZOOM:
            self._show_start(OPEN_ZOOM)
        self._auto_fit = self._shown = (self.zoom(), self._centre())

    def _ends_rect(self, types: tuple[str, ...]) -> QRectF:
        """The graph's cards of ``types`` (its Inputs, or its Outputs), or all of it where it has none."""
        graph = self._scene.graph
        ids = [n for n in self._scene.node_items if n in graph.nodes and graph.nodes[n].type in types]
        return self._scene.nodes_rect(ids) if ids else self._scene.nodes_rect()

    def show_start(self) -> None:
        """The graph's Inputs at the left/top at this zoom (Home in the overview)."""
        self._show_start(self.zoom())

    def show_end(self) -> None:
        """The graph's Outputs at the right/bottom at this zoom (End in the overview)."""
        self._show_start(self.zoom(), end=True)

    def _show_start(self, zoom: float, end: bool = False) -> None:
        """Zoom to ``zoom`` with the graph's start at the left/top: along each axis on which the
        graph is longer than the view, the view begins at its Inputs (never past the graph's end);
        along one on which it fits, the graph is centred. ``end``: its Outputs at the right/bottom."""
        whole = self._scene.nodes_rect().adjusted(-MARGIN, -MARGIN, MARGIN, MARGIN)
        start = self._ends_rect(END_TYPES if end else START_TYPES).adjusted(-MARGIN, -MARGIN, MARGIN, MARGIN)
        self.resetTransform()
        self.scale(zoom, zoom)
        w, h = self.viewport().width() / zoom, self.viewport().height() / zoom

        def centre(lo: float, hi: float, first: float, last: float, span: float) -> float:
            if hi - lo <= span:
                return (lo + hi) / 2
            if end:
                return max(min(last, hi), lo + span) - span / 2
            return min(max(first, lo), hi - span) + span / 2

        self.centerOn(centre(whole.left(), whole.right(), start.left(), start.right(), w),
                      centre(whole.top(), whole.bottom(), start.top(), start.bottom(), h))

    def _untouched(self) -> bool:
        """The view still shows its own fit: same zoom, same centre (the resize anchor keeps it)."""
        return self._auto_fit is not None and self._showing(self._auto_fit)

    def moved_by_user(self) -> bool:
        """The user zoomed or panned off the view the canvas showed by itself (the project's saved
        view, or its first fit), so a Save stores the new one; else the file keeps its ``view`` as it
        was: opening and saving a project changes no byte of it, whatever the window's size."""
        return self._shown is None or not self._showing(self._shown)

    def view_saved(self) -> None:
        """The view as it is now went into the project: the next Save compares with it."""
        self._shown = (self.zoom(), self._centre())

    def _showing(self, state: tuple[float, QPointF]) -> bool:
        zoom, centre = state
        slack = 2.0 / max(zoom, 1e-9)  # two screen pixels of rounding
        drift = self._centre() - centre
        return self.zoom() == zoom and abs(drift.x()) <= slack and abs(drift.y()) <= slack

    def resizeEvent(self, event: Any) -> None:  # noqa: N802 - Qt API
        super().resizeEvent(event)  # keeps the centre (AnchorViewCenter)
        if self._untouched():
            self.fit_by_itself(self._readable_fit)  # the docks settled after the first fit: fit the final size
        else:
            self._auto_fit = None
