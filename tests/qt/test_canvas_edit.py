"""Editing on the canvas: drops, wires, refusals, quick add, keys; each edit one undo step."""
from __future__ import annotations

import pytest
from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt
from PySide6.QtGui import QDropEvent
from PySide6.QtTest import QTest

from revstudio.core.generate import revnet_chain
from revstudio.core.graph import Graph
from revstudio.qt.canvas import NODE_MIME, GraphView

NONE = Qt.KeyboardModifier.NoModifier
LEFT = Qt.MouseButton.LeftButton


def chain() -> Graph:
    """x -> a (Conv 4ch) -> b (Activation); m is a Merge(add) fed by x on in0; o is unconnected."""
    g = Graph("chain")
    g.add_node("Input", "x", {"shape": [8, 16, 16]}, (0, 0))
    g.add_node("Conv", "a", {"out_channels": 4, "kernel_size": 3, "padding": "same"}, (260, 0))
    g.add_node("Activation", "b", {}, (520, 0))
    g.add_node("Merge", "m", {"mode": "add"}, (520, 220))
    g.add_node("Output", "o", {}, (780, 0))
    g.connect("x.out", "a.in")
    g.connect("a.out", "b.in")
    g.connect("x.out", "m.in0")
    return g


def port_point(view: GraphView, node: str, port: str, output: bool) -> QPoint:
    item = view.scene().node_items[node]
    return view.mapFromScene(item.port_scene_pos(port, output))


def drag(view: GraphView, start: QPoint, end: QPoint, modifiers=NONE) -> None:
    vp = view.viewport()
    QTest.mousePress(vp, LEFT, modifiers, start)
    mid = (start + end) / 2
    QTest.mouseMove(vp, QPoint(int(mid.x()), int(mid.y())))
    QTest.mouseMove(vp, end)
    QTest.mouseRelease(vp, LEFT, modifiers, end)


def messages(view: GraphView) -> list[str]:
    out: list[str] = []
    view.message.connect(out.append)
    return out


def test_palette_drop_adds_a_node_and_undo_removes_it(shown_view):
    view = shown_view(chain())
    doc = view.document
    data = QMimeData()
    data.setData(NODE_MIME, b"Conv")
    at = QPointF(300, 200)
    event = QDropEvent(at, Qt.DropAction.CopyAction, data, LEFT, NONE)
    view.dropEvent(event)
    new = [n for n in doc.graph.nodes if n not in ("x", "a", "b", "m", "o")]
    assert len(new) == 1 and doc.graph.node(new[0]).type == "Conv"
    assert new[0] in view.scene().node_items
    assert view.selected_node_ids() == new
    expected = view.mapToScene(at.toPoint())
    assert doc.graph.node(new[0]).pos == (round(expected.x()), round(expected.y()))  # whole pixels
    doc.undo_stack.undo()
    assert new[0] not in doc.graph.nodes and new[0] not in view.scene().node_items


def test_unknown_type_drop_is_refused_with_a_reason(shown_view):
    view = shown_view(chain())
    said = messages(view)
    data = QMimeData()
    data.setData(NODE_MIME, b"NoSuchLayer")
    view.dropEvent(QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, data, LEFT, NONE))
    assert len(view.document.graph.nodes) == 5
    assert said and "NoSuchLayer" in said[-1]


def test_drawing_a_wire_connects_in_one_undo_step(shown_view):
    view = shown_view(chain())
    doc = view.document
    count = doc.undo_stack.count()
    drag(view, port_point(view, "b", "out", True), port_point(view, "o", "in", False))
    assert [str(e) for e in doc.graph.edges_into("o")] == ["b.out -> o.in"]
    assert doc.undo_stack.count() == count + 1
    assert any(str(e) == "b.out -> o.in" for e in view.scene().wire_items)
    doc.undo_stack.undo()
    assert not doc.graph.edges_into("o")


def test_dropping_onto_a_node_body_picks_the_nearest_input(shown_view):
    view = shown_view(chain())
    target = view.mapFromScene(view.scene().node_items["o"].mapToScene(QPointF(90, 40)))
    drag(view, port_point(view, "b", "out", True), target)
    assert [str(e) for e in view.document.graph.edges_into("o")] == ["b.out -> o.in"]


