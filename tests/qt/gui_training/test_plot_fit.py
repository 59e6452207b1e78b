"""The Plots tab fits its window: legends lie whole inside their plots, and the grid needs no
horizontal scroll at 1280 px (fewer columns in a narrower window), in both themes."""
from __future__ import annotations

import pytest
from PySide6.QtWidgets import QScrollArea

from revstudio.qt.plots.rows import RunData


def _run(regions: list[str]) -> RunData:
    """What a 150-step digits_revnet run logs (its one region is "region-block0_split")."""
    run = RunData("digits_revnet-20261206-170800")
    rows = [{"kind": "event", "event": "started", "time": 0.0, "mode": "reversible", "regions": regions,
             "config": {"precision": "fp32", "gradcheck_every": 50, "steps": 150}, "total_steps": 150,
             "estimate_bytes": 1332616, "standard_estimate_bytes": 1782312}]
    for step in range(10, 151, 10):
        rows.append({"kind": "step", "step": step, "epoch": step / 25, "time": step / 40, "loss": 2.3 / step * 10,
                     "accuracy": 1 - 1 / step, "samples_per_s": 2900.0 + step, "peak_bytes": 1_300_000 + step})
        if step % 50 == 0:
            rows.append({"kind": "val", "step": step, "epoch": step / 25, "time": step / 40, "val_loss": 0.1,
                         "val_accuracy": 0.97})
            rows.append({"kind": "gradcheck", "step": step, "epoch": step / 25, "time": step / 40,
                         "regions": [{"region": r, "grad_rel_error": 2.5e-8, "inversion_error": 0.0}
                                     for r in regions]})
    for row in rows:
        run.feed(row)
    return run


def _plots_window(make_window, qtbot, theme: str, width: int, regions: list[str]):
    window = make_window()
    window.set_theme(theme)
    window.resize(width, 800)
    qtbot.wait(400)  # the docks settle at their shares of this width
    window.training.show_tab("Plots")
    panel = window.training.plots
    panel.set_runs([_run(regions)])
    qtbot.wait(200)
    panel.refresh(force=True)
    qtbot.wait(50)
    return window, panel


def _outside(plot) -> list[str]:
    """The legend entries of ``plot`` that do not lie whole inside its drawing area."""
    item = plot.plot.getPlotItem()
    legend = item.legend
    area = item.getViewBox().sceneBoundingRect().adjusted(-1, -1, 1, 1)
    box = legend.sceneBoundingRect()
    if not legend.items or area.contains(box):
        return []
    return [f"{label.text!r} at {box.left():.0f}..{box.right():.0f} x {box.top():.0f}..{box.bottom():.0f}, "
            f"plot {area.left():.0f}..{area.right():.0f} x {area.top():.0f}..{area.bottom():.0f}"
            for _sample, label in legend.items]


@pytest.mark.parametrize("theme", ["dark", "light"])
@pytest.mark.parametrize("regions", [["region-block0_split"], ["region-block0_split", "region-block1_split"]])
def test_every_legend_lies_whole_inside_its_plot_at_1280(make_window, qtbot, theme, regions):
    # After a 150-step digits_revnet run the gradient check's entries ("grad disagreement
    # region-block0_split") were wider than its plot: their first letters were cut at its left edge.
    window, panel = _plots_window(make_window, qtbot, theme, 1280, regions)
    assert panel.gradcheck.curves, "the gradient check has curves"
    for plot in panel.plots:
        assert not _outside(plot), (plot.title_text, _outside(plot))
    # each region is still told apart
    legend = panel.gradcheck.plot.getPlotItem().legend
    assert legend.isVisible()  # whole, not hidden to pass
    texts = [label.text for _s, label in legend.items]
    assert len(set(texts)) == len(texts) == 2 * len(regions), texts
@pytest.mark.parametrize("width", [1280, 900])
def test_the_plots_need_no_horizontal_scroll(make_window, qtbot, width):
    # At 1280 px the Plots tab's third column ran past its edge: it scrolled sideways.
    window, panel = _plots_window(make_window, qtbot, "dark", width, ["region-block0_split"])
    area = window.training.plots_tab.findChild(QScrollArea, "plotsScroll")
    assert area.horizontalScrollBar().maximum() == 0, (width, area.viewport().width(), panel.minimumSizeHint())
    for plot in panel.plots:  # no plot squeezed under what its tools and axes need
        assert plot.width() >= plot.minimumSizeHint().width(), (plot.title_text, plot.width())
        assert not _outside(plot), (plot.title_text, _outside(plot))
    if width == 1280:
        assert panel.columns == 3


def test_overlaid_runs_are_each_named_once_in_a_legend_that_fits(make_window, qtbot):
    # Overlaid, every curve had its own entry ("run: loss", "run: val loss"): three runs made six
    # long entries, more than a plot a third of a 1280 px window could hold.
    window, panel = _plots_window(make_window, qtbot, "dark", 1280, ["region-block0_split"])
    runs = [_run(["region-block0_split"]) for _ in range(3)]
    for i, run in enumerate(runs):
        run.name = f"digits_revnet-20261206-17080{i}"
    panel.set_runs(runs)
    qtbot.wait(100)
    panel.refresh(force=True)
    for plot in panel.plots:
        legend = plot.plot.getPlotItem().legend
        texts = [label.text for _s, label in legend.items]
        # each run once, then (where a plot draws solid and dashed curves) the key to the two styles
        key = [c.short or c.label for c in plot.channels] if plot.keys.items else []
        names = [sample.item.name() for sample, _l in legend.items]  # (the words shown may be shortened)
        assert len(set(texts[:3])) == 3 and names[3:] == key, (plot.title_text, texts, names)
        assert legend.isVisible() and not _outside(plot), (plot.title_text, texts, _outside(plot))


@pytest.mark.parametrize("theme", ["dark", "light"])
def test_no_legend_lies_over_the_memory_plots_line_labels(make_window, qtbot, theme):
    # The memory plot's one-entry legend ("measured peak") lay over the label of its top reference
    # line: "est. standard 1.7 MiB" read "est. s". A lone curve is named by its y axis ("peak"; the
    # estimates' lines by their labels) instead.
    window, panel = _plots_window(make_window, qtbot, theme, 1280, ["region-block0_split"])
    legend = panel.memory.plot.getPlotItem().legend
    labels = [line.label for line in panel._memory_refs if line.isVisible()]
    assert labels, "the run has estimates: their lines are drawn"
    for label in labels:
        covered = legend.isVisible() and legend.sceneBoundingRect().intersects(label.sceneBoundingRect())
        assert not covered, (label.toPlainText(), legend.sceneBoundingRect(), label.sceneBoundingRect())
    assert panel.memory.plot.getAxis("left").labelText == "peak"
