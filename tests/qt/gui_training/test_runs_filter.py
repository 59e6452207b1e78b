"""The Runs tab's filter box: with hundreds of runs, type words and see only the matching ones.

The tab listed every run with no way to narrow it (a user with 300 runs scrolled for the failed ones).
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from revstudio.qt.runs.panel import RunsPanel
from revstudio.training.runs import write_json


def _run(root: Path, name: str, status: str = "finished", data: str = "digits.npz", label: str | None = None) -> Path:
    path = root / name
    path.mkdir(parents=True)
    write_json(str(path / "status.json"), {"status": status, "step": 10, "total_steps": 10, "pid": os.getpid(),
                                           "metrics": {"loss": 0.5}, "started": f"2026-12-06T14:00:{name[-2:]}"})
    (path / "config.json").write_text(json.dumps({"mode": "reversible", "lr": 0.001, "batch_size": 8, "data": data}))
    if label is not None:
        (path / "label.json").write_text(json.dumps({"label": label}))
    return path


def _shown(panel: RunsPanel) -> list[str]:
    table = panel.table
    return sorted(table.item(r, 0).text() for r in range(table.rowCount()) if not table.isRowHidden(r))


def _folder(root: Path) -> list[Path]:
    return [_run(root, "net-20261206-140001"), _run(root, "net-20261206-140002", "failed", label="Wide LR"),
            _run(root, "net-20261206-140003", "stopped", data="cifar.npz"),
            _run(root, "net-20261206-140004", "failed", data="cifar.npz")]


def _panel(qtbot, root: Path) -> RunsPanel:
    panel = RunsPanel()
    qtbot.addWidget(panel)
    panel.set_root(root, "net")
    return panel


def test_typing_words_shows_only_the_matching_runs_and_the_count(qtbot, tmp_path) -> None:
    runs = _folder(tmp_path / "runs")
    panel = _panel(qtbot, tmp_path / "runs")
    assert panel.filter.count.text() == "4 runs" and len(_shown(panel)) == 4
    qtbot.keyClicks(panel.filter.edit, "FAIL")
    assert _shown(panel) == [runs[1].name, runs[3].name]
    assert panel.filter.count.text() == "2 of 4 runs"
    panel.filter.edit.setText("cifar fail")  # every word: the data of one column, the status of another
    assert _shown(panel) == [runs[3].name]
    panel.filter.edit.setText("status:stopped,finished")
    assert _shown(panel) == [runs[0].name, runs[2].name]
    panel.filter.edit.setText("label:wide")
    assert _shown(panel) == [runs[1].name] and panel.filter.count.text() == "1 of 4 runs"
    panel.filter.edit.setText("nothing-of-the-kind")
    assert _shown(panel) == [] and panel.filter.count.text() == "0 of 4 runs"


def test_a_selected_run_the_filter_hides_is_deselected_and_not_acted_on(qtbot, tmp_path) -> None:
    runs = _folder(tmp_path / "runs")
    panel = _panel(qtbot, tmp_path / "runs")
    told: list[list[Path]] = []
    panel.selectionChanged.connect(told.append)
    panel.select_paths([runs[0], runs[1]])
    assert set(panel.selected_paths()) == {runs[0], runs[1]}
    told.clear()
    panel.filter.edit.setText("failed")
    assert panel.selected_paths() == [runs[1]] and told[-1] == [runs[1]]
    assert panel.detail.toPlainText().startswith(f"{runs[1].name}: failed")  # (one run's detail, not a comparison)
    asked = []
    panel.actionRequested.connect(lambda name, paths: asked.append((name, paths)))
    panel.table.selectAll()  # Ctrl+A selects the rows shown: Delete… asks for those alone
    panel.buttons["delete"].click()
    assert [(name, set(paths)) for name, paths in asked] == [("delete", {runs[1], runs[3]})]
    panel.filter.edit.clear()  # the hidden run does not come back selected
    assert len(_shown(panel)) == 4 and runs[0] not in panel.selected_paths()


def test_the_filter_survives_a_refresh_that_brings_new_runs(qtbot, tmp_path) -> None:
    root = tmp_path / "runs"
    runs = _folder(root)
    panel = _panel(qtbot, root)
    panel.filter.edit.setText("run")  # (status running: no run yet)
    assert _shown(panel) == []
    new = _run(root, "net-20261206-140009", "running")  # a run started from a terminal appears
    panel.reload()
    assert _shown(panel) == [new.name] and panel.filter.count.text() == "1 of 5 runs"
    assert panel.filter.edit.text() == "run" and runs[0].name not in _shown(panel)
    panel.select_paths([new])
    write_json(str(new / "status.json"), {"status": "finished", "step": 10, "total_steps": 10,
                                          "metrics": {"loss": 0.4}, "started": "2026-12-06T14:00:09"})
    panel.refresh_running()  # its status changed: the filter's words no longer match it
    assert _shown(panel) == [] and panel.selected_paths() == []


def test_ctrl_f_in_the_runs_tab_focuses_the_box_and_esc_empties_it(qtbot, make_window, tmp_path) -> None:
    window = make_window()
    panel = window.training.runs_panel
    _folder(tmp_path / "runs")
    panel.set_root(tmp_path / "runs", "net")
    window.bottom.setCurrentWidget(panel)
    found = []
    window.actions_by_name["find"].triggered.connect(lambda *_: found.append(1))
    panel.table.setFocus()
    qtbot.waitUntil(lambda: QApplication.focusWidget() is panel.table)
    qtbot.keyClick(panel.table, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    assert QApplication.focusWidget() is panel.filter.edit
    assert not found  # (the canvas's Find Node, Ctrl+F elsewhere, was not opened)
    qtbot.keyClicks(panel.filter.edit, "stopped")
    assert len(_shown(panel)) == 1
    qtbot.keyClick(panel.filter.edit, Qt.Key.Key_Escape)
    assert panel.filter.edit.text() == "" and len(_shown(panel)) == 4
    window.current_view().setFocus()
    qtbot.waitUntil(lambda: QApplication.focusWidget() is window.current_view())
    qtbot.keyClick(window.current_view(), Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    assert found and QApplication.focusWidget() is not panel.filter.edit  # (outside the tab: Find Node still)


def _ink(panel: RunsPanel, background: str) -> tuple[int, int, int]:
    """The colour of the table viewport's pixel farthest from ``background``: a glyph's fully covered pixel
    of the note's text (its edges are blends of the two)."""
    from PySide6.QtGui import QColor

    image, back = panel.table.viewport().grab().toImage(), QColor(background)
    colours = {(c.red(), c.green(), c.blue()) for y in range(image.height()) for x in range(image.width())
               if (c := image.pixelColor(x, y)) is not None}
    return max(colours, key=lambda c: sum(abs(v - w) for v, w in zip(c, (back.red(), back.green(), back.blue()))))