@pytest.mark.parametrize(("src", "dst", "ctrl", "reason"), [
    (("x", "out"), ("b", "in"), False, "already fed"),
    (("b", "out"), ("a", "in"), True, "cycle"),
    (("a", "out"), ("m", "in0"), False, "already fed"),
    (("a", "out"), ("m", "in1"), False, "m:"),  # 4 channels added to 8: the checker's shape error
])
def test_refused_connections_say_why(shown_view, src, dst, ctrl, reason):
    view = shown_view(chain())
    doc = view.document
    said = messages(view)
    edges = list(doc.graph.edges)
    count = doc.undo_stack.count()
    mods = Qt.KeyboardModifier.ControlModifier if ctrl else NONE
    drag(view, port_point(view, src[0], src[1], True), port_point(view, dst[0], dst[1], False), mods)
    assert doc.graph.edges == edges and doc.undo_stack.count() == count
    assert said and reason in said[-1] and said[-1].startswith("Cannot connect")
    assert view.scene().hint.isVisible() and reason in view.scene().hint.text


def test_ctrl_drop_replaces_what_fed_the_input(shown_view):
    view = shown_view(chain())
    doc = view.document
    drag(view, port_point(view, "x", "out", True), port_point(view, "b", "in", False),
         Qt.KeyboardModifier.ControlModifier)
    assert [str(e) for e in doc.graph.edges_into("b")] == ["x.out -> b.in"]
    doc.undo_stack.undo()
    assert [str(e) for e in doc.graph.edges_into("b")] == ["a.out -> b.in"]


def test_picking_up_a_wire_replugs_or_removes_it(shown_view):
    view = shown_view(chain())
    doc = view.document
    count = doc.undo_stack.count()
    drag(view, port_point(view, "b", "in", False), port_point(view, "o", "in", False))
    assert not doc.graph.edges_into("b")
    assert [str(e) for e in doc.graph.edges_into("o")] == ["a.out -> o.in"]
    assert doc.undo_stack.count() == count + 1
    empty = view.mapFromScene(QPointF(300, 600))
    drag(view, port_point(view, "o", "in", False), empty)
    assert not doc.graph.edges_into("o")
    doc.undo_stack.undo()
    doc.undo_stack.undo()
    assert [str(e) for e in doc.graph.edges_into("b")] == ["a.out -> b.in"]


def test_wire_dropped_on_empty_canvas_quick_adds_a_connected_node(shown_view):
    view = shown_view(chain())
    doc = view.document
    empty = view.mapFromScene(QPointF(800, 400))
    drag(view, port_point(view, "b", "out", True), empty)
    popup = view.popup
    assert popup is not None and popup.isVisible()
    offered = popup.visible_types()
    assert "Activation" in offered and "Conv" in offered
    assert "Input" not in offered  # it has no input to take the wire
    popup.search.setText("dropo")
    assert popup.visible_types()[0] == "Dropout"
    count = doc.undo_stack.count()
    popup.accept_current()
    new = view.selected_node_ids()
    assert len(new) == 1 and doc.graph.node(new[0]).type == "Dropout"
    assert [str(e) for e in doc.graph.edges_into(new[0])] == [f"b.out -> {new[0]}.in"]
    assert doc.undo_stack.count() == count + 1
    doc.undo_stack.undo()
    assert new[0] not in doc.graph.nodes


def test_quick_add_from_an_input_feeds_it(shown_view):
    view = shown_view(chain())
    popup = view.open_quick_add(QPointF(700, 300), "o.in")
    assert "Output" not in popup.visible_types()
    popup.choose("Linear")
    new = view.selected_node_ids()[0]
    assert [str(e) for e in view.document.graph.edges_into("o")] == [f"{new}.out -> o.in"]


def test_shift_a_opens_quick_add_with_every_type(shown_view):
    view = shown_view(chain())
    view.setFocus()
    QTest.keyClick(view, Qt.Key.Key_A, Qt.KeyboardModifier.ShiftModifier)
    assert view.popup is not None and view.popup.isVisible()
    assert {"Input", "Conv", "Repeat"} <= set(view.popup.visible_types())
    assert "GroupInput" not in view.popup.visible_types()  # only inside group bodies
    # in the Nodes panel's order: it began with the couplings (categories sorted by name)
    from revstudio.qt.palette import PaletteWidget

    palette = PaletteWidget()
    listed = [t for t in palette.visible_type_ids() if t in view.popup.visible_types()]
    palette.deleteLater()
    assert view.popup.visible_types() == listed and listed[:2] == ["Input", "Output"]
    view.popup.choose("Input")
    assert len(view.document.graph.nodes) == 6


