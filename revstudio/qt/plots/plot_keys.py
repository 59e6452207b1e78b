"""Reading a plot from the keyboard: the arrow keys step through its points, the read-out names them.

A plot's values were painted only (the CSV held them): a keyboard or screen-reader user could not
read one. Focused (Tab reaches it), a plot marks its newest point with a thin line; Left/Right step
one point, Page Up/Page Down ten, Home/End go to the first/last; + and - zoom the x range about its
centre and 0 frames the whole run again. The read-out under the plot and the
plot's accessible description say the x value and each curve's value there, as hovering does.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QKeyEvent

from revstudio.qt import theme

STEPS = {Qt.Key.Key_Left: -1, Qt.Key.Key_Right: 1, Qt.Key.Key_PageUp: -10, Qt.Key.Key_PageDown: 10}
# + and - zoom the x range about its centre (= is + without Shift on most layouts), 0 frames the
# whole run again as a double click does. Keys of the focused plot, no actions: a text field keeps
# its + and - (Home is the first point here, so the reset is 0 alone).
ZOOM_IN = 0.8  # of the x range kept per press of +; - widens it by the inverse
ZOOMS = {Qt.Key.Key_Plus: ZOOM_IN, Qt.Key.Key_Equal: ZOOM_IN, Qt.Key.Key_Minus: 1 / ZOOM_IN}
ZOOM_KEYS = "+, -, 0"  # as the shortcuts help lists them
HELP = ("Wheel or +/- zooms, drag pans, a double click or 0 frames it all again; "
        "Left/Right step through the points, Home/End go to the first/last")


class PointStepper(QObject):
    """Arrow-key stepping over ``plot``'s points (a :class:`MetricPlot`); the read-out follows."""

    def __init__(self, plot: Any) -> None:
        super().__init__(plot)
        self.plot = plot
        self.index: int | None = None  # into xs(); None: the newest point when focus comes
        self.marker = pg.InfiniteLine(angle=90, movable=False)
        self.marker.hide()
        plot.plot.addItem(self.marker, ignoreBounds=True)
        plot.plot.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        plot.plot.setToolTip(HELP)
        plot.plot.installEventFilter(self)

    def xs(self) -> np.ndarray:
        """The x values (on the plot's axis) that hold a point of any curve, in order."""
        columns = [run.series[name].column(self.plot.axis)
                   for run, _colour in self.plot._runs  # the runs drawn at the last refresh
                   for channel in self.plot.channels for name in channel.names(run)]
        columns = [c for c in columns if c.size]
        return np.unique(np.concatenate(columns)) if columns else np.empty(0)

    def show(self, index: int | None) -> str:
        """Mark point ``index`` (None: the newest) and say its values; returns what was said."""
        xs = self.xs()
        if not xs.size:
            self.index = None
            self.marker.hide()
            text = "no points yet"
        else:
            self.index = len(xs) - 1 if index is None else max(0, min(len(xs) - 1, index))
            x = float(xs[self.index])
            text = self.plot.describe_at(x)
            self.marker.setPen(pg.mkPen(theme.colors().muted, width=1))
            self.marker.setPos(x)
            self.marker.show()
        self.plot.readout.set_texts([text])
        self.plot.plot.setAccessibleDescription(text)
        return text

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt API
        kind = event.type()
        if kind == QEvent.Type.FocusIn:
            self.show(self.index)
        elif kind == QEvent.Type.FocusOut:
            self.marker.hide()
        elif kind == QEvent.Type.KeyPress and isinstance(event, QKeyEvent):
            key = event.key()
            count = len(self.xs())
            if key in STEPS:
                start = count - 1 if self.index is None else self.index
                self.show(start + STEPS[Qt.Key(key)])
                return True
            if key in ZOOMS:
                self.plot.zoom_x(ZOOMS[Qt.Key(key)])
                return True
            if key == Qt.Key.Key_0:
                self.plot.reset_zoom()
                return True
            if key in (Qt.Key.Key_Home, Qt.Key.Key_End):
                self.show(0 if key == Qt.Key.Key_Home else count - 1)
                return True
        return False
