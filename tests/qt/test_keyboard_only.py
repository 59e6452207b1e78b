"""The editor without a mouse: every step of building a network works from the keyboard.

Keys go to whatever has the focus (``QApplication.focusWidget()``), as a person's
keys would; nothing here clicks, drags or calls a slot directly.
"""
from __future__ import annotations

import re
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

K = Qt.Key
CTRL = Qt.KeyboardModifier.ControlModifier


def _keys(qtbot: Any, settle: Any, *steps: Any) -> None:
    """Each step is text to type, a key, or (key, modifiers), sent to the focused widget."""
    for step in steps:
        target = QApplication.focusWidget()
        assert target is not None, f"nothing has the focus before {step!r}"
        if isinstance(step, str):
            qtbot.keyClicks(target, step)
        elif isinstance(step, tuple):
            qtbot.keyClick(target, *step)
        else:
            qtbot.keyClick(target, step)
        settle()


def _add(qtbot: Any, settle: Any, type_name: str) -> None:
    _keys(qtbot, settle, (K.Key_A, Qt.KeyboardModifier.ShiftModifier), type_name, K.Key_Return)


def _select(qtbot: Any, settle: Any, node_id: str) -> None:
    _keys(qtbot, settle, (K.Key_F, CTRL), node_id, K.Key_Return)


def _connect(qtbot: Any, settle: Any, text: str) -> None:
    _keys(qtbot, settle, (K.Key_K, CTRL), text, K.Key_Return)


def test_a_revnet_block_is_wired_with_the_keyboard_alone(make_window: Any, qtbot: Any, settle: Any) -> None:
    window = make_window()
    view = window.current_view()
    view.setFocus()
    settle()
    for type_name in ("Input", "Split", "Conv", "Merge", "Concat", "Output"):
        _add(qtbot, settle, type_name)
        assert QApplication.focusWidget() is view, "after adding, the keys go back to the canvas"
    graph = window.document.graph
    ids = {n.type: n.id for n in graph.nodes.values()}
    assert len(ids) == 6
    x, s, f, m, c, y = (ids[t] for t in ("Input", "Split", "Conv", "Merge", "Concat", "Output"))
    # the Input's shape, typed into the Inspector: F6 goes there, Tab to the field, Shift+F6 back
    _select(qtbot, settle, x)
    _keys(qtbot, settle, K.Key_F6)
    assert QApplication.focusWidget() is window.inspector.title
    _keys(qtbot, settle, K.Key_Tab, "[8, 16, 16]", K.Key_Return, (K.Key_F6, Qt.KeyboardModifier.ShiftModifier))
    assert graph.nodes[x].params["shape"] == [8, 16, 16]
    assert QApplication.focusWidget() is view
    # Tab walks the Conv's fields in the order they are shown: out_channels, kernel_size, stride, padding
    _select(qtbot, settle, f)
    _keys(qtbot, settle, K.Key_F6, K.Key_Tab, "4", K.Key_Tab, K.Key_Tab, K.Key_Tab, "same", K.Key_Return,
          (K.Key_F6, Qt.KeyboardModifier.ShiftModifier))
    assert graph.nodes[f].params == {"out_channels": 4, "padding": "same"}
    for node, words in ((x, f"{s}.in"), (s, f"out0 {m}.in0"), (s, f"out1 {f}.in"), (f, f"{m}.in1"),
                        (m, f"{c}.in0"), (s, f"out1 {c}.in1"), (c, f"{y}.in")):
        _select(qtbot, settle, node)
        _connect(qtbot, settle, words)
    wires = {(str(e.src), str(e.dst)) for e in graph.edges}
    assert wires == {(f"{x}.out", f"{s}.in"), (f"{s}.out0", f"{m}.in0"), (f"{s}.out1", f"{f}.in"),
                     (f"{f}.out", f"{m}.in1"), (f"{m}.out", f"{c}.in0"), (f"{s}.out1", f"{c}.in1"),
                     (f"{c}.out", f"{y}.in")}
    # each wire was one undoable step; the last can be taken back and redone by key
    count = window.document.undo_stack.count()
    _keys(qtbot, settle, (K.Key_Z, CTRL))
    assert len(graph.edges) == 6
    _keys(qtbot, settle, (K.Key_Y, CTRL))
    assert len(graph.edges) == 7 and window.document.undo_stack.count() == count


