"""Where new things land: paste at the cursor, palette adds and duplicates in free space."""
from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, QRectF
from PySide6.QtGui import QCursor

from revstudio.core.graph import Graph
from revstudio.qt.canvas import GraphView
from revstudio.qt.document import Document


def chain() -> Graph:
    g = Graph("chain")
    g.add_node("Input", "x", {"shape": [8, 16, 16]}, (0, 0))
    g.add_node("Conv", "a", {"out_channels": 4, "kernel_size": 3, "padding": "same"}, (240, 0))
    g.add_node("Activation", "b", {"fn": "tanh"}, (480, 0))
    g.connect("x.out", "a.in")
    g.connect("a.out", "b.in")
    return g


@pytest.fixture
def view(qtbot):
    doc = Document(chain())
    v = GraphView(doc)
    qtbot.addWidget(v)
    v.resize(1000, 700)
    v.show()
    qtbot.waitExposed(v)
    v.resetTransform()
    v.centerOn(300, 100)
    yield v
    doc.undo_stack.clear()


def _rect(view: GraphView, node_id: str) -> QRectF:
    return view.scene().node_items[node_id].sceneBoundingRect()


def _overlaps(view: GraphView, ids: list[str]) -> list[tuple[str, str]]:
    out = []
    for n in ids:
        r = _rect(view, n).adjusted(8, 8, -8, -8)
        out += [(n, m) for m in view.scene().node_items if m != n and r.intersects(_rect(view, m))]
    return out


def test_paste_lands_at_the_cursor(view):
    view.select_nodes(["a"])
    assert view.copy()
    target = view.mapFromScene(300, 400)
    QCursor.setPos(view.viewport().mapToGlobal(target))
    pasted = view.paste()
    assert len(pasted) == 1
    x, y = view.document.graph.node(pasted[0]).pos
    assert abs(x - 300) <= 2 and abs(y - 400) <= 2


def test_seven_pastes_at_one_spot_are_seven_visible_copies(view):
    view.select_nodes(["a"])
    view.copy()
    QCursor.setPos(view.viewport().mapToGlobal(view.mapFromScene(300, 300)))
    pasted = [view.paste()[0] for _ in range(7)]
    positions = {view.document.graph.node(n).pos for n in pasted}
    assert len(positions) == 7
    assert view.document.undo_stack.count() == 7  # each paste is one undoable step


def test_paste_without_the_cursor_on_the_canvas_goes_beside_the_selection(view):
    view.select_nodes(["a", "b"])
    view.copy()
    QCursor.setPos(view.viewport().mapToGlobal(QPoint(-50, -50)))
    pasted = view.paste()
    assert _overlaps(view, pasted) == []
    assert min(view.document.graph.node(n).pos[0] for n in pasted) > _rect(view, "b").right()


def test_duplicate_goes_into_free_space(view):
    view.select_nodes(["a"])
    for _ in range(4):
        new = view.duplicate()
        assert _overlaps(view, new) == [], "a duplicate covers another node"


def test_palette_add_goes_next_to_the_selection_in_free_space(view):
    view.select_nodes(["b"])
    first = view.add_node_beside_selection("Dropout")
    assert first is not None and _overlaps(view, [first]) == []
    assert view.document.graph.node(first).pos[0] > _rect(view, "b").right()
    view.select_nodes(["b"])
    second = view.add_node_beside_selection("Dropout")
    assert _overlaps(view, [first, second]) == []
    assert view.selected_node_ids() == [second]


def test_palette_adds_one_after_another_stay_on_the_selected_nodes_row(view):
    # each went 10 px higher than the one before (a card's outline taken for the card), so a chain
    # added from the Nodes panel climbed the canvas
    last = "b"
    for _ in range(4):
        view.select_nodes([last])
        new = view.add_node_beside_selection("Dropout")
        assert new is not None
        assert view.document.graph.node(new).pos[1] == view.document.graph.node(last).pos[1]
        last = new


def test_palette_add_with_nothing_selected_avoids_the_nodes_in_the_middle(view):
    view.scene().clearSelection()
    view.centerOn(_rect(view, "a").center())  # a node sits right in the middle of the view
    new = view.add_node_beside_selection("Dropout")
    assert _overlaps(view, [new]) == []
    assert view.viewport().rect().contains(view.mapFromScene(_rect(view, new).center()))


def _tab_add(view, qtbot, text: str) -> str:
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    view.setFocus()
    QTest.keyClick(view, Qt.Key.Key_Tab)
    popup = view.popup
    assert popup is not None and popup.isVisible()
    QTest.keyClicks(popup.search, text)
    QTest.keyClick(popup.search, Qt.Key.Key_Return)
    return view.selected_node_ids()[0]


def test_tab_adds_at_the_pointer_and_never_on_top_of_a_node(view, qtbot):
    """Tab, type, Enter three times without moving the mouse stacked the three nodes exactly on
    one another (the first two hidden); over a node, the new one covered it."""
    QCursor.setPos(view.viewport().mapToGlobal(view.mapFromScene(300, 400)))
    first = _tab_add(view, qtbot, "activation")
    x, y = view.document.graph.node(first).pos
    assert abs(x - 300) <= 2 and abs(y - 400) <= 2  # free space: exactly at the pointer
    added = [first, _tab_add(view, qtbot, "dropout"), _tab_add(view, qtbot, "linear")]
    assert not _overlaps(view, added)
    QCursor.setPos(view.viewport().mapToGlobal(view.mapFromScene(_rect(view, "a").center())))
    over = _tab_add(view, qtbot, "activation")
    assert not _overlaps(view, [over])
    assert view.document.undo_stack.count() == 4


def test_shift_a_from_the_keyboard_builds_a_row_right_of_the_selection(view, qtbot):
    """With the pointer off the canvas, Shift+A put each node in the middle of the view (or beside
    whatever was there), so x, Shift+A, Shift+A, Shift+A zig-zagged around the first one; it goes
    right of the selection, as the Nodes panel's Enter does, so a chain grows left to right."""
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    QCursor.setPos(view.viewport().mapToGlobal(QPoint(-50, -50)))
    assert view.cursor_in_view() is None
    view.select_nodes(["b"])
    added = []
    for text in ("dropout", "linear", "output"):
        view.setFocus()
        QTest.keyClick(view, Qt.Key.Key_A, Qt.KeyboardModifier.ShiftModifier)
        QTest.keyClicks(view.popup.search, text)
        QTest.keyClick(view.popup.search, Qt.Key.Key_Return)
        added.append(view.selected_node_ids()[0])
    row = ["b", *added]
    for left, right in zip(row, row[1:], strict=False):
        assert _rect(view, right).left() > _rect(view, left).right(), (left, right)
        assert _rect(view, right).top() == _rect(view, left).top(), (left, right)
    assert not _overlaps(view, added)
