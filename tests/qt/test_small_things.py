"""Small things: palette rows keep their height across theme switches; the inspector's
warning is never cut off above the History panel."""
from __future__ import annotations

import pytest

from revstudio.core.graph import Graph


def _row(window) -> int:
    tree = window.node_palette.tree
    return tree.visualItemRect(window.node_palette.item_for("Conv")).height()


def test_palette_rows_keep_their_height_after_switching_theme_and_back(make_window, settle):
    window = make_window()
    settle()
    before = _row(window)
    window.toggle_theme()
    settle()
    window.toggle_theme()
    settle()
    assert _row(window) == before
    assert before <= 20


def test_the_inspectors_warning_is_not_clipped(make_window, settle, qtbot):
    g = Graph("warn")
    g.add_node("Input", "x", {"shape": [4, 8, 8]}, (0, 0))
    g.add_node("Conv", "c", {"out_channels": 4, "kernel_size": 3, "padding": "same"}, (220, 0))  # read by nothing
    g.connect("x.out", "c.in")
    window = make_window(g)
    window.inspector_dock.resize(260, window.inspector_dock.height())
    window.current_view().select_nodes(["c"])
    settle()
    qtbot.wait(50)
    facts = window.inspector.facts
    assert "warning" in facts.text()
    # the label is as tall as its wrapped text needs at its width: nothing is cut
    assert facts.height() >= facts.heightForWidth(facts.width()) - 1
    body = window.inspector._body
    assert facts.geometry().bottom() <= body.height()


def test_the_no_problems_line_wraps_in_a_small_window(make_window, settle, qtbot):
    """At 800x600 the Output panel is narrower than the line, which was cut at both ends."""
    window = make_window()
    window.resize(800, 600)
    qtbot.wait(50)
    settle()
    empty = window.diagnostics.empty
    assert empty.isVisible()
    assert empty.minimumSizeHint().width() <= empty.width()
    assert empty.height() >= empty.heightForWidth(empty.width()) - 1


def test_a_disabled_button_or_field_looks_disabled_in_both_themes(make_window, settle):
    """The stylesheet gave buttons and fields one text colour, so a disabled Cancel (Memory tab)
    or a disabled OK (Run Settings with a bad value, drawn in the accent) looked clickable."""
    from PySide6.QtWidgets import QHBoxLayout, QLineEdit, QPushButton, QWidget

    window = make_window()
    for name in ("dark", "light"):
        window.set_theme(name)
        host = QWidget(window)
        row = QHBoxLayout(host)
        pairs = []
        for make in (lambda: QPushButton("Cancel"), lambda: _default_button(), lambda: QLineEdit("0.01")):
            on, off = make(), make()
            off.setEnabled(False)
            row.addWidget(on)
            row.addWidget(off)
            pairs.append((on, off))
        host.resize(600, 40)
        host.show()
        settle()
        for on, off in pairs:
            off.resize(on.size())
            assert on.grab().toImage() != off.grab().toImage(), (name, type(on).__name__)
        host.deleteLater()
    window.set_theme("dark")


def _default_button():
    from PySide6.QtWidgets import QPushButton

    button = QPushButton("OK")
    button.setDefault(True)
    return button


def test_tab_is_described_as_it_behaves_in_the_docs_and_the_shortcuts_list(make_window, revnet, dialogs, settle,
                                                                           monkeypatch):
    # Tab with nothing selected opens quick add; the docs and F1 said only that it opens a group
    from pathlib import Path

    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication

    window = make_window(revnet)
    view = window.current_view()
    view.setFocus()
    view.select_nodes([])
    QTest.keyClick(view, Qt.Key.Key_Tab)
    settle()
    popup = QApplication.activePopupWidget()
    assert popup is not None  # quick add, at the pointer
    popup.close()

    docs = (Path(__file__).resolve().parents[2] / "docs" / "editor.md").read_text()
    row = next(line for line in docs.splitlines() if line.startswith("| Tab |"))
    assert "group" in row and "add a node by name" in row and "Shift+A" in row
    said: list[str] = []
    monkeypatch.setattr(dialogs, "info", lambda parent, title, text: said.append(text))
    window.show_shortcuts()
    assert "Tab opens the selected group (with no group node selected it adds a node by name" in said[0]