def test_keys_delete_duplicate_zoom_and_fit(shown_view):
    view = shown_view(chain())
    doc = view.document
    view.setFocus()
    view.select_nodes(["b"])
    QTest.keyClick(view, Qt.Key.Key_D, Qt.KeyboardModifier.ControlModifier)
    dup = view.selected_node_ids()
    assert len(dup) == 1 and dup[0] != "b" and doc.graph.node(dup[0]).type == "Activation"
    QTest.keyClick(view, Qt.Key.Key_Delete)
    assert dup[0] not in doc.graph.nodes
    z = view.zoom()
    QTest.keyClick(view, Qt.Key.Key_Plus)
    assert view.zoom() > z
    QTest.keyClick(view, Qt.Key.Key_Minus)
    QTest.keyClick(view, Qt.Key.Key_Minus)
    assert view.zoom() < z
    QTest.keyClick(view, Qt.Key.Key_Home)
    visible = view.mapToScene(view.viewport().rect()).boundingRect()
    assert visible.contains(view.scene().nodes_rect())


def test_wheel_zooms_around_the_cursor(shown_view):
    from PySide6.QtGui import QWheelEvent

    view = shown_view(chain())
    pos = port_point(view, "a", "in", False)
    before = view.mapToScene(pos)
    z = view.zoom()
    event = QWheelEvent(QPointF(pos), QPointF(view.viewport().mapToGlobal(pos)), QPoint(0, 0), QPoint(0, 120),
                        Qt.MouseButton.NoButton, NONE, Qt.ScrollPhase.NoScrollPhase, False)
    view.wheelEvent(event)
    assert view.zoom() > z
    after = view.mapToScene(pos)
    assert abs(after.x() - before.x()) < 3 and abs(after.y() - before.y()) < 3


def test_tab_on_a_repeat_asks_to_open_its_group(shown_view, qtbot):
    view = shown_view(revnet_chain(2, channels=4, size=8, wired=False))
    view.select_nodes(["blocks"])
    view.setFocus()
    with qtbot.waitSignal(view.openGroupRequested, timeout=30_000) as got:
        QTest.keyClick(view, Qt.Key.Key_Tab)
    assert got.args == ["blocks"]


def test_rubber_band_selects_and_reports_ids(shown_view, qtbot):
    view = shown_view(chain())
    seen: list[list[str]] = []
    view.selectionChangedIds.connect(seen.append)
    a = view.scene().node_items["a"].sceneBoundingRect()
    b = view.scene().node_items["b"].sceneBoundingRect()
    start = view.mapFromScene(QPointF(a.left() - 20, a.top() - 30))
    end = view.mapFromScene(QPointF(b.right() - 30, b.bottom() + 10))
    drag(view, start, end)
    assert sorted(view.selected_node_ids()) == ["a", "b"]
    assert seen and sorted(seen[-1]) == ["a", "b"]


def test_middle_drag_and_space_drag_pan_without_editing(shown_view):
    view = shown_view(chain())
    doc = view.document
    count = doc.undo_stack.count()
    vp = view.viewport()
    centre = view.mapToScene(vp.rect().center())
    on_node = port_point(view, "a", "in", False) + QPoint(60, 0)  # panning starts even over a node
    QTest.mousePress(vp, Qt.MouseButton.MiddleButton, NONE, on_node)
    QTest.mouseMove(vp, on_node + QPoint(-120, -80))
    QTest.mouseRelease(vp, Qt.MouseButton.MiddleButton, NONE, on_node + QPoint(-120, -80))
    moved = view.mapToScene(vp.rect().center())
    assert moved.x() > centre.x() + 50 and moved.y() > centre.y() + 30
    view.setFocus()
    QTest.keyPress(view, Qt.Key.Key_Space)
    QTest.mousePress(vp, LEFT, NONE, on_node)
    QTest.mouseMove(vp, on_node + QPoint(100, 0))
    QTest.mouseRelease(vp, LEFT, NONE, on_node + QPoint(100, 0))
    QTest.keyRelease(view, Qt.Key.Key_Space)
    assert view.mapToScene(vp.rect().center()).x() < moved.x() - 50
    assert doc.undo_stack.count() == count  # nothing was dragged or selected into an edit
    assert doc.graph.node("a").pos == (260.0, 0.0)


