"""Feedback: export says what it does at once and when done, exports get the umask's
mode, the status bar says what undo undid, wire deletes are counted, undo selects what returns."""
from __future__ import annotations

import os
import stat

import pytest

from revstudio.codegen import write_source


def test_write_source_gives_the_umask_mode_not_0600(tmp_path):
    old = os.umask(0o022)
    try:
        target = tmp_path / "model.py"
        write_source("x = 1\n", target)
        assert stat.S_IMODE(target.stat().st_mode) == 0o644
        os.chmod(target, 0o640)  # an existing file keeps the mode its owner gave it
        write_source("x = 2\n", target)
        assert stat.S_IMODE(target.stat().st_mode) == 0o640
    finally:
        os.umask(old)


def test_ctrl_e_export_reports_at_once_and_when_done(make_window, revnet, tmp_path, monkeypatch, settle):
    from PySide6.QtWidgets import QFileDialog

    window = make_window(revnet)
    target = tmp_path / "exported.py"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(lambda *a, **k: (str(target), "")))
    said: list[str] = []
    window.statusBar().messageChanged.connect(lambda text: said.append(text))
    window.actions_by_name["export"].trigger()
    settle()
    assert target.exists()
    assert said[0].startswith("Exporting exported.py"), said
    assert any(t.startswith("Exported exported.py (") for t in said), said  # the name fits the bar
    settle()
    log = window.bottom.log.toPlainText()
    assert "Exporting exported.py" in log and f"Exported {target} (" in log  # the Log has the path


def test_status_bar_says_what_undo_undid(make_window, revnet, settle):
    window = make_window(revnet)
    view = window.current_view()
    view.select_nodes(["f"])
    view.delete_selection()
    assert window.statusBar().currentMessage() == "Deleted 1 node"
    window.actions_by_name["undo"].trigger()
    settle()
    assert window.statusBar().currentMessage().startswith("Undid ")
    assert "f" in window.statusBar().currentMessage()
    window.actions_by_name["redo"].trigger()
    assert window.statusBar().currentMessage().startswith("Redid ")


def test_deleting_one_wire_says_one_wire(make_window, revnet, settle):
    window = make_window(revnet)
    view = window.current_view()
    view.scene().clearSelection()
    edge = next(e for e in window.document.graph.edges if str(e) == "f.out -> m.in1")
    view.scene().wire_items[edge].setSelected(True)
    view.delete_selection()
    assert window.statusBar().currentMessage() == "Deleted 1 wire"


@pytest.mark.parametrize("ids", [["f"], ["f", "m"]])
def test_undo_of_a_delete_selects_the_nodes_it_brings_back(make_window, revnet, settle, ids):
    window = make_window(revnet)
    view = window.current_view()
    view.select_nodes(ids)
    view.delete_selection()
    assert view.selected_node_ids() == []
    window.document.undo_stack.undo()
    settle()
    assert sorted(view.selected_node_ids()) == sorted(ids)
    assert window.inspector.node_id == (ids[0] if len(ids) == 1 else None)


def test_undo_of_a_param_edit_keeps_the_selection(make_window, revnet, settle):
    from revstudio.core.commands import SetParam

    window = make_window(revnet)
    view = window.current_view()
    view.select_nodes(["f"])
    window.document.push(SetParam(window.document.graph, "f", "out_channels", 8))
    window.document.undo_stack.undo()
    settle()
    assert view.selected_node_ids() == ["f"]


ONNX_SAID = ("Exported digits_revnet as ONNX: digits_revnet.onnx (inputs x; outputs y; opset 18; onnxruntime's "
             "outputs differ from the model's by at most 4.8e-07)")
OPENED_SAID = "Opened example digits_revnet (a copy: Save As to keep it) from /usr/share/revstudio/examples"


@pytest.mark.parametrize("size", [(1440, 900), (1366, 768)], ids=["usual", "1366x768"])
@pytest.mark.parametrize("said", [ONNX_SAID, OPENED_SAID], ids=["onnx-export", "opened-example"])
def test_a_long_status_message_ends_in_an_ellipsis_and_the_figures_keep_their_width(make_window, revnet, settle,
                                                                                     qtbot, size, said):
    # a long message squeezed the memory figure to "…" (or hid it) for the seconds it showed
    window = make_window(revnet)
    window.resize(*size)
    qtbot.wait(100)
    settle()
    bar, memory = window.statusBar(), window.status_memory
    whole, width = memory.text(), memory.width()
    assert whole.startswith("float32") and not memory.is_elided()
    window.show_message("Deleted 1 node")
    settle()
    assert memory.width() == width and not memory.is_elided()  # a short message leaves the figures in place
    window.show_message(said)
    settle()
    qtbot.wait(50)
    assert memory.isVisible() and memory.shown_text() == whole and memory.width() == width
    assert not any(isinstance(w, type(memory)) and w.is_elided() for w in bar.figures)
    label = bar.message_label
    assert bar.currentMessage() == said and label.geometry().right() < min(w.geometry().left() for w in bar.figures
                                                                           if w.isVisible())
    shown = label.shown_text()  # the message gives way instead, its whole text in the tooltip
    assert shown == said or (shown.endswith("…") and said.startswith(shown[:-1]) and said in label.toolTip())
    bar.clearMessage()
    settle()
    assert memory.shown_text() == whole and memory.width() == width


