"""Names: the project follows Save As; nodes rename from the inspector title or a
double-click on their header, as one undoable command; headers cut ids in the middle."""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from revstudio.core.project import load


def test_save_as_names_the_project_after_the_file(make_window, dialogs, tmp_path, settle):
    window = make_window()
    assert window.document.graph.name == "untitled"
    target = tmp_path / "mine.revs"
    dialogs.save_paths.append(str(target))
    assert window.files.save_as()
    settle()
    assert window.document.graph.name == "mine"
    assert load(str(target)).name == "mine"
    assert window.tabs.tabText(0) == "mine"
    assert window.inspector.title.text() == "mine"
    from revstudio.codegen.emit import generate

    window.document.graph.add_node("Input", "x", {"shape": [3]}, (0, 0))
    window.document.graph.add_node("Output", "y", {}, (200, 0))
    window.document.graph.connect("x.out", "y.in")
    assert '"""mine: the network drawn in revstudio.' in generate(window.document.graph)


def test_save_as_keeps_a_name_the_user_chose(make_window, dialogs, tmp_path):
    window = make_window()
    window.document.graph.name = "ResNet for digits"
    dialogs.save_paths.append(str(tmp_path / "run2.revs"))
    assert window.files.save_as()
    assert window.document.graph.name == "ResNet for digits"


def test_rename_from_the_inspector_title_is_one_undoable_step(make_window, revnet, settle):
    window = make_window(revnet)
    view = window.current_view()
    view.select_nodes(["f"])
    settle()
    title = window.inspector.title
    assert not title.isReadOnly()
    title.setText("branch_conv")
    title.editingFinished.emit()
    settle()
    g = window.document.graph
    assert "branch_conv" in g.nodes and "f" not in g.nodes
    assert "s.out1 -> branch_conv.in" in [str(e) for e in g.edges]
    assert g.renamed == {"f": "branch_conv"}
    assert view.selected_node_ids() == ["branch_conv"]  # still selected, still inspected
    assert window.inspector.node_id == "branch_conv"
    assert window.statusBar().currentMessage() == "Renamed f to branch_conv"  # as on the canvas
    window.document.undo_stack.undo()
    settle()
    assert "f" in g.nodes and g.renamed == {}


def test_rename_to_a_taken_id_says_why_and_changes_nothing(make_window, revnet, settle):
    window = make_window(revnet)
    window.current_view().select_nodes(["f"])
    settle()
    count = window.document.undo_stack.count()
    window.inspector.title.setText("m")
    window.inspector.title.editingFinished.emit()
    assert window.document.undo_stack.count() == count
    assert "already" in window.inspector.rename_error.text()
    assert window.inspector.title.text() == "f"


def test_double_click_on_a_header_renames_in_place(make_window, revnet, settle, qtbot):
    window = make_window(revnet)
    view = window.current_view()
    item = view.scene().node_items["f"]
    view.centerOn(item)
    settle()
    header = view.mapFromScene(item.mapToScene(40, 10))
    QTest.mouseDClick(view.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, header)
    field = view.rename_field
    assert field is not None and field.text() == "f" and field.hasSelectedText()
    QTest.keyClicks(field, "conv_f")
    QTest.keyClick(field, Qt.Key.Key_Return)
    settle()
    assert "conv_f" in window.document.graph.nodes
    assert window.document.undo_stack.text(window.document.undo_stack.count() - 1) == "Rename f to conv_f"


def test_escape_cancels_an_in_place_rename(make_window, revnet, settle):
    window = make_window(revnet)
    view = window.current_view()
    field = view.start_rename("f")
    field.setText("zzz")
    QTest.keyClick(field, Qt.Key.Key_Escape)
    settle()
    assert "f" in window.document.graph.nodes and "zzz" not in window.document.graph.nodes


