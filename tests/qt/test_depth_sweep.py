"""The Memory tab's Memory vs Depth: a child process measures each depth, the plot draws it."""
from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt

from revstudio.core.project import load
from revstudio.qt.document import Document
from revstudio.qt.memory_panel import MemoryPanel

EXAMPLES = Path(__file__).resolve().parents[2] / "resources" / "examples"


def _panel(qtbot, name: str = "revnet_coupling", graph=None) -> MemoryPanel:  # type: ignore[no-untyped-def]
    doc = Document(graph if graph is not None else load(EXAMPLES / f"{name}.revs"))
    doc.current_report()
    panel = MemoryPanel(doc)
    qtbot.addWidget(panel)
    return panel


def _lines(sweep) -> list:  # type: ignore[no-untyped-def]
    return sweep.plot.getPlotItem().listDataItems()


def test_memory_vs_depth_runs_a_child_and_draws_peak_against_depth(qtbot) -> None:  # type: ignore[no-untyped-def]
    panel = _panel(qtbot)
    panel.batch.setValue(2)
    sweep = panel.depth_sweep
    sweep.depths.setText("1, 3")
    assert sweep.plot.isHidden() and sweep.node.isHidden()  # no sweep yet; one Repeat: nothing to choose
    with qtbot.waitSignal(sweep.finished, timeout=240_000):
        sweep.run()
        assert sweep.running and not sweep.button.isEnabled()  # the GUI did not wait
        assert panel.cancel_button.isEnabled()
    assert sweep.message == "", sweep.message
    data = sweep.result
    assert data is not None and data["depths"] == [1, 3] and data["node"] == "blocks" and data["batch"] == 2
    assert sweep.button.isEnabled() and not panel.cancel_button.isEnabled() and not sweep.plot.isHidden()
    # the plot holds the child's series: measured solid, estimate dashed, per mode
    items = _lines(sweep)
    solid = [i for i in items if i.opts["pen"].style() == Qt.PenStyle.SolidLine]
    dashed = [i for i in items if i.opts["pen"].style() == Qt.PenStyle.DashLine]
    assert len(solid) == 3 and len(dashed) == 3
    for mode in ("standard", "checkpoint", "reversible"):
        peaks = [float(r["modes"][mode]["peak_bytes"]) for r in data["rows"]]
        assert sweep.curves[f"{mode} measured"] == ([1.0, 3.0], peaks)
        assert any(list(i.yData) == peaks and list(i.xData) == [1.0, 3.0] for i in solid)
        est = [float(r["modes"][mode]["estimate_peak_bytes"]) for r in data["rows"]]
        assert any(list(i.yData) == est for i in dashed)
    legend = [label.text for _sample, label in sweep.plot.getPlotItem().legend.items]
    assert any(t.startswith("standard +") and t.endswith("/block") for t in legend), legend
    assert "estimate (dashed)" in legend
    assert sweep.plot.getPlotItem().getAxis("bottom").labelText == "copies of blocks (times)"
    assert sweep.plot.getPlotItem().getAxis("bottom")._tickLevels == [[(1.0, "1"), (3.0, "3")]]
    assert "growth per added block: standard +" in sweep.status.text()
    # with nothing measured yet the sweep takes the bar chart's room; a measurement brings the chart back
    assert panel.chart.isHidden() and panel.table.isHidden()
    mode = {"peak_bytes": 200_000, "kept_bytes": 100_000, "seconds": 0.01}
    panel._done({"batch": 2, "device": "cpu", "measured_with": "live tensor accounting",
                 "modes": {"standard": mode}, "estimate": {}}, "")
    assert not panel.chart.isHidden() and not panel.table.isHidden() and not sweep.isHidden()


def test_no_repeat_or_bad_depths_are_said_without_starting_a_child(qtbot) -> None:  # type: ignore[no-untyped-def]
    panel = _panel(qtbot, "revnet_wired")
    sweep = panel.depth_sweep
    sweep.run()
    assert not sweep.running
    assert sweep.status.text().startswith("not measured: the project has no Repeat node")
    assert "Edit > Repeat This Group" in sweep.status.text()
    panel = _panel(qtbot)
    sweep = panel.depth_sweep
    sweep.depths.setText("1,many")
    sweep.run()
    assert not sweep.running and "depth 'many' is not a whole number" in sweep.status.text()


def test_with_two_repeats_the_chosen_one_is_swept_and_cancel_stops_it(qtbot) -> None:  # type: ignore[no-untyped-def]
    graph = load(EXAMPLES / "revnet_coupling.revs")
    graph.add_node("Repeat", "more", {"group": graph.nodes["blocks"].params["group"], "times": 1})
    graph.remove_edge(graph.edges_from("blocks", "out")[0])
    graph.connect("blocks.out", "more.in")
    graph.connect("more.out", "pool.in")
    panel = _panel(qtbot, graph=graph)
    sweep = panel.depth_sweep
    assert [sweep.node.itemText(i) for i in range(sweep.node.count())] == ["blocks", "more"]
    assert not sweep.node.isHidden()
    sweep.node.setCurrentText("more")
    with qtbot.waitSignal(sweep.finished, timeout=60_000):
        sweep.run()
        args = sweep.child.process.arguments()
        assert args[args.index("--depth-node") + 1] == "more" and args[args.index("--depth") + 1] == "1,2,4,8"
        panel.cancel()
    assert sweep.result is None and sweep.message.startswith("depth sweep stopped")
    assert sweep.status.text() == sweep.message and sweep.button.isEnabled()


def test_a_sweep_the_child_refuses_is_said_in_its_words(qtbot) -> None:  # type: ignore[no-untyped-def]
    """fp16 needs CUDA: the child refuses it, and the tab says why, not an exit code or a traceback."""
    panel = _panel(qtbot)
    panel.precision.setCurrentText("fp16")
    sweep = panel.depth_sweep
    with qtbot.waitSignal(sweep.finished, timeout=120_000):
        sweep.run()
    assert sweep.result is None and not sweep.plot.isVisible()
    assert sweep.status.text().startswith("depth sweep failed: --precision fp16 needs a CUDA device"), \
        sweep.status.text()
    assert "Traceback" not in sweep.status.text() and sweep.button.isEnabled()


def test_the_plot_follows_a_theme_switch_made_after_it_was_drawn(qtbot, qapp) -> None:  # type: ignore[no-untyped-def]
    """Switched to the light theme, the sweep's plot stayed dark under light-theme axis words."""
    from revstudio.qt import theme
    from revstudio.qt.plots.plot_theme import restyle_all

    panel = _panel(qtbot)
    sweep = panel.depth_sweep
    row = {mode: {"peak_bytes": 1000 * k, "estimate_peak_bytes": 1000 * k}
           for k, mode in enumerate(("standard", "checkpoint", "reversible"), 1)}
    theme.apply_theme(qapp, "dark")
    try:
        sweep.draw({"node": "blocks", "batch": 2, "device": "cpu", "rows": [{"depth": 1, "modes": row},
                                                                           {"depth": 2, "modes": row}]})
        sweep.plot.resize(300, 200)
        assert sweep.plot.grab().toImage().pixelColor(150, 4).name() == theme.colors().window
        theme.apply_theme(qapp, "light")
        restyle_all()
        assert sweep.plot.grab().toImage().pixelColor(150, 4).name() == theme.colors().window == "#f4f5f8"
    finally:
        theme.apply_theme(qapp, "dark")
