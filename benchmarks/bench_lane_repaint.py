"""Benchmark: what the canvas's repaint after a rewire inside a lane is made of, 1,007 nodes fitted.

A rewire inside a lane brings the lane's backdrop back and the count line of the ~200 cards after
it; fitted (zoom ~0.006) the two lanes share a ~770x14 px band, so the repaint blits every card and
wire of the band from its cached pixmap and draws anew the items whose picture changed. This script
times each canvas paint from the rewire's call to the end of its event-loop turns (CPU ms), and in
them the Python paints of cards and backdrops (count, ms); then the same band painted again with
every pixmap warm, a full repaint of the fitted view, and one far card's Python paint (µs, the
median over the graph's cards). ``--profile`` prints the rewire's paints under cProfile, by own time.
Usage: python benchmarks/bench_lane_repaint.py [--nodes 1000] [--repeat 5] [--profile]
"""
from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_editor_actions as bench  # noqa: E402  (its window, quiet dialogs and settle)
from PySide6.QtCore import QEvent, QObject, QStandardPaths  # noqa: E402
from PySide6.QtGui import QImage, QPainter, QRegion, QTransform  # noqa: E402
from PySide6.QtWidgets import QApplication, QStyleOptionGraphicsItem  # noqa: E402

from revstudio.core.commands import Connect, Disconnect  # noqa: E402
from revstudio.core.generate import large_graph  # noqa: E402
from revstudio.core.project_write import save  # noqa: E402
from revstudio.qt.canvas import node_item, region_item  # noqa: E402

PAINTS: dict[str, list[float]] = {}  # "card" / "backdrop" -> the Python CPU ms of each paint in this canvas paint


def _timed(cls: Any, name: str) -> None:
    paint = cls.paint

    def timed(self: Any, painter: Any, option: Any, widget: Any = None) -> None:
        start = time.process_time()
        paint(self, painter, option, widget)
        PAINTS.setdefault(name, []).append((time.process_time() - start) * 1000)

    cls.paint = timed


class CanvasPaints(QObject):
    """Each paint of the canvas while ``on``: (CPU ms, region, {kind: (count, Python ms)})."""

    def __init__(self, view: Any) -> None:
        super().__init__()
        self.view, self.on, self.log = view, False, []
        self.last = QRegion()
        self.profile: cProfile.Profile | None = None
        view.viewport().installEventFilter(self)

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt API
        if not self.on or event.type() != QEvent.Type.Paint:
            return False
        PAINTS.clear()
        self.last = QRegion(event.region())
        cpu = time.process_time()
        if self.profile is not None:
            self.profile.enable()
        self.view.viewportEvent(event)  # the paint itself, timed to its end
        if self.profile is not None:
            self.profile.disable()
        kinds = {k: (len(v), sum(v)) for k, v in PAINTS.items()}
        self.log.append(((time.process_time() - cpu) * 1000, event.region().boundingRect(), kinds))
        return True

    def during(self, fn: Any) -> list[tuple[float, Any, dict[str, tuple[int, float]]]]:
        self.log, self.on = [], True
        fn()
        bench.settle()
        self.on = False
        return self.log


def far_card_us(scene: Any, zoom: float) -> float:
    """One card's Python paint at ``zoom`` (µs), the median of five passes over every card."""
    image = QImage(64, 64, QImage.Format.Format_ARGB32_Premultiplied)
    option, passes = QStyleOptionGraphicsItem(), []
    cards = list(scene.node_items.values())
    paint = getattr(node_item.NodeItem.paint, "__wrapped_paint__", node_item.NodeItem.paint)
    for _ in range(5):
        painter = QPainter(image)
        painter.setWorldTransform(QTransform.fromScale(zoom, zoom))
        cpu = time.process_time()
        for card in cards:
            paint(card, painter, option, None)
        passes.append((time.process_time() - cpu) / len(cards) * 1e6)
        painter.end()
    return statistics.median(passes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    app = QApplication.instance() or QApplication(sys.argv)
    QStandardPaths.setTestModeEnabled(True)
    far = node_item.NodeItem.paint
    _timed(node_item.NodeItem, "card")
    _timed(region_item.RegionItem, "backdrop")
    node_item.NodeItem.paint.__wrapped_paint__ = far  # type: ignore[attr-defined]
    from revstudio.qt.autosave import RecoveryStore
    from revstudio.qt.document import Document
    from revstudio.qt.main_window import MainWindow
    from revstudio.qt.settings import Settings

    rows: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "large.revs"
        save(large_graph(args.nodes), path)
        w = MainWindow(Document(), Settings(), bench.QuietDialogs(), RecoveryStore(Path(tmp) / "recovery"))
        w.resize(1280, 800)
        w.show()
        bench.settle()
        w.files.load_path(str(path))
        bench.settle()
        view, doc = w.current_view(), w.document
        bench.PAINTER[:] = [bench.FirstPaint(w)]  # (settle waits for the figures of the windows it knows)
        view.fit_all()
        bench.settle()
        spy = CanvasPaints(view)
        profile = cProfile.Profile() if args.profile else None
        relu = next(k for k, v in doc.graph.nodes.items() if v.type == "Activation")
        wire = next(e for e in doc.graph.edges if e.dst.node == relu)
        for _ in range(args.repeat):
            spy.during(lambda: doc.push(Disconnect(doc.graph, wire)))
            spy.profile = profile  # (the rewire's paints alone)
            log = spy.during(lambda: doc.push(Connect(doc.graph, wire.src, wire.dst)))
            spy.profile = None
            band = max(log, key=lambda entry: entry[0])  # (the band's paint; the others are a card's few px)
            for kind in ("card", "backdrop"):
                count, ms = band[2].get(kind, (0, 0.0))
                rows.setdefault(f"  {kind}s drawn anew in it (count)", []).append(count)
                rows.setdefault(f"  {kind}s drawn anew in it (Python ms)", []).append(ms)
            rows.setdefault("rewire: the band's paint (CPU ms)", []).append(band[0])
            rows.setdefault("rewire: every canvas paint (CPU ms)", []).append(sum(e[0] for e in log))
            region = QRegion(band[1])
            warm = spy.during(lambda r=region: view.viewport().repaint(r))
            rows.setdefault("the band again, pixmaps warm (CPU ms)", []).append(warm[0][0])
            full = spy.during(view.viewport().repaint)
            rows.setdefault("full repaint of the fitted view (CPU ms)", []).append(full[0][0])
        rows["far card's Python paint (µs)"] = [far_card_us(view.scene(), view.zoom())]
        print(f"{len(doc.graph.nodes)} nodes fitted (zoom {view.zoom():.4f}), {args.repeat} rewires: median (min-max)")
        order = ["rewire: every canvas paint (CPU ms)", "rewire: the band's paint (CPU ms)",
                 "  cards drawn anew in it (count)", "  cards drawn anew in it (Python ms)",
                 "  backdrops drawn anew in it (count)", "  backdrops drawn anew in it (Python ms)",
                 "the band again, pixmaps warm (CPU ms)", "full repaint of the fitted view (CPU ms)",
                 "far card's Python paint (µs)"]
        print("| part | median (min-max) |\n|---|---|")
        for name in order:
            values = rows[name]
            print(f"| {name} | {statistics.median(values):.1f} ({min(values):.1f}-{max(values):.1f}) |")
        if profile is not None:
            out = io.StringIO()
            pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(12)
            print(out.getvalue())
        w.document.undo_stack.setClean()
        w.close()
        bench.settle()
    del app


if __name__ == "__main__":
    main()