def test_header_ids_are_cut_in_the_middle_not_the_start(qtbot):
    from revstudio.qt.canvas.node_item import elide_id

    shown = elide_id("block10_g_conv1_extra_long_name")
    assert shown.startswith("bloc") and shown.endswith("name") and "…" in shown
    assert elide_id("x") == "x"


def test_a_short_type_name_leaves_the_header_room_for_the_whole_id(qtbot):
    # a generated 400-node project showed "l0b3…onv2" for l0b37_g_conv2 beside "Conv", the block
    # number cut away though the header had room for it all
    from PySide6.QtGui import QFontMetricsF

    from revstudio.qt.canvas.node_item import _TITLE_FONT, WIDTH, elide_id, id_room

    conv = QFontMetricsF(_TITLE_FONT).horizontalAdvance("Conv")
    assert elide_id("l0b37_g_conv2", id_room(conv)) == "l0b37_g_conv2"
    long_title = QFontMetricsF(_TITLE_FONT).horizontalAdvance("AffineCoupling")
    assert id_room(long_title) >= WIDTH * 0.4  # a long type name still leaves the id its old room
    shown = elide_id("block10_g_conv1_extra_long_name", id_room(long_title))
    assert shown.startswith("bloc") and shown.endswith("name") and "…" in shown
    assert conv + id_room(conv) + 10 <= WIDTH - 16 + 0.5  # title, gap and id fit the header


def test_rename_inside_a_group_tab_records_the_alias_in_that_body_and_the_file(
        make_window, dialogs, tmp_path, settle):
    from pathlib import Path

    example = Path(__file__).resolve().parents[2] / "resources" / "examples" / "revnet_wired.revs"
    window = make_window(load(str(example)))
    window.current_view().select_nodes(["block0_f_conv1", "block0_f_relu", "block0_f_conv2"])
    assert window.tabs.group_selection()
    assert window.tabs.open_group(window.current_view().selected_node_ids()[0])
    settle()
    view = window.current_view()
    body = view.graph
    view.select_nodes(["block0_f_conv1"])
    settle()
    window.inspector.title.setText("stem")
    window.inspector.title.editingFinished.emit()
    settle()
    assert "stem" in body.nodes and body.renamed == {"block0_f_conv1": "stem"}
    assert window.document.graph.renamed == {}
    target = tmp_path / "renamed.revs"
    dialogs.save_paths.append(str(target))
    assert window.files.save_as()
    again = load(str(target))
    assert again.groups[body.name].renamed == {"block0_f_conv1": "stem"}
    window.document.undo_stack.undo()
    settle()
    assert "block0_f_conv1" in body.nodes and body.renamed == {}


def test_a_refused_in_place_rename_keeps_the_field_and_the_text(make_window, revnet, settle):
    # Enter on a taken id closed the field and threw away what was typed
    window = make_window(revnet)
    view = window.current_view()
    field = view.start_rename("f")
    field.setText("m")
    QTest.keyClick(field, Qt.Key.Key_Return)
    settle()
    assert view.rename_field is field and field.isVisible() and field.text() == "m"
    assert field.note.isVisible() and field.note.text() == "'m' is already the id of another node (Esc cancels)"
    assert window.statusBar().currentMessage() == "Not renamed: 'm' is already the id of another node"
    count = window.document.undo_stack.count()
    QTest.keyClicks(field, "2")  # corrected where it was typed
    QTest.keyClick(field, Qt.Key.Key_Return)
    settle()
    assert "m2" in window.document.graph.nodes and window.document.undo_stack.count() == count + 1
    assert view.rename_field is None

    field = view.start_rename("m2")  # refused again, then Escape: nothing changes
    field.setText("bad name")
    QTest.keyClick(field, Qt.Key.Key_Return)
    settle()
    assert view.rename_field is field and "spaces" in field.note.text()
    QTest.keyClick(field, Qt.Key.Key_Escape)
    settle()
    assert view.rename_field is None and "m2" in window.document.graph.nodes
    assert window.document.undo_stack.count() == count + 1
