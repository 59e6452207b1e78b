"""Dock panels that keep their proportions as the window shrinks and grows again.

QMainWindow gives a shrinking window's space back from the docks and never
returns it: after a trip to 560x380 the side panels stay 60 px wide. The
:class:`DockSizeKeeper` remembers the size the user gave each dock (a separator
drag at a fixed window size) and, after every window resize, sets each docked
panel to that size capped at a share of the window, so small windows keep a
usable canvas and large ones get their panels back.
"""
from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QSize, Qt, QTimer
from PySide6.QtWidgets import QDockWidget, QMainWindow

SIDE_SHARE = 0.26     # a side panel takes at most this share of the window's width
BOTTOM_SHARE = 0.32   # the bottom panel at most this share of a small window's height
BOTTOM_SHARE_TALL = 0.45  # ... and of a tall one's (room for the Code tab)
MIN_CANVAS = QSize(220, 140)
MIN_PANEL = QSize(120, 60)


class DockSizeKeeper(QObject):
    """Watches ``window``'s resizes and its docks' sizes."""

    def __init__(self, window: QMainWindow, docks: list[QDockWidget]) -> None:
        super().__init__(window)
        self.window = window
        self.docks = docks
        self.preferred: dict[QDockWidget, int] = {}
        self.preferred_h: dict[QDockWidget, int] = {}  # side panels stacked in one column
        self._window_size = window.size()
        self._applying = False
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(30)  # after the layout has settled on the new size
        self._timer.timeout.connect(self.apply)
        self._settling = QTimer(self)  # the layout applies resizeDocks later: not a user's drag
        self._settling.setSingleShot(True)
        self._settling.setInterval(150)
        central = window.centralWidget()
        if central is not None:
            central.setMinimumSize(MIN_CANVAS)  # the docks give way first, not the canvas
        for dock in docks:
            inner = dock.widget()
            if inner is not None:  # their contents may shrink far enough for a small window
                inner.setMinimumSize(MIN_PANEL)
        window.installEventFilter(self)
        for dock in docks:
            dock.installEventFilter(self)

    def _vertical(self, dock: QDockWidget) -> bool:
        area = self.window.dockWidgetArea(dock)
        return area in (Qt.DockWidgetArea.TopDockWidgetArea, Qt.DockWidgetArea.BottomDockWidgetArea)

    def _size(self, dock: QDockWidget) -> int:
        return dock.height() if self._vertical(dock) else dock.width()

    def remember(self) -> None:
        """Take the docks' current sizes as the ones the user wants."""
        for dock in self.docks:
            if dock.isVisible() and not dock.isFloating():
                self.preferred[dock] = self._size(dock)
                self.preferred_h[dock] = dock.height()
        self._window_size = self.window.size()

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt API
        if event.type() == QEvent.Type.Resize and not self._applying:
            if obj is self.window:
                self._timer.start()
            elif isinstance(obj, QDockWidget) and self.window.size() == self._window_size \
                    and not self._timer.isActive() and not self._settling.isActive() \
                    and obj.isVisible() and not obj.isFloating():
                # the window kept its size: the user dragged a separator
                self.preferred[obj] = self._size(obj)
                self.preferred_h[obj] = obj.height()
        return False

    def apply(self) -> None:
        """Each docked panel at its preferred size, capped at its share of the window."""
        if not self.preferred:  # the first layout: what it shows is what the user wants...
            self.remember()     # ...capped below like any other (a window opened 900 px wide kept
                                # the 320 px inspector: 36 %, its memory figures wrapping "MiB" alone)
        w, h = self.window.width(), self.window.height()
        sides: list[tuple[QDockWidget, int]] = []
        bottoms: list[tuple[QDockWidget, int]] = []
        for dock in self.docks:
            if not dock.isVisible() or dock.isFloating() or dock not in self.preferred:
                continue
            if self._vertical(dock):
                share = BOTTOM_SHARE if h < 600 else BOTTOM_SHARE_TALL
                bottoms.append((dock, int(min(self.preferred[dock], share * h))))
            else:
                sides.append((dock, int(min(self.preferred[dock], SIDE_SHARE * w))))
        self._applying = True
        try:
            if sides:
                self.window.resizeDocks([d for d, _ in sides], [s for _, s in sides], Qt.Orientation.Horizontal)
            if bottoms:
                self.window.resizeDocks([d for d, _ in bottoms], [s for _, s in bottoms], Qt.Orientation.Vertical)
            for area in {self.window.dockWidgetArea(d) for d, _ in sides}:
                column = [d for d, _ in sides if self.window.dockWidgetArea(d) == area and d in self.preferred_h]
                if len(column) > 1:  # stacked panels (Inspector over History) keep their proportions
                    total = sum(d.height() for d in column)
                    want = sum(self.preferred_h[d] for d in column) or 1
                    self.window.resizeDocks(column, [int(total * self.preferred_h[d] / want) for d in column],
                                            Qt.Orientation.Vertical)
        finally:
            self._applying = False
        self._window_size = self.window.size()
        self._settling.start()
