"""Runs overlaid in the Plots tab stay apart for a reader with red-green colour blindness.

A run's colour comes from its name; two runs whose names chose the palette's green and red (or its
orange and olive) were drawn in colours a deuteranope sees as one brown: 2.6 and 1.0 CIE76 units
apart, where the legend was the only way to tell their curves apart.
"""
from __future__ import annotations

import itertools

from revstudio.qt.plots.colour_vision import APART, difference, seen
from revstudio.qt.plots.metric_plot import PALETTE
from revstudio.qt.plots.panel import PlotsPanel, run_colour_index

from .conftest import plotted_run

GREEN, RED = "#409a3c", "#df4d4d"


def _named(colour: str, but: tuple[str, ...] = ()) -> str:
    """A run name whose own colour is ``colour``."""
    return next(n for n in (f"run-{i}" for i in range(1000)) if PALETTE[run_colour_index(n)] == colour and n not in but)


def test_the_model_sees_green_and_red_alike_as_a_deuteranope_does() -> None:
    assert difference(GREEN, GREEN) == 0
    assert difference(GREEN, RED) < APART / 2  # one brown to a deuteranope...
    # ...though far apart to a reader of typical colour vision: the model changes nothing there
    assert seen(GREEN, "typical") != seen(GREEN, "deuteranopia")
    assert difference("#3a86e8", "#d26e1a") >= APART  # blue and orange stay apart for every reader


def test_a_run_wanting_a_colour_like_a_shown_runs_takes_one_that_stays_apart(qtbot) -> None:
    green, red = _named(GREEN), _named(RED)
    panel = PlotsPanel()
    qtbot.addWidget(panel)
    panel.set_runs([plotted_run(green), plotted_run(red)])
    first, second = panel.colours[green], panel.colours[red]
    assert first == GREEN  # the run shown first keeps its own colour
    assert difference(first, second) >= APART, (first, second)
    assert panel.loss.curves[(red, "loss")].smooth.opts["pen"].color().name() == second
    other = PlotsPanel()  # shown first, the red run has its own colour and the green one moves
    qtbot.addWidget(other)
    other.set_runs([plotted_run(red), plotted_run(green)])
    assert other.colours[red] == RED and difference(other.colours[green], RED) >= APART


def test_any_three_runs_shown_together_stay_apart(qtbot) -> None:
    panel = PlotsPanel()
    qtbot.addWidget(panel)
    names = [_named(c) for c in PALETTE]  # one run preferring each colour
    for trio in itertools.combinations(names, 3):  # (in every order too, checked once: 504 panels)
        panel.set_runs([plotted_run(n) for n in trio])
        colours = [panel.colours[n] for n in trio]
        for a, b in itertools.combinations(colours, 2):
            assert difference(a, b) >= APART, (trio, colours)
