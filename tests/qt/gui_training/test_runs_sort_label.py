"""The Runs tab for many runs: sorted columns that keep the selection, and a label per run.

The table could not be sorted (the selection was read by row number against the listing's order,
so a sorted table acted on other runs), and runs were told apart only by their folders'
timestamps, elided in the legend to "coupling…6-215134".
"""
from __future__ import annotations

import json
from pathlib import Path

from PySide6.QtCore import QItemSelectionModel, Qt
from PySide6.QtWidgets import QLineEdit

from revstudio.qt.plots.metric_plot import Channel, MetricPlot
from revstudio.qt.plots.rows import RunData
from revstudio.qt.runs.panel import RunsPanel
from revstudio.qt.runs.run_table import COLUMNS

LOSS, LABEL = COLUMNS.index("loss"), COLUMNS.index("label")


def _run(root: Path, name: str, loss: float, lr: float = 0.001) -> Path:
    path = root / name
    path.mkdir(parents=True)
    (path / "status.json").write_text(json.dumps({"status": "finished", "step": 40, "total_steps": 40,
                                                  "metrics": {"loss": loss}, "started": "2026-12-06T14:00:00"}))
    (path / "config.json").write_text(json.dumps({"mode": "reversible", "lr": lr, "batch_size": 8}))
    return path


def _panel(qtbot, root: Path) -> RunsPanel:
    panel = RunsPanel()
    qtbot.addWidget(panel)
    panel.set_root(root, "coupling")
    return panel


def _row_of(panel: RunsPanel, path: Path) -> int:
    return next(r for r in range(panel.table.rowCount()) if panel.table.item(r, 0).text() == path.name)


def test_a_sorted_table_acts_on_the_runs_selected(qtbot, tmp_path):
    runs = [_run(tmp_path, f"coupling-20261206-14{i}000", loss) for i, loss in enumerate((0.3, 0.9, 0.1))]
    panel = _panel(qtbot, tmp_path)
    assert panel.table.isSortingEnabled()
    panel.table.sortByColumn(LOSS, Qt.SortOrder.AscendingOrder)
    assert [panel.table.item(r, LOSS).text() for r in range(3)] == ["0.1", "0.3", "0.9"]
    panel.table.selectRow(0)  # the lowest loss
    assert panel.selected_paths() == [runs[2]]
    asked = []
    panel.actionRequested.connect(lambda name, paths: asked.append((name, paths)))
    panel.buttons["open"].click()
    assert asked == [("open", [runs[2]])]
    # a live run's refresh (its folder changed) keeps the same run selected, wherever it sorts to
    (runs[2] / "status.json").write_text(json.dumps({"status": "finished", "step": 40, "metrics": {"loss": 2.0}}))
    panel.reload()
    assert panel.selected_paths() == [runs[2]] and _row_of(panel, runs[2]) == 2
    assert panel.table.selectionModel().isRowSelected(2)


def test_a_multiple_selection_keeps_its_order_and_so_its_colours_when_sorted_again(qtbot, tmp_path):
    runs = [_run(tmp_path, f"coupling-20261206-14{i}000", loss) for i, loss in enumerate((0.3, 0.9, 0.1))]
    panel = _panel(qtbot, tmp_path)
    panel.select_paths([runs[1], runs[2]])
    before = panel.selected_paths()
    assert before == [runs[2], runs[1]]  # the listing's order: newest first
    panel.table.sortByColumn(LOSS, Qt.SortOrder.AscendingOrder)  # rows 0.1, 0.3, 0.9
    assert panel.selected_paths() == before
    panel.table.sortByColumn(LOSS, Qt.SortOrder.DescendingOrder)
    assert panel.selected_paths() == before


def test_the_sort_is_remembered(qtbot, tmp_path):
    _run(tmp_path, "coupling-20261206-140000", 0.3)
    first = _panel(qtbot, tmp_path)
    first.table.horizontalHeader().setSortIndicator(LOSS, Qt.SortOrder.DescendingOrder)
    second = _panel(qtbot, tmp_path)
    header = second.table.horizontalHeader()
    assert header.sortIndicatorSection() == LOSS and header.sortIndicatorOrder() == Qt.SortOrder.DescendingOrder


def test_a_label_typed_in_the_table_is_kept_beside_the_run_and_shown(qtbot, tmp_path):
    run = _run(tmp_path, "coupling-20261206-215134", 0.3)
    status = (run / "status.json").read_text()
    panel = _panel(qtbot, tmp_path)
    changed = []
    panel.labelChanged.connect(changed.append)
    item = panel.table.item(0, LABEL)
    panel.table.setCurrentItem(item)
    qtbot.keyClick(panel.table, Qt.Key.Key_F2)
    assert panel.table.state() == panel.table.State.EditingState  # F2 opens the label for typing
    editor = panel.table.viewport().findChild(QLineEdit)
    editor.setText("lr 0.01, no norm")
    qtbot.keyClick(editor, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: (run / "label.json").exists())  # (the delegate commits on the next turn)
    assert json.loads((run / "label.json").read_text()) == {"label": "lr 0.01, no norm"}
    assert (run / "status.json").read_text() == status and run.exists()  # the worker's file, the folder: as they were
    assert changed == [run] and panel.entry(run).label == "lr 0.01, no norm"
    assert panel.table.item(0, LABEL).text() == "lr 0.01, no norm"
    panel.table.selectRow(0)
    assert "(lr 0.01, no norm)" in panel.detail.toPlainText().splitlines()[0]
    # other cells stay read-only
    panel.table.setCurrentItem(panel.table.item(0, LOSS))
    qtbot.keyClick(panel.table, Qt.Key.Key_F2)
    assert panel.table.state() != panel.table.State.EditingState
    # an empty label removes the file
    panel.table.item(0, LABEL).setText("")
    assert not (run / "label.json").exists() and panel.entry(run).label is None


