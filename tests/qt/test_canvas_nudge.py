"""Arrow keys nudge the selected nodes: one undo step per press, one per held key, and
the arrows still move the cursor in text fields and the palette."""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QApplication

from revstudio.core.graph import Graph
from revstudio.qt.canvas import GraphView
from revstudio.qt.document import Document

SHIFT = Qt.KeyboardModifier.ShiftModifier
NONE = Qt.KeyboardModifier.NoModifier


def _graph() -> Graph:
    g = Graph("nudge")
    g.add_node("Input", "x", {"shape": [8, 16, 16]}, (0, 0))
    g.add_node("Activation", "a", {}, (300, 0))
    g.add_node("Output", "y", {}, (600, 0))
    g.connect("x.out", "a.in")
    g.connect("a.out", "y.in")
    return g


def _press(view, key, mods=NONE, repeat: bool = False) -> None:
    QApplication.sendEvent(view, QKeyEvent(QKeyEvent.Type.KeyPress, key, mods, "", repeat))


def _view(qtbot) -> tuple[GraphView, Document]:
    doc = Document(_graph())
    view = GraphView(doc)
    qtbot.addWidget(view)
    view.resize(900, 600)
    view.show()
    QApplication.processEvents()
    return view, doc


def test_arrows_nudge_the_selection_one_undo_step_per_press(qtbot):
    view, doc = _view(qtbot)
    view.select_nodes(["a", "y"])
    _press(view, Qt.Key.Key_Right)
    _press(view, Qt.Key.Key_Down, SHIFT)
    g = doc.graph
    assert g.node("a").pos == (305.0, 20.0) and g.node("y").pos == (605.0, 20.0)
    assert g.node("x").pos == (0.0, 0.0)
    QApplication.processEvents()
    assert view.scene().node_items["a"].pos().toTuple() == (305.0, 20.0)  # the card follows the model
    assert doc.undo_stack.count() == 2
    doc.undo_stack.undo()
    assert g.node("a").pos == (305.0, 0.0)
    doc.undo_stack.undo()
    assert g.node("a").pos == (300.0, 0.0)
    doc.undo_stack.clear()


def test_a_held_arrow_is_one_undo_step(qtbot):
    view, doc = _view(qtbot)
    view.select_nodes(["a"])
    _press(view, Qt.Key.Key_Left)
    for _ in range(4):
        _press(view, Qt.Key.Key_Left, repeat=True)
    assert doc.graph.node("a").pos == (275.0, 0.0)
    assert doc.undo_stack.count() == 1
    _press(view, Qt.Key.Key_Up)  # a new press: a new step
    assert doc.undo_stack.count() == 2
    doc.undo_stack.undo()
    doc.undo_stack.undo()
    assert doc.graph.node("a").pos == (300.0, 0.0)
    doc.undo_stack.clear()


def test_without_a_selection_the_arrows_leave_the_nodes_alone(qtbot):
    view, doc = _view(qtbot)
    _press(view, Qt.Key.Key_Right)
    assert doc.graph.node("a").pos == (300.0, 0.0) and doc.undo_stack.count() == 0


def test_arrows_in_the_palette_search_and_a_rename_field_do_not_move_nodes(make_window, revnet, qtbot):
    window = make_window(revnet)
    view = window.current_view()
    view.select_nodes(["f"])
    before = window.document.graph.node("f").pos
    field = view.start_rename("f")
    assert field is not None
    field.setFocus()
    field.setCursorPosition(0)
    qtbot.keyClick(field, Qt.Key.Key_Right)
    assert field.cursorPosition() == 1
    qtbot.keyClick(field, Qt.Key.Key_Escape)
    search = window.node_palette.search
    search.setFocus()
    search.setText("conv")
    search.setCursorPosition(4)
    qtbot.keyClick(search, Qt.Key.Key_Left)
    assert search.cursorPosition() == 3
    assert window.document.graph.node("f").pos == before
    assert window.document.undo_stack.count() == 0