def test_ctrl_k_disconnects_and_refuses_with_the_reason(make_window: Any, qtbot: Any, settle: Any,
                                                         revnet: Any) -> None:
    window = make_window(revnet)
    view = window.current_view()
    view.setFocus()
    settle()
    _select(qtbot, settle, "f")
    _connect(qtbot, settle, "disconnect s.out1")
    assert ("s.out1", "f.in") not in {(str(e.src), str(e.dst)) for e in revnet.edges}
    # nothing selected: Ctrl+K says what to do instead of doing nothing
    messages: list[str] = []
    view.message.connect(messages.append)
    _keys(qtbot, settle, K.Key_Escape, (K.Key_K, CTRL))
    assert messages and "select a node first" in messages[-1]
    assert QApplication.focusWidget() is view


def test_the_connect_list_is_wide_enough_for_its_longest_line(make_window: Any, qtbot: Any, settle: Any) -> None:
    """In a 1280 px window, "a.out → b.in   (replaces c.out)" lines with the example's long ids
    were cut at the list's right edge (it was a fixed 360 px)."""
    from pathlib import Path

    from revstudio.core.project import load

    window = make_window(load(Path(__file__).resolve().parents[2] / "resources" / "examples" / "revnet_wired.revs"))
    window.resize(1280, 800)
    view = window.current_view()
    view.setFocus()
    settle()
    _select(qtbot, settle, "block0_f_conv1")
    qtbot.keyClick(QApplication.focusWidget(), K.Key_K, CTRL)
    settle()
    popup = view.popup
    widest = max(popup.list.fontMetrics().horizontalAdvance(label) for label in popup.visible_labels())
    assert any("(replaces" in label for label in popup.visible_labels())
    assert popup.list.viewport().width() >= widest
    qtbot.keyClick(QApplication.focusWidget(), K.Key_Escape)


def test_tab_walks_the_inspector_fields_top_to_bottom_one_stop_each(make_window: Any, qtbot: Any, settle: Any,
                                                                     revnet: Any) -> None:
    window = make_window(revnet)
    window.current_view().select_nodes(["f"])
    settle()
    inspector = window.inspector
    inspector.title.setFocus()
    settle()
    seen = []
    for _ in range(len(inspector.editors)):
        _keys(qtbot, settle, K.Key_Tab)
        seen.append(next((n for n, e in inspector.editors.items() if e.isAncestorOf(QApplication.focusWidget())),
                         type(QApplication.focusWidget()).__name__))
    assert seen == list(inspector.editors)  # out_channels, kernel_size, ... as shown, no empty stops


def test_f6_moves_the_focus_from_panel_to_panel_and_shift_f6_back(make_window: Any, qtbot: Any,
                                                                   settle: Any) -> None:
    window = make_window()
    view = window.current_view()
    view.setFocus()
    settle()
    order = [window.inspector.title, window.history, window.bottom.tabBar(), window.node_palette.search, view]
    for expected in order:
        _keys(qtbot, settle, K.Key_F6)
        assert QApplication.focusWidget() is expected
    for expected in reversed(order[:-1]):
        _keys(qtbot, settle, (K.Key_F6, Qt.KeyboardModifier.ShiftModifier))
        assert QApplication.focusWidget() is expected
    window.history_dock.hide()  # a hidden panel is skipped
    assert QApplication.focusWidget() is window.inspector.title
    _keys(qtbot, settle, K.Key_F6)
    assert QApplication.focusWidget() is window.bottom.tabBar()


def test_f1_and_the_docs_list_the_keyboard_paths(make_window: Any, dialogs: Any, monkeypatch: Any) -> None:
    from pathlib import Path

    window = make_window()
    said: list[str] = []
    monkeypatch.setattr(dialogs, "info", lambda parent, title, text: said.append(text))
    window.show_shortcuts()
    for label, key in (("Connect…", "Ctrl+K"), ("Rename Node", "F2"), ("Next Panel", "F6"),
                       ("Previous Panel", "Shift+F6")):
        assert re.search(f"{re.escape(label)}</td><td style='[^']*'><b>{re.escape(key)}</b>", said[0]), label
    docs = (Path(__file__).resolve().parents[2] / "docs" / "editor.md").read_text()
    assert any(line.startswith("| Ctrl+K | connect") for line in docs.splitlines())
    assert any(line.startswith("| F6 / Shift+F6 |") for line in docs.splitlines())