def test_redo_answers_both_keys_the_docs_name(make_window, revnet, dialogs, settle, qtbot, monkeypatch):
    # editor.md: Ctrl+Shift+Z (Ctrl+Y) redo. Redo had Ctrl+Y twice on X11/offscreen (the platform's
    # first binding plus our own), so Qt found the key ambiguous and neither key redid anything.
    from PySide6.QtGui import QKeySequence
    from PySide6.QtTest import QTest

    window = make_window(revnet)
    window.activateWindow()
    qtbot.waitActive(window)  # window-wide shortcuts fire only in the active window
    view = window.current_view()
    for keys in ("Ctrl+Shift+Z", "Ctrl+Y"):
        view.select_nodes(["f"])
        view.setFocus()
        settle()
        QTest.keySequence(view, QKeySequence("Delete"))
        QTest.keySequence(view, QKeySequence("Ctrl+Z"))
        assert "f" in window.document.graph.nodes
        QTest.keySequence(view, QKeySequence(keys))
        settle()
        assert "f" not in window.document.graph.nodes, f"{keys} did not redo"
        window.document.undo_stack.undo()
    said: list[str] = []
    monkeypatch.setattr(dialogs, "info", lambda parent, title, text: said.append(text))
    window.show_shortcuts()
    assert "Ctrl+Shift+Z" in said[0] and "Ctrl+Y" in said[0]


def test_ctrl_q_quits_where_the_platform_binds_no_quit_key(make_window, revnet, settle, qtbot):
    # Qt's StandardKey.Quit is empty offscreen, on Windows and under some Linux desktops, so the
    # Quit action had no key at all.
    from PySide6.QtGui import QKeySequence
    from PySide6.QtTest import QTest

    window = make_window(revnet)
    window.activateWindow()
    qtbot.waitActive(window)
    assert window.actions_by_name["quit"].shortcut().toString() != ""
    view = window.current_view()
    view.setFocus()
    settle()
    QTest.keySequence(view, QKeySequence("Ctrl+Q"))
    settle()
    assert not window.isVisible()


def test_view_align_menu_distributes_the_selection(make_window, revnet, settle):
    window = make_window(revnet)
    align = next(a.menu() for a in window.menuBar().actions() if a.text() == "&View")
    align = next(a.menu() for a in align.actions() if a.menu() is not None and a.text() == "&Align")
    by_text = {a.text().replace("&", ""): a for a in align.actions()}
    view = window.current_view()
    view.select_nodes(["x", "s", "m", "c"])
    by_text["Distribute Horizontally"].trigger()
    settle()
    xs = sorted(window.document.graph.node(n).pos[0] for n in ("x", "s", "m", "c"))
    steps = [b - a for a, b in zip(xs, xs[1:])]
    assert max(steps) - min(steps) <= 1, steps  # cards of one width: equal steps, to the pixel
    assert window.document.undo_stack.undoText() == "Distribute horizontal"


