"""The Code tab: room to read, the inlined runtime folded, and selection linked both ways."""
from __future__ import annotations

from pathlib import Path

from revstudio.core.project import load
from revstudio.qt.code_view import fold

EXAMPLE = Path(__file__).resolve().parents[2] / "resources" / "examples" / "revnet_wired.revs"


def _ready(window, qtbot):
    code = window.code_view
    window.bottom.setCurrentWidget(code)
    qtbot.waitUntil(lambda: code.ok and "class Model" in code.text(), timeout=60000)
    return code


def test_fold_keeps_the_network_and_hides_the_runtime():
    from revstudio.codegen.emit import generate

    source = generate(load(str(EXAMPLE)))
    shown = fold(source)
    assert source.count("\n") > 1000
    # the runtime is most of the file: folded, a fifth is left (406 of 2,903 lines; a fixed 400
    # failed once the Model's docstring and input checks grew)
    assert shown.count("\n") < source.count("\n") / 5
    assert "class Model(nn.Module):" in shown and "class Region:" not in shown
    assert "lines folded" in shown
    assert "# ---- the project, as data" in shown  # later sections stay


def test_code_tab_folds_by_default_and_shows_all_on_request(make_window, qtbot):
    window = make_window(load(str(EXAMPLE)))
    code = _ready(window, qtbot)
    assert "class Region:" not in code.editor.toPlainText()
    assert "class Region:" in code.text()  # Copy/Export keep the whole file
    code.show_runtime.setChecked(True)
    assert "class Region:" in code.editor.toPlainText()


def test_code_tab_gets_room(make_window, qtbot):
    window = make_window(load(str(EXAMPLE)))
    window.resize(1440, 900)
    qtbot.wait(300)
    _ready(window, qtbot)
    qtbot.wait(100)
    assert window.bottom_dock.height() >= 300
    rows = window.code_view.editor.viewport().height() / window.code_view.editor.fontMetrics().height()
    assert rows >= 12, rows


def test_selecting_a_node_highlights_its_code_and_a_click_in_code_selects_it(make_window, qtbot, settle):
    from PySide6.QtGui import QTextCursor

    window = make_window(load(str(EXAMPLE)))
    code = _ready(window, qtbot)
    window.current_view().select_nodes(["block0_f_conv1"])
    settle()
    line = code.editor.textCursor().block().text()
    assert "self.block0_f_conv1 = " in line
    assert code.editor.extraSelections()
    # code -> canvas: put the cursor on another layer's line, as a click does
    target = code.node_lines["block1_g_relu"]
    code.editor.setFocus()
    qtbot.waitUntil(code.editor.hasFocus, timeout=2000)
    cursor = QTextCursor(code.editor.document().findBlockByNumber(target))
    code.editor.setTextCursor(cursor)
    settle()
    assert window.current_view().selected_node_ids() == ["block1_g_relu"]


def test_code_and_a_group_tab_follow_each_other(make_window, qtbot, settle):
    """A node selected in a group's tab shows its line in that body's class; a click on a
    line of a group class opens the group's tab with the node selected."""
    from PySide6.QtGui import QTextCursor

    window = make_window(load(str(EXAMPLE)))
    window.current_view().select_nodes(["block0_f_conv1", "block0_f_relu", "block0_f_conv2"])
    assert window.tabs.group_selection()
    name = window.tabs.current_graph().node(window.current_view().selected_node_ids()[0]).params["group"]
    code = window.code_view
    window.bottom.setCurrentWidget(code)
    qtbot.waitUntil(lambda: code.ok and f"Group {name}:" in code.text(), timeout=60000)
    assert "block0_f_conv1" not in code.node_lines  # not one of Model's layers any more
    assert (name, "block0_f_relu") in code.group_lines
    assert window.tabs.open_group(name)
    settle()
    window.current_view().select_nodes(["block0_f_conv2"])
    settle()
    assert "self.block0_f_conv2 = " in code.editor.textCursor().block().text()
    # code -> canvas, from the main tab: a click on a layer line of the group's class
    window.tabs.setCurrentIndex(0)
    settle()
    code.editor.setFocus()
    qtbot.waitUntil(code.editor.hasFocus, timeout=2000)
    code.editor.setTextCursor(QTextCursor(code.editor.document().findBlockByNumber(
        code.group_lines[(name, "block0_f_relu")])))
    settle()
    assert window.current_view().graph is window.document.graph.groups[name]
    assert window.current_view().selected_node_ids() == ["block0_f_relu"]
    assert window.inspector.node_id == "block0_f_relu"