def _near(rgb: tuple[int, int, int], colour: str) -> bool:
    from PySide6.QtGui import QColor

    want = QColor(colour)
    return max(abs(v - w) for v, w in zip(rgb, (want.red(), want.green(), want.blue()))) <= 8


def test_words_that_match_no_run_say_so_in_the_table_and_esc_clears_them(qtbot, qapp, tmp_path) -> None:
    """A filter matching nothing left an empty table beside "0 of 4 runs", with nothing there saying why."""
    from revstudio.qt import theme

    _folder(tmp_path / "runs")
    panel = _panel(qtbot, tmp_path / "runs")
    panel.resize(900, 400)
    panel.show()
    qtbot.waitExposed(panel)
    note = panel.filter.note
    assert not note.isVisible()
    panel.filter.edit.setText("  nothing-of-the-kind   cifar ")
    assert note.isVisible() and note.parentWidget() is panel.table.viewport()
    assert note.text() == "No run matches “nothing-of-the-kind cifar”. Esc clears the filter and shows all 4 runs."
    assert note.geometry() == panel.table.viewport().rect()  # (centred in the table's middle, words wrapped)
    try:
        for name in ("light", "dark"):  # drawn in the muted colour of the theme switched to
            theme.apply_theme(qapp, name)
            qtbot.waitUntil(lambda n=name: _near(_ink(panel, theme.colors(n).base), theme.colors(n).muted))
    finally:
        theme.apply_theme(qapp, "dark")
    panel.resize(500, 300)  # it follows the viewport's size
    qtbot.waitUntil(lambda: note.geometry() == panel.table.viewport().rect())
    panel.filter.edit.setText("cifar")  # rows match again: the note is gone
    assert not note.isVisible() and _shown(panel)
    panel.filter.edit.setText("zzz")
    panel.table.setFocus()
    qtbot.keyClick(panel.table, Qt.Key.Key_Escape)  # Esc clears the words from the table too, as the note says
    assert panel.filter.edit.text() == "" and not note.isVisible() and len(_shown(panel)) == 4


def test_a_project_with_no_run_says_how_to_make_one(qtbot, tmp_path) -> None:
    panel = _panel(qtbot, tmp_path / "runs")
    note = panel.filter.note
    assert note.isVisibleTo(panel) and "Train (F5) starts one" in note.text() and "revstudio train" in note.text()
    _run(tmp_path / "runs", "net-20261206-140001")
    panel.reload()
    assert not note.isVisibleTo(panel) and panel.filter.count.text() == "1 run"