def test_ctrl_f_finds_a_node_by_id_or_type_and_shows_it(make_window, settle, qtbot):
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    from revstudio.core.generate import revnet_chain

    window = make_window(revnet_chain(3, channels=4, size=8))
    view = window.current_view()
    view.fit_all()
    settle()
    view.setFocus()
    QTest.keyClick(view, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    popup = view.popup
    assert popup is not None and popup.isVisible() and popup.caption.text() == "Find node"
    QTest.keyClicks(popup.search, "b2_g_r")
    assert popup.visible_types() == ["b2_g_relu"]
    QTest.keyClick(popup.search, Qt.Key.Key_Return)
    settle()
    assert view.selected_node_ids() == ["b2_g_relu"]
    item = view.scene().node_items["b2_g_relu"]
    assert view.viewport().rect().contains(view.mapFromScene(item.sceneBoundingRect().center()))
    assert view.zoom() >= 0.6  # zoomed in enough to read its card
    assert window.document.undo_stack.count() == 0  # finding edits nothing
    popup = view.open_find()
    QTest.keyClicks(popup.search, "merge")  # by type, too: no id holds "merge"
    assert popup.visible_types()[:2] == ["b0_add1", "b0_add2"]


def test_zooming_out_stops_where_a_small_graph_still_shows(make_window, revnet, settle, qtbot):
    # Ctrl+- and the wheel went down to 0.002, where a small graph was a dot (Fit may go that far
    # for a graph 100,000 pixels wide, and zooming out then stops where the whole graph fits).
    from revstudio.qt.canvas.view import ZOOM_OUT_FLOOR

    window = make_window(revnet)
    view = window.current_view()
    for _ in range(60):
        view.zoom_out()
    assert view.zoom() >= ZOOM_OUT_FLOOR * 0.999
    from revstudio.core.commands import Move

    graph = window.document.graph
    far = [node.id for node in graph][-1]
    window.document.push(Move(graph, {far: (200_000.0, 0.0)}))
    settle()
    view.fit_all()
    fitted = view.zoom()
    assert fitted < ZOOM_OUT_FLOOR / 10
    for _ in range(10):
        view.zoom_out()
    assert view.zoom() == pytest.approx(fitted, rel=1e-6)  # already below the floor: stays, never zooms in
    view.zoom_in()
    view.zoom_in()
    for _ in range(10):
        view.zoom_out()
    assert fitted * 0.999 <= view.zoom() <= fitted * 1.3  # down to where the whole graph fits


def test_undo_and_redo_buttons_name_their_key_as_the_other_buttons_do(make_window, revnet):
    """Every toolbar button's tooltip ends with its key ("Delete (Del)"); Undo and Redo said only "Undo"."""
    window = make_window(revnet)
    undo, redo = window.actions_by_name["undo"], window.actions_by_name["redo"]
    assert undo.toolTip() == "Undo (Ctrl+Z)" and redo.toolTip() == "Redo (Ctrl+Shift+Z)"
    window.tabs.main_view().select_nodes(["f"])
    window.inspector.editors["out_channels"].set_text("2")
    assert undo.toolTip().startswith("Undo ") and undo.toolTip() != "Undo (Ctrl+Z)"  # names the edit
    assert undo.toolTip().endswith(" (Ctrl+Z)")
    undo.trigger()
    assert redo.toolTip().startswith("Redo ") and redo.toolTip().endswith(" (Ctrl+Shift+Z)")


def test_a_search_that_matches_nothing_says_so_and_enter_adds_nothing(make_window, revnet, settle):
    # Shift+A or Ctrl+F with a mistyped name showed an empty box, and Enter did nothing, silently
    from PySide6.QtCore import QPointF, Qt
    from PySide6.QtTest import QTest

    window = make_window(revnet)
    view = window.current_view()
    popup = view.open_quick_add(QPointF(0, 0))
    assert not popup.nothing.isVisible()
    QTest.keyClicks(popup.search, "convv")
    assert popup.visible_types() == [] and popup.nothing.isVisible()
    assert "No node type matches \u201cconvv\u201d" in popup.nothing.text()
    QTest.keyClick(popup.search, Qt.Key.Key_Return)
    assert popup.isVisible() and window.document.undo_stack.count() == 0  # still there, to correct
    QTest.keyClick(popup.search, Qt.Key.Key_Backspace)
    assert popup.visible_types()[0] == "Conv" and not popup.nothing.isVisible()
    popup.close()
    found = view.open_find()
    QTest.keyClicks(found.search, "nosuchnode")
    assert found.visible_types() == [] and found.nothing.isVisible()
    assert "No node on this canvas matches \u201cnosuchnode\u201d" in found.nothing.text()
    found.close()