def test_a_message_of_a_few_words_leaves_the_figures_whole(make_window, revnet, settle, qtbot):
    # "Grouped 1 node into group1 (Tab opens it)" hid the figures whole in a 1280-pixel window
    window = make_window(revnet)
    window.resize(1280, 800)
    qtbot.wait(100)
    settle()
    bar, memory = window.statusBar(), window.status_memory
    whole, shown_before = memory.text(), memory.shown_text()
    window.show_message("Grouped 1 node into group1 (Tab opens it)")
    settle()
    assert memory.isVisible() and memory.shown_text() == shown_before and whole.startswith(shown_before.rstrip("…"))
    label = bar.message_label
    assert label.geometry().right() < memory.geometry().left(), "the message runs under the figures"
    bar.clearMessage()
    settle()
    assert memory.isVisible() and memory.shown_text() == shown_before


def test_new_and_open_do_not_say_they_undid_the_old_projects_edits(make_window, revnet, settle, tmp_path):
    """New/Open empty the undo stack; that is no undo, and "Undid 2 edits (back to before )" misled."""
    from revstudio.core.project import save

    path = tmp_path / "other.revs"
    save(revnet, path)
    window = make_window(revnet)
    said: list[str] = []
    window.statusBar().messageChanged.connect(lambda text: said.append(text) if text else None)
    view = window.current_view()
    for node in ("f", "m"):
        view.select_nodes([node])
        view.delete_selection()
    window.files.new_file()  # the scripted answer to "save changes?" is discard
    settle()
    view = window.current_view()
    view.add_node_at("Input", (0.0, 0.0))
    window.files.load_path(str(path))
    settle()
    assert not [text for text in said if text.startswith(("Undid", "Redid"))], said
    assert said[-1].startswith("Opened ")


def test_export_of_a_graph_with_errors_is_refused_before_the_file_dialog(make_window, revnet, dialogs,
                                                                          monkeypatch):
    # it asked for a file name first and only then said the graph cannot be exported
    from PySide6.QtWidgets import QFileDialog

    from revstudio.core.commands import Disconnect

    window = make_window(revnet)
    asked: list[str] = []
    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(lambda *a, **k: asked.append("file") or ("", "")))
    edge = next(e for e in window.document.graph.edges if str(e.dst) == "m.in1")
    window.document.push(Disconnect(window.document.graph, edge))  # no settle: the refusal checks the graph as is
    for trigger in (window.actions_by_name["export"].trigger, window.code_view.export_button.click):
        dialogs.errors.clear()
        trigger()
        assert asked == []
        (title, text), = dialogs.errors
        assert title == "Cannot export" and text.startswith("The graph has 1 error, so it cannot be exported yet")
        assert "Problems" in text and "\n• m.in1: " in text


def test_the_memory_figures_give_way_at_800_px_with_the_whole_text_in_the_tooltip(make_window, revnet, settle,
                                                                                    qtbot):
    # at 800 px the figures ran past the window's edge, cut off mid-number
    window = make_window(revnet)
    window.resize(800, 600)
    qtbot.wait(100)
    settle()
    bar, memory = window.statusBar(), window.status_memory
    whole = memory.text()
    assert memory.isVisible() and whole.startswith("float32")
    assert memory.geometry().right() <= bar.contentsRect().right()  # all of it inside the bar
    shown = memory.shown_text()
    assert shown != whole and shown.endswith("…") and whole.startswith(shown[:-1])
    assert memory.fontMetrics().horizontalAdvance(shown) <= memory.contentsRect().width()
    assert memory.toolTip().startswith(whole + "\n\n") and "Estimated memory" in memory.toolTip()
    assert memory.grab().width() == memory.width()  # it paints
    window.resize(1600, 900)
    qtbot.wait(100)
    settle()
    assert memory.shown_text() == whole and memory.toolTip().startswith("Estimated memory")