def test_the_canvas_shows_when_it_has_the_keyboard_focus(make_window: Any, qtbot: Any, settle: Any,
                                                         revnet: Any) -> None:
    # Every field showed its focus but the canvas did not: a keyboard user could not tell
    # whether Delete would delete nodes or text.
    window = make_window(revnet)
    view = window.current_view()
    for dark in (True, False):
        view.set_theme(dark)
        frame = view.scene().theme.hover.rgb()
        edge = (1, view.viewport().height() // 2)
        window.inspector.title.setFocus()
        settle()
        assert view.viewport().grab().toImage().pixel(*edge) != frame
        _keys(qtbot, settle, (K.Key_F6, Qt.KeyboardModifier.ShiftModifier))
        assert QApplication.focusWidget() is view
        assert view.viewport().grab().toImage().pixel(*edge) == frame


def test_f2_renames_the_selected_node_in_place(make_window: Any, qtbot: Any, settle: Any, revnet: Any) -> None:
    # Renaming in place needed a double-click on the header.
    window = make_window(revnet)
    view = window.current_view()
    view.setFocus()
    settle()
    _select(qtbot, settle, "f")
    _keys(qtbot, settle, K.Key_F2)
    assert QApplication.focusWidget() is view.rename_field
    _keys(qtbot, settle, "conv_f", K.Key_Return)
    assert "conv_f" in revnet.nodes and "f" not in revnet.nodes
    assert QApplication.focusWidget() is view
    _keys(qtbot, settle, (K.Key_Z, CTRL))
    assert "f" in revnet.nodes


def _spoken(widget: Any) -> tuple[str, str]:
    from PySide6.QtGui import QAccessible

    face = QAccessible.queryAccessibleInterface(widget)
    return face.text(QAccessible.Text.Name), face.text(QAccessible.Text.Description)


def _plot(qtbot: Any) -> Any:
    from revstudio.qt.plots.metric_plot import Channel, MetricPlot

    plot = MetricPlot("Loss", [Channel("loss", "loss")])
    qtbot.addWidget(plot)
    return plot


def test_a_screen_reader_gets_a_name_for_every_part(make_window: Any, qtbot: Any, settle: Any,
                                                    revnet: Any) -> None:
    # Lists, fields, the painted canvas and the plots had no accessible name: a screen reader
    # announced only "tree", "edit" or nothing.
    window = make_window(revnet)
    view = window.current_view()
    plot = _plot(qtbot)
    parts = [view, window.node_palette.search, window.node_palette.tree, window.inspector.title, window.history,
             window.bottom.tabBar(), window.diagnostics.tree, window.status_batch, plot.plot]
    for widget in parts:
        name, _ = _spoken(widget)
        assert name.strip(), f"{type(widget).__name__} {widget.objectName()} has no accessible name"
    assert _spoken(view)[1].startswith("6 nodes, 7 wires; nothing selected")
    view.select_nodes(["f"])
    settle()
    assert _spoken(view)[1].endswith("selected: f (Conv)")


def test_ctrl_z_in_an_inspector_field_undoes_the_edit_not_the_fields_text(make_window: Any, qtbot: Any,
                                                                          settle: Any, revnet: Any) -> None:
    """Typing '8' into a Conv's out_channels, Return, and Ctrl+Z with the field still focused: the line edit
    took the key for its own text undo, put back the old text and pushed that as a second edit, so
    History read two steps, Redo had nothing to redo and the project stayed modified."""
    window = make_window(revnet)
    window.activateWindow()
    window.select_node("f")
    settle()
    field = window.inspector.editors["out_channels"].field
    old = revnet.nodes["f"].params.get("out_channels")
    field.setFocus()
    field.selectAll()
    settle()
    _keys(qtbot, settle, "8", K.Key_Return)
    assert QApplication.focusWidget() is field
    stack = window.document.undo_stack
    assert revnet.nodes["f"].params["out_channels"] == 8 and stack.count() == 1
    _keys(qtbot, settle, (K.Key_Z, CTRL))
    assert revnet.nodes["f"].params.get("out_channels") == old
    assert (stack.count(), stack.index()) == (1, 0), [stack.text(i) for i in range(stack.count())]
    assert not window.document.is_dirty()
    assert field.text() == str(old)
    _keys(qtbot, settle, (K.Key_Y, CTRL))
    assert revnet.nodes["f"].params["out_channels"] == 8 and stack.index() == 1


def test_ctrl_z_in_the_batch_field_undoes_the_batch_change(make_window: Any, qtbot: Any, settle: Any,
                                                           revnet: Any) -> None:
    """The status bar's batch field says 'Ctrl+Z undoes a change', but with the field focused its line
    edit took the key for its text undo: the batch stayed 64 and leaving the field pushed the old
    text back as another edit."""
    window = make_window(revnet)
    window.activateWindow()
    field = window.status_batch
    field.setFocus()
    field.selectAll()
    settle()
    _keys(qtbot, settle, "64", K.Key_Return)
    stack = window.document.undo_stack
    assert field.value() == 64 and stack.index() == 1
    _keys(qtbot, settle, (K.Key_Z, CTRL))
    assert (stack.count(), stack.index()) == (1, 0) and field.value() != 64
    window.current_view().setFocus()  # leaving the field commits nothing new
    settle()
    assert (stack.count(), stack.index()) == (1, 0), [stack.text(i) for i in range(stack.count())]