def test_palette_drag_is_accepted_only_for_node_types(shown_view):
    from PySide6.QtGui import QDragEnterEvent

    view = shown_view(chain())
    ours = QMimeData()
    ours.setData(NODE_MIME, b"Conv")
    enter = QDragEnterEvent(QPoint(20, 20), Qt.DropAction.CopyAction, ours, LEFT, NONE)
    view.dragEnterEvent(enter)
    assert enter.isAccepted()
    other = QMimeData()
    other.setText("just text")
    enter = QDragEnterEvent(QPoint(20, 20), Qt.DropAction.CopyAction, other, LEFT, NONE)
    enter.setAccepted(False)
    view.dragEnterEvent(enter)
    assert not enter.isAccepted()


def test_context_menu_offers_the_edits_and_lets_the_window_extend_it(shown_view):
    view = shown_view(revnet_chain(2, channels=4, size=8, wired=False))
    seen: list[tuple[object, str]] = []
    view.contextMenuRequested.connect(lambda menu, node: seen.append((menu, node)))
    pos = view.scene().node_items["blocks"].sceneBoundingRect().center()
    menu, node = view.build_context_menu(pos)
    texts = [a.text() for a in menu.actions()]
    assert {"Add Node…", "Open Group", "Copy", "Paste", "Duplicate", "Delete", "Auto Layout"} <= set(texts)
    assert node == "blocks" and view.selected_node_ids() == ["blocks"]
    assert seen and seen[-1][0] is menu and seen[-1][1] == "blocks"
    duplicate = next(a for a in menu.actions() if a.text() == "Duplicate")
    duplicate.trigger()
    assert len(view.document.graph.nodes) == 6
    menu, node = view.build_context_menu(QPointF(-3000, -3000))
    assert node == "" and "Open Group" not in [a.text() for a in menu.actions()]


def test_escape_cancels_a_wire_being_drawn(shown_view):
    view = shown_view(chain())
    vp = view.viewport()
    start = port_point(view, "b", "out", True)
    QTest.mousePress(vp, LEFT, NONE, start)
    QTest.mouseMove(vp, start + QPoint(80, 40))
    assert view.scene().wiring
    view.setFocus()
    QTest.keyClick(view, Qt.Key.Key_Escape)
    assert not view.scene().wiring
    QTest.mouseRelease(vp, LEFT, NONE, start + QPoint(80, 40))
    assert view.popup is None and len(view.document.graph.edges) == 3


def test_quick_add_after_a_flat_vector_offers_only_what_takes_it(shown_view):
    view = shown_view(revnet_chain(2, channels=4, size=8))
    flat = view.open_quick_add(QPointF(0, 0), "pool.out").visible_types()  # a (4,) vector
    assert "Linear" in flat and "Activation" in flat
    assert "Conv" not in flat and "Pool" not in flat  # they need (C, L) or (C, H, W)
    view.popup.close()
    image = view.open_quick_add(QPointF(0, 0), "x.out").visible_types()  # a (4, 8, 8) image
    assert "Conv" in image and "AdditiveCoupling" in image  # the coupling's groups come after


def test_double_click_on_empty_canvas_opens_quick_add_there(shown_view):
    view = shown_view(chain())
    spot = view.mapFromScene(QPointF(300, 700))
    QTest.mouseDClick(view.viewport(), LEFT, NONE, spot)
    assert view.popup is not None and view.popup.isVisible()
    view.popup.choose("Dropout")
    new = view.selected_node_ids()[0]
    x, y = view.document.graph.node(new).pos
    assert abs(x - 300) < 5 and abs(y - 700) < 5


def test_dropping_a_type_on_a_wire_splices_it_in(shown_view):
    view = shown_view(chain())
    doc = view.document
    wire = next(w for e, w in view.scene().wire_items.items() if str(e) == "a.out -> b.in")
    spot = wire.scene_path().pointAtPercent(0.5)
    data = QMimeData()
    data.setData(NODE_MIME, b"Dropout")
    at = QPointF(view.mapFromScene(spot))
    count = doc.undo_stack.count()
    view.dropEvent(QDropEvent(at, Qt.DropAction.CopyAction, data, LEFT, NONE))
    new = view.selected_node_ids()[0]
    assert doc.graph.node(new).type == "Dropout"
    assert [str(e) for e in doc.graph.edges_into(new)] == [f"a.out -> {new}.in"]
    assert [str(e) for e in doc.graph.edges_into("b")] == [f"{new}.out -> b.in"]
    assert doc.undo_stack.count() == count + 1
    doc.undo_stack.undo()
    assert [str(e) for e in doc.graph.edges_into("b")] == ["a.out -> b.in"] and new not in doc.graph.nodes


