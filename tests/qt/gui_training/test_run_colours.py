"""Overlaid runs never share a colour, and a run keeps its colour while it is shown."""
from __future__ import annotations

from revstudio.qt.plots.colour_vision import apart as colours_apart
from revstudio.qt.plots.metric_plot import PALETTE
from revstudio.qt.plots.panel import PlotsPanel

from .conftest import plotted_run


def test_the_tenth_run_of_a_session_does_not_take_the_first_runs_colour_beside_it(qtbot):
    panel = PlotsPanel()
    qtbot.addWidget(panel)
    runs = [plotted_run(f"run-{i}") for i in range(10)]
    for run in runs:  # a session that looked at ten runs, one after another
        panel.set_runs([run])
    panel.set_runs([runs[0], runs[9]])
    first, tenth = panel.colours["run-0"], panel.colours["run-9"]
    assert first != tenth
    curves = panel.loss.curves
    assert curves[("run-0", "loss")].smooth.opts["pen"].color().name() == first
    assert curves[("run-9", "loss")].smooth.opts["pen"].color().name() == tenth

    # a run keeps its colour from one selection to the next (the first run shown keeps its own)
    panel.set_runs([runs[0], runs[3], runs[9]])
    assert panel.colours["run-0"] == first and panel.colours["run-9"] == tenth
    assert len({panel.colours[r.name] for r in (runs[0], runs[3], runs[9])}) == 3

    # as many runs as colours: all different
    many = [plotted_run(f"many-{i}") for i in range(len(PALETTE))]
    panel.set_runs(many)
    assert len({panel.colours[r.name] for r in many}) == len(PALETTE)


def test_a_run_has_the_same_colour_in_every_session_whatever_was_shown_before(qtbot):
    """A run's colour went by the order runs were first shown in a session: blue one day, orange the
    next. It is now a function of its folder's name, collisions settled the same way every time."""
    import zlib

    names = [f"2026120{d}-10{m}000" for d in range(1, 10) for m in range(10, 60, 7)]
    own = {n: PALETTE[zlib.crc32(n.encode()) % len(PALETTE)] for n in names}  # the name's own colour
    apart = []  # runs whose own colours differ, for a red-green colour-blind reader too (colour_vision)
    for n in names:
        if all(colours_apart(own[n], own[m]) for m in apart):
            apart.append(n)
    a, b, c = apart[:3]
    clash = next(n for n in names if n not in apart[:3] and own[n] == own[a])  # prefers a's colour

    first = PlotsPanel()  # one session: a, then b and c beside it
    qtbot.addWidget(first)
    first.set_runs([plotted_run(a)])
    first.set_runs([plotted_run(a), plotted_run(b), plotted_run(c)])
    seen = dict(first.colours)
    assert seen == {n: own[n] for n in (a, b, c)}
    later = PlotsPanel()  # the next session, the runs picked in another order and after others
    qtbot.addWidget(later)
    later.set_runs([plotted_run(n) for n in names[-4:]])
    later.set_runs([plotted_run(c), plotted_run(b)])
    later.set_runs([plotted_run(c), plotted_run(a), plotted_run(b)])
    assert later.colours == seen
    curves = later.loss.curves
    assert curves[(b, "loss")].smooth.opts["pen"].color().name() == own[b]

    # two runs wanting one colour: the one shown first has it, the other the next free one, every time
    for panel in (first, later):
        panel.set_runs([plotted_run(a), plotted_run(clash)])
        assert panel.colours[a] == own[a] and panel.colours[clash] != own[a]
    assert first.colours == later.colours
    later.set_runs([plotted_run(a), plotted_run(clash), plotted_run(b)])  # while it stays shown it keeps the colour it has
    assert later.colours[clash] == first.colours[clash]
    later.set_runs([plotted_run(b)])
    later.set_runs([plotted_run(clash)])  # shown again later: its own colour, in this session as in the next
    assert later.colours[clash] == own[a]
