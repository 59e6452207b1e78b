"""Plot axes, labels and legends in the theme's colours.

pyqtgraph draws its text in a fixed grey (150, 150, 150): readable on the dark
theme, but 2.7:1 against the light theme's window, below the 4.5:1 that small
text needs. :func:`style` gives a plot the current theme's text and border
colours; :func:`restyle_all` does it for every plot open when the theme changes.
"""
from __future__ import annotations

import weakref

import pyqtgraph as pg
from shiboken6 import isValid

from revstudio.qt import theme

AXES = ("left", "bottom", "right", "top")
LEGEND_PT = 8.0  # a legend's and a hover read-out's text at a text size of 100 %
LEGEND_ALPHA = 170  # of 255: the words read first, the curves under a legend still show
# every plot style() has coloured: restyle_all visits these, not the widget tree
_STYLED: weakref.WeakSet[pg.PlotWidget] = weakref.WeakSet()


def legend_pt() -> float:
    """A legend's text size in points at the current text size (Preferences > Text size)."""
    return LEGEND_PT * theme.text_scale() / 100


def style(plot: pg.PlotWidget) -> None:
    """Axis text and labels in the theme's text colour, axis lines in its muted one, legend labels too,
    on a backing in the window's colour; the plot's background is the window's colour."""
    _STYLED.add(plot)
    c = theme.colors()
    # the window's colour, drawn: with no background of its own a plot kept the colour of the theme
    # it was made in after a switch (dark under light axes, its words unreadable)
    plot.setBackground(pg.mkColor(c.window))
    item = plot.getPlotItem()
    for name in AXES:
        if name in item.axes:
            axis = item.getAxis(name)
            axis.setPen(c.muted)  # before the text pen: setPen also recolours the axis label
            axis.setTextPen(c.text)
    legend = item.legend
    if legend is not None:
        # A legend sits over the curves (top right, where a rising curve ends): a backing in the
        # window's colour keeps its words readable where a curve runs under them.
        backing = pg.mkColor(c.window)
        backing.setAlpha(LEGEND_ALPHA)
        legend.setBrush(pg.mkBrush(backing))  # (no border: an empty legend stays unseen)
        legend.setLabelTextColor(c.text)
        legend.setLabelTextSize(f"{legend_pt():g}pt")
        for _sample, label in legend.items:
            label.setText(label.text)  # setLabelTextColor only stores the colour for the next text


def restyle_all() -> None:
    """Every open plot in the current theme (after Ctrl+Shift+T or Preferences)."""
    # The plots style() coloured, not a walk of the widget tree: wrapping every widget (allWidgets),
    # then the plot children of every top-level window (findChildren), each crashed on a window a
    # closed one was tearing down (Fatal Python error: Segmentation fault, in the GUI tests).
    for plot in list(_STYLED):
        if isValid(plot):
            style(plot)