def test_a_type_that_cannot_take_the_wire_is_added_beside_it(shown_view):
    view = shown_view(revnet_chain(2, channels=4, size=8))
    doc = view.document
    said = messages(view)
    edge = next(e for e in doc.graph.edges if str(e.src) == "pool.out")  # a flat (4,) vector
    view.insert_node_on_wire("Conv", edge, QPointF(0, 400))
    new = view.selected_node_ids()[0]
    assert not doc.graph.edges_of(new) and edge in doc.graph.edges
    assert "cannot take" in said[-1]


def test_ports_show_which_can_take_a_wire_being_drawn(shown_view):
    view = shown_view(chain())
    scene = view.scene()
    vp = view.viewport()
    start = port_point(view, "b", "out", True)
    QTest.mousePress(vp, LEFT, NONE, start)
    QTest.mouseMove(vp, start + QPoint(40, 60))
    state = scene.port_state
    assert state is not None
    assert state("o", "in", False) == "ok"
    assert state("m", "in1", False) == "ok"
    assert state("a", "in", False) == "no"    # upstream of b: a cycle
    assert state("m", "in0", False) == "no"   # already fed
    assert state("x", "out", True) is None    # an output cannot take an output
    view.grab()  # paints the highlighted ports
    QTest.mouseRelease(vp, LEFT, NONE, port_point(view, "o", "in", False))
    assert scene.port_state is None


def test_a_refused_shape_names_the_node_once(shown_view):
    """The reason read 'Cannot connect: m: Merge m: in1 is ...': the checker already names it."""
    view = shown_view(chain())
    said = messages(view)
    drag(view, port_point(view, "a", "out", True), port_point(view, "m", "in1", False))
    assert said[-1].startswith("Cannot connect: Merge m: "), said[-1]
    assert said[-1].count(" m:") + said[-1].count(": m:") == 1


def test_delete_and_reconnect_keeps_the_chain_and_undoes_as_one_step(make_window, revnet, settle, qtbot):
    # Taking a layer out of a chain left the chain cut: the wires had to be drawn again by hand.
    from PySide6.QtGui import QKeySequence
    from PySide6.QtTest import QTest

    window = make_window(revnet)
    window.activateWindow()
    qtbot.waitActive(window)
    doc, view = window.document, window.current_view()
    before = sorted(map(str, doc.graph.edges))
    view.select_nodes(["f"])
    view.setFocus()
    settle()
    QTest.keySequence(view, QKeySequence("Ctrl+Delete"))
    settle()
    graph = doc.graph
    assert "f" not in graph.nodes
    assert [str(e.src) for e in graph.edges_into("m", "in1")] == ["s.out1"]  # the Split feeds the Merge again
    assert not [d for d in doc.report.diagnostics if d.severity == "error"]
    doc.undo_stack.undo()
    settle()
    assert sorted(map(str, doc.graph.edges)) == before  # one step brings back the node and its wires

    # through a run of deleted nodes, by each one's first wired input
    view.select_nodes(["f", "m"])
    view.delete_and_reconnect()
    assert [str(e.src) for e in doc.graph.edges_into("c", "in0")] == ["s.out0"]
    doc.undo_stack.undo()
    view.select_nodes(["x"])
    said: list[str] = []
    view.message.connect(said.append)
    view.delete_and_reconnect()
    assert said[-1] == "Deleted 1 node; nothing to reconnect around them"
    assert "delete_reconnect" in window.actions_by_name
    doc.undo_stack.undo()
    view.select_nodes(["f"])
    view.setFocus()
    QTest.keyClick(view, Qt.Key.Key_Backspace, Qt.KeyboardModifier.ControlModifier)  # where Delete is Backspace
    settle()
    assert [str(e.src) for e in doc.graph.edges_into("m", "in1")] == ["s.out1"]


def test_a_nodes_context_menu_renames_it(shown_view):
    """Desktop editors rename from a right-click; here only F2, a double-click on the header or the inspector did."""
    view = shown_view(revnet_chain(2, channels=4, size=8, wired=False))
    menu, _ = view.build_context_menu(view.scene().node_items["blocks"].sceneBoundingRect().center())
    rename = next(a for a in menu.actions() if a.text() == "Rename Node")
    assert rename.shortcut().toString() == "F2"
    rename.trigger()
    assert view.rename_field is not None and view.rename_field.text() == "blocks"
    view.rename_field.close_field()
    menu, _ = view.build_context_menu(QPointF(-3000, -3000))
    assert "Rename Node" not in [a.text() for a in menu.actions()]
