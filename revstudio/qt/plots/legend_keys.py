"""With several runs overlaid, what a solid and a dashed line stand for, in the legend.

Overlaid, a run is one colour and one legend entry (its name), and its validation (or inversion)
curve is the same colour dashed: the legend named the runs but nowhere said which line was the
validation loss (TensorBoard and W&B name each curve). Rather than an entry per run and curve (too
many for a plot a third of a window wide), the legend adds one neutral entry per line style, in
the channel's short word: "train" solid, "val" dashed (the gradient check: "grad", "inversion"). A single run's curves are named one by one and need no key.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import Qt

from revstudio.qt import theme
from revstudio.qt.plots.channel import Channel


class StyleKeys:
    """The style entries of one plot's legend: data-less curves that only the legend draws."""

    def __init__(self, plot: pg.PlotWidget) -> None:
        self.plot = plot
        self.items: dict[str, Any] = {}  # channel key -> its key curve
        self._colour = ""

    def clear(self) -> None:
        """Take the keys out (a run's new curves come before them in the legend when they return)."""
        for item in self.items.values():
            self.plot.removeItem(item)
        self.items.clear()

    def update(self, channels: Sequence[Channel], drawn: set[str], overlaid: bool) -> bool:
        """Show a key per channel in ``drawn`` (their keys) while overlaid and both styles are drawn;
        returns whether the legend's entries changed."""
        styles = {c.dashed for c in channels if c.key in drawn}
        wanted = [c for c in channels if c.key in drawn] if overlaid and len(styles) > 1 else []
        changed = False
        for key in [k for k in self.items if k not in {c.key for c in wanted}]:
            self.plot.removeItem(self.items.pop(key))
            changed = True
        colour = theme.colors().muted
        for channel in wanted:
            if channel.key in self.items:
                continue
            style = Qt.PenStyle.DashLine if channel.dashed else Qt.PenStyle.SolidLine
            item = pg.PlotCurveItem(pen=pg.mkPen(colour, width=2, style=style), name=channel.short or channel.label)
            self.plot.addItem(item)  # after the runs' curves: the legend lists the runs, then the key
            self.items[channel.key] = item
            changed = True
        if colour != self._colour:  # (a theme switch)
            self._colour = colour
            for key, item in self.items.items():
                dashed = next(c.dashed for c in channels if c.key == key)
                style = Qt.PenStyle.DashLine if dashed else Qt.PenStyle.SolidLine
                item.setPen(pg.mkPen(colour, width=2, style=style))
        return changed