def test_the_legend_names_a_labelled_run_by_its_label(qtbot):
    runs = []
    for name, label in (("coupling-20261206-215134", "baseline"), ("coupling-20261206-220000", None)):
        run = RunData(name)
        run.label = label
        for step in (1, 2):
            run.feed({"kind": "step", "step": step, "epoch": step, "time": step, "loss": 1.0 / step})
        runs.append(run)
    plot = MetricPlot("Loss", [Channel("loss", "loss")])
    qtbot.addWidget(plot)
    plot.refresh([(runs[0], "#4a90d9"), (runs[1], "#e15759")], "step", 0.0)
    names = {c.smooth.name() for c in plot.curves.values()}
    assert names == {"baseline", "coupling-20261206-220000"}
    runs[1].label = "lr 0.01"  # labelled while shown: the legend follows
    plot.refresh([(runs[0], "#4a90d9"), (runs[1], "#e15759")], "step", 0.0)
    assert {c.smooth.name() for c in plot.curves.values()} == {"baseline", "lr 0.01"}


def test_a_label_the_disk_cannot_take_says_so_in_the_apps_words(qtbot, tmp_path, monkeypatch):
    import errno

    from revstudio.core import tempfiles

    def full(*_a, **_k):
        raise OSError(errno.ENOSPC, "No space left on device")

    run = _run(tmp_path, "coupling-20261206-215134", 0.3)
    panel = _panel(qtbot, tmp_path)
    panel.edit_label(run)  # (the context menu's Edit Label…)
    assert panel.table.state() == panel.table.State.EditingState
    panel.table.closePersistentEditor(panel.table.item(0, LABEL))
    monkeypatch.setattr(tempfiles, "write_atomic", full)
    panel.table.item(0, LABEL).setText("baseline")
    text = panel.detail.toPlainText()
    assert "not saved" in text and "No space left on device" in text and "free some space" in text, text
    assert "--out" not in text and not (run / "label.json").exists()
    panel.reload()
    assert panel.table.item(0, LABEL).text() == ""


def test_in_the_window_f2_edits_the_label_and_the_legend_follows(qtbot, train_window):
    window = train_window()
    root = Path(window.document.path).parent / "runs"
    run, other = _run(root, "coupling-20261206-215134", 0.3), _run(root, "coupling-20261206-220000", 0.2)
    rows = [{"kind": "step", "step": s, "epoch": s, "time": s, "loss": 1.0 / s} for s in (1, 2, 3)]
    for path in (run, other):
        (path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    window.training.show_tab("Runs")
    panel = window.training.runs_panel
    panel.reload()
    panel.select_paths([run, other])  # overlaid: the legend names each run
    plots = window.training.plots
    window.training._refresh_plots()
    panel.table.setFocus()
    cell = panel.table.model().index(_row_of(panel, run), LABEL)
    panel.table.selectionModel().setCurrentIndex(cell, QItemSelectionModel.SelectionFlag.NoUpdate)  # both stay selected
    qtbot.keyClick(panel.table, Qt.Key.Key_F2)  # not the canvas's Rename Node
    assert panel.table.state() == panel.table.State.EditingState
    editor = panel.table.viewport().findChild(QLineEdit)
    editor.setText("baseline")
    qtbot.keyClick(editor, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: (run / "label.json").exists())
    assert panel.selected_paths() == [other, run]
    plots.refresh(force=True)
    assert {c.smooth.name() for c in plots.loss.curves.values()} == {"baseline", other.name}


def test_the_duration_column_of_a_resumed_run_leaves_out_the_pause(qtbot, tmp_path):
    """A resume reset ``started``, so the tab counted only the last segment; one that kept it would have
    counted the days between the stop and the resume. It is the sum of the segments trained."""
    path = tmp_path / "coupling-20261206-140000"
    path.mkdir()
    (path / "status.json").write_text(json.dumps({
        "status": "finished", "step": 40, "started": "2026-12-01T10:00:00+00:00",  # 2 min 30 s, then
        "resumed": ["2026-12-06T09:00:00+00:00"], "trained_s": 150,  # 5 days' pause, then 10 min
        "ended": "2026-12-06T09:10:00+00:00"}))
    panel = _panel(qtbot, tmp_path)
    assert panel.table.item(0, COLUMNS.index("duration")).text() == "12 min 30 s"
    assert panel.table.item(0, COLUMNS.index("started")).text() == "2026-12-01 10:00:00"
