"""The canvas scales with the graph: no quadratic open, no O(n) work per drag frame.

No fixed time limits here (machines are shared): the absolute targets (open +
fit of 1,000 nodes < 1 s, drag frames < 16 ms) are benchmarks/bench_canvas.py's.
These tests compare CPU time at two sizes in the same test and count the work
each mouse move does, which catches a per-event relayout, a wire update for
every wire instead of the moved node's, or a model edit per mouse move.
"""
from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication
from scaling import NOT_QUADRATIC, best_time

from revstudio.core.generate import large_graph
from revstudio.qt.canvas import GraphView
from revstudio.qt.document import Document

LEFT = Qt.MouseButton.LeftButton
NONE = Qt.KeyboardModifier.NoModifier


@contextmanager
def opened(qtbot: Any, nodes: int, size: tuple[int, int] = (1200, 800)) -> Iterator[tuple[Document, GraphView]]:
    doc = Document(large_graph(nodes))
    view = GraphView(doc)
    qtbot.addWidget(view)
    view.resize(*size)
    try:
        yield doc, view
    finally:
        view.close()
        doc.undo_stack.clear()


def open_cpu(qtbot: Any, nodes: int) -> float:
    """CPU seconds for items + fit + first paint of a generated graph (best of 2)."""
    doc = Document(large_graph(nodes))  # the analysis is the document's cost, not the canvas's

    def show() -> None:
        view = GraphView(doc)
        qtbot.addWidget(view)
        view.resize(1200, 800)
        view.show()
        view.fit_all()
        view.viewport().repaint()
        view.close()

    try:
        return best_time(show, repeats=2, clock=time.process_time)
    finally:
        doc.undo_stack.clear()


class WireCounter:
    """Counts wire path updates on a scene, by wire."""

    def __init__(self, scene: Any) -> None:
        self.calls: list[Any] = []
        real: Callable[[Any], None] = scene._update_wire

        def counting(wire: Any) -> None:
            self.calls.append(wire.edge)
            real(wire)

        scene._update_wire = counting  # items_moved looks the method up on the instance

    def take(self) -> list[Any]:
        calls, self.calls = self.calls, []
        return calls


def drag(view: GraphView, item: Any, steps: int, step: QPoint, on_frame: Callable[[int], None]) -> list[float]:
    """Press on ``item``'s title, move ``steps`` times, release; CPU seconds per frame."""
    vp = view.viewport()
    start = view.mapFromScene(item.mapToScene(QPointF(60, 10)))
    QTest.mousePress(vp, LEFT, NONE, start)
    frames = []
    for i in range(1, steps + 1):
        t = time.process_time()
        QTest.mouseMove(vp, start + step * i)
        QApplication.processEvents()
        frames.append(time.process_time() - t)
        on_frame(i)
    QTest.mouseRelease(vp, LEFT, NONE, start + step * steps)
    return frames


def test_opening_four_times_the_nodes_costs_about_four_times(qtbot: Any) -> None:
    with opened(qtbot, 1000) as (doc, view):
        view.show()
        view.fit_all()
        assert len(view.scene().node_items) == len(doc.graph.nodes) >= 1000
        visible = view.mapToScene(view.viewport().rect()).boundingRect()
        assert visible.contains(view.scene().nodes_rect())
    ratio = open_cpu(qtbot, 1000) / open_cpu(qtbot, 250)
    assert ratio < NOT_QUADRATIC, f"opening 4x the nodes took {ratio:.1f}x the CPU time"


def single_drag_cpu(qtbot: Any, nodes: int) -> float:
    """Drag one mid-graph node 30 steps; check each frame's work; median CPU seconds per frame."""
    with opened(qtbot, nodes) as (doc, view):
        view.show()
        ids = list(doc.graph.nodes)
        node_id = next(n for n in ids[len(ids) // 2:] if doc.graph.ports(n)[0] and doc.graph.ports(n)[1])
        own_wires = sorted(doc.graph.edges_of(node_id))
        assert own_wires
        item = view.scene().node_items[node_id]
        view.centerOn(item.sceneBoundingRect().center())
        QApplication.processEvents()
        counter = WireCounter(view.scene())
        model_events: list[str] = []

        def on_change() -> None:
            model_events.append("changed")

        def frame(i: int) -> None:
            # exactly the node's own wires follow it, each once; the model is untouched until release
            assert sorted(counter.take()) == own_wires, f"frame {i} updated other wires"
            assert not model_events, f"frame {i} edited the model"

        doc.graph.changed.sub(on_change)
        frames = drag(view, item, 30, QPoint(3, 2), frame)
        doc.graph.changed.unsub(on_change)
        assert doc.undo_stack.count() == 1 and doc.undo_stack.command(0).text().startswith("Move")
        return statistics.median(frames)


def test_a_drag_frame_touches_only_the_dragged_node(qtbot: Any) -> None:
    ratio = single_drag_cpu(qtbot, 1000) / max(single_drag_cpu(qtbot, 250), 1e-6)
    assert ratio < NOT_QUADRATIC, f"a drag frame with 4x the nodes took {ratio:.1f}x the CPU time"


def selection_drag_cpu(qtbot: Any, nodes: int) -> float:
    """Select everything and drag it 10 steps; check each frame's work; median CPU seconds per frame."""
    with opened(qtbot, nodes, (1000, 700)) as (doc, view):
        view.show()
        view.select_all()
        view.fit_all()
        QApplication.processEvents()
        counter = WireCounter(view.scene())
        every_wire = sorted(doc.graph.edges)

        def frame(i: int) -> None:
            assert sorted(counter.take()) == every_wire, f"frame {i} did not update each wire exactly once"

        item = next(iter(view.scene().node_items.values()))
        frames = drag(view, item, 10, QPoint(2, 1), frame)
        assert doc.undo_stack.count() == 1
        move = doc.undo_stack.command(0)
        assert move.text().startswith("Move") and len(doc.graph.nodes) > nodes * 0.8
        wire = next(iter(view.scene().wire_items.values()))
        e = wire.edge
        start = view.scene().node_items[e.src.node].port_scene_pos(e.src.port, True)
        assert wire.scene_path().pointAtPercent(0.0) == start
        return statistics.median(frames)


def test_dragging_a_whole_selection_updates_each_wire_once_per_frame(qtbot: Any) -> None:
    # moving 4x the nodes is 4x the work per frame, never 16x
    ratio = selection_drag_cpu(qtbot, 500) / max(selection_drag_cpu(qtbot, 125), 1e-6)
    assert ratio < NOT_QUADRATIC, f"dragging 4x the nodes took {ratio:.1f}x the CPU time per frame"
