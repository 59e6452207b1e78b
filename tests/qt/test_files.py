"""Files: save/reopen, unreadable files, files with errors, prompts, recent files, autosave and recovery."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from PySide6.QtWidgets import QLabel

from revstudio.core.graph import Graph
from revstudio.core.project import dumps, load, save
from revstudio.qt.autosave import RecoveryStore
from revstudio.qt.files import examples
from revstudio.qt.settings import Settings


def test_save_then_reopen_gives_the_same_document(make_window, revnet, dialogs, tmp_path, settle):
    window = make_window(revnet)
    window.tabs.main_view().select_nodes(["f"])
    window.inspector.editors["out_channels"].set_text("6")
    assert window.isWindowModified()
    target = tmp_path / "saved.revs"
    dialogs.save_paths.append(str(target))
    window.actions_by_name["save"].trigger()  # no path yet: asks where
    assert dialogs.asked == ["save_as"]
    assert target.exists() and not window.isWindowModified()
    assert window.windowTitle().startswith("saved.revs")
    saved_text = dumps(window.document.graph)

    other = make_window()
    dialogs.open_paths.append(str(target))
    other.actions_by_name["open"].trigger()
    settle()
    assert dumps(other.document.graph) == saved_text
    assert other.document.path == str(target)
    assert other.document.report.shape("f.out") == (6, 16, 16)
    assert Settings().recent_files()[0] == str(target)


def test_save_again_writes_in_place_without_asking(make_window, revnet, dialogs, tmp_path):
    path = tmp_path / "p.revs"
    save(revnet, str(path))
    window = make_window(load(str(path)), str(path))
    window.tabs.main_view().select_nodes(["x"])
    window.inspector.editors["shape"].set_text("8, 8, 8")
    window.actions_by_name["save"].trigger()
    assert dialogs.asked == [] and load(str(path)).node("x").params["shape"] == [8, 8, 8]


def test_unreadable_file_is_refused_with_a_message_naming_it(make_window, dialogs, tmp_path):
    window = make_window()
    bad = tmp_path / "garbage.revs"
    bad.write_text("{ this is not json", encoding="utf-8")
    assert not window.files.load_path(str(bad))
    ((title, text),) = dialogs.errors
    assert title == "Cannot open project" and "garbage.revs" in text
    assert "Traceback" not in text
    assert not window.files.load_path(str(tmp_path / "missing.revs"))
    assert "missing.revs" in dialogs.errors[-1][1]
    assert window.document.graph.nodes == {}


def test_a_node_far_off_the_canvas_is_refused_not_a_crash(make_window, dialogs, tmp_path, settle):
    # a hand-edited position of 1e13 px or more crashed the editor (a segfault inside Qt's
    # scrolling) as soon as the next file replaced it
    doc = json.loads(dumps(_far_graph()))
    doc["nodes"][0]["pos"] = [1e30, -1e30]
    far = tmp_path / "far.revs"
    far.write_text(json.dumps(doc), encoding="utf-8")
    window = make_window()
    assert not window.files.load_path(str(far))
    ((title, text),) = dialogs.errors
    assert "far.revs" in text and "node 0 'x'" in text and "off the canvas" in text
    near = tmp_path / "near.revs"
    save(_far_graph(), str(near))
    assert window.files.load_path(str(near))
    settle()
    assert window.document.graph.node("x").pos == (0.0, 0.0)


def _far_graph() -> Graph:
    g = Graph("far")
    g.add_node("Input", "x", {"shape": [4]}, (0, 0))
    g.add_node("Output", "y", {}, (1e9, -1e9))  # the edge of the canvas still opens
    g.connect("x.out", "y.in")
    return g


def test_file_with_graph_errors_opens_with_the_errors_marked(make_window, dialogs, tmp_path, settle):
    doc = {"format": "revstudio", "version": 1, "name": "broken",
           "nodes": [{"id": "x", "type": "Input", "params": {"shape": [3, 8, 8], "colour": "red"}},
                     {"id": "lin", "type": "Linear", "params": {"out_features": 4}},
                     {"id": "odd", "type": "NoSuchType", "params": {}},
                     {"id": "y", "type": "Output", "params": {}}],
           "edges": [["lin.out", "y.in"]], "groups": {}}
    path = tmp_path / "broken.revs"
    path.write_text(json.dumps(doc), encoding="utf-8")
    window = make_window()
    assert window.files.load_path(str(path))
    settle()
    assert dialogs.errors == []
    assert window.diagnostics.row_count() >= 1
    flagged = {d.node for d in window.document.report.diagnostics if d.severity == "error"}
    assert {"lin", "odd", "x"} <= flagged
    window.select_node("odd")
    assert "Unknown node type 'NoSuchType'" in window.inspector.help.text()
    window.select_node("x")
    labels = [lbl.text() for lbl in window.inspector.form_host.findChildren(QLabel)]
    assert "colour" in labels  # the unknown parameter is shown, with what to do about it
    assert any("unknown parameter" in t for t in labels)
    assert "1 error" in window.status_errors.text() or "errors" in window.status_errors.text()


def test_unsaved_changes_prompt_before_new_open_and_close(make_window, revnet, dialogs, tmp_path):
    window = make_window(revnet)
    window.document.mark_dirty()
    dialogs.unsaved.append("cancel")
    window.actions_by_name["new"].trigger()
    assert "f" in window.document.graph.nodes  # cancelled: nothing lost
    dialogs.unsaved.append("cancel")
    assert not window.close()
    assert window.isVisible()
    target = tmp_path / "kept.revs"
    dialogs.unsaved.append("save")
    dialogs.save_paths.append(str(target))
    window.actions_by_name["new"].trigger()
    assert target.exists() and window.document.graph.nodes == {}
    assert dialogs.asked.count("unsaved:revnet-tiny") == 3


def test_recent_files_menu_and_persistence(make_window, revnet, tmp_path):
    paths = []
    for i in range(3):
        p = tmp_path / f"r{i}.revs"
        save(revnet, str(p))
        paths.append(str(p))
    window = make_window()
    for p in paths:
        assert window.files.load_path(p)
    assert Settings().recent_files()[:3] == list(reversed(paths))
    labels = [a.text() for a in window.recent_menu.actions() if a.text()]
    assert paths[-1] in labels[0]
    fresh = make_window()  # a new session reads the same list
    assert paths[-1] in [a.text() for a in fresh.recent_menu.actions()][0]


def test_window_layout_persists(make_window):
    window = make_window()
    window.bottom_dock.hide()
    window.close()
    again = make_window()
    assert again.bottom_dock.isHidden()
    again.reset_layout()
    assert not again.bottom_dock.isHidden()


def test_examples_menu_opens_each_example_as_a_copy(make_window, dialogs, settle):
    found = examples()
    assert found, "resources/examples should hold the example projects"
    window = make_window()
    actions = [a for a in window.examples_menu.actions() if a.isEnabled()]
    assert len(actions) == len(found)
    for action in actions:
        action.trigger()
        settle()
        assert dialogs.errors == [], action.text()
        assert window.document.path is None and len(window.document.graph) > 0



def test_an_example_with_data_trains_from_the_menu_wherever_the_app_started(make_window, dialogs, settle,
                                                                             tmp_path, monkeypatch):
    """digits_revnet reads ../data/digits.npz beside the example; its untitled copy used to look for it
    under the working folder, so Train refused File > New from Example > digits revnet."""
    from revstudio.qt.training import section

    monkeypatch.chdir(tmp_path)
    window = make_window()
    (action,) = [a for a in window.examples_menu.actions() if a.text() == "digits revnet"]
    action.trigger()
    settle()
    training = window.document.graph.training
    assert window.document.path is None and Path(training["data"]).is_absolute()
    assert section.data_problem(training, window.document.path) is None
    assert not window.document.is_dirty() and window.document.undo_stack.count() == 0

# ---- autosave and recovery --------------------------------------------------
def test_autosave_writes_while_dirty_and_clean_save_removes_it(make_window, revnet_on_disk, tmp_path):
    path = revnet_on_disk()
    window = make_window(load(str(path)), str(path))
    saver = window.autosaver
    assert saver.timer.interval() == 10_000 and saver.timer.isActive() and saver.pause.interval() == 2_000
    assert not saver.save_now()  # nothing unsaved, nothing written
    window.tabs.main_view().select_nodes(["f"])
    window.inspector.editors["out_channels"].set_text("2")
    assert saver.save_now() and saver.recovery_file.exists()
    assert load(str(saver.recovery_file)).node("f").params["out_channels"] == 2
    window.actions_by_name["save"].trigger()
    assert not saver.recovery_file.exists()


def test_autosave_timer_fires(make_window, revnet, qtbot):
    window = make_window(revnet, autosave_ms=20)
    window.document.mark_dirty()
    qtbot.waitUntil(window.autosaver.recovery_file.exists, timeout=30_000)  # a hang guard


def test_recovery_is_offered_after_a_crash_and_restores_the_edits(make_window, revnet_on_disk, dialogs, tmp_path):
    store = RecoveryStore(tmp_path / "recovery")
    path = revnet_on_disk()
    edited = load(str(path))
    edited.set_param("f", "out_channels", 2)
    # What a crashed session left behind: an autosave newer than the document, from a dead pid.
    store.write(store.key_for(str(path), "x"), dumps(edited), str(path), edited.name)
    meta = next(store.folder.glob("*.json"))
    data = json.loads(meta.read_text())
    data["pid"], data["saved"] = 0, time.time() + 5
    meta.write_text(json.dumps(data))

    window = make_window()
    dialogs.restore.append("restore")
    assert window.offer_recovery()
    assert window.document.path == os.path.abspath(path)
    assert window.document.graph.node("f").params["out_channels"] == 2
    assert window.isWindowModified()  # restored edits are unsaved until the user saves
    assert dialogs.asked[0].startswith("restore:") and "doc.revs" in dialogs.asked[0]


def test_stale_and_foreign_recovery_files_are_not_offered(tmp_path, revnet):
    store = RecoveryStore(tmp_path / "rec")
    path = tmp_path / "doc.revs"
    store.write("k1", dumps(revnet), str(path), "n")
    meta = store.folder / "k1.json"
    data = json.loads(meta.read_text())
    data["pid"] = 0
    meta.write_text(json.dumps(data))
    save(revnet, str(path))  # the document was saved after the autosave: stale
    later = time.time() + 10
    os.utime(path, (later, later))
    assert store.pending() == [] and not meta.exists()
    store.write("k2", dumps(revnet), None, "untitled")  # our own pid: a live session
    assert store.pending() == []


def test_discarding_a_recovery_deletes_it(make_window, dialogs, revnet, tmp_path):
    store = RecoveryStore(tmp_path / "recovery")
    store.write("untitled-abc", dumps(revnet), None, "lost work")
    meta = store.folder / "untitled-abc.json"
    data = json.loads(meta.read_text())
    data["pid"] = 0
    meta.write_text(json.dumps(data))
    window = make_window()
    dialogs.restore.append("discard")
    assert not window.offer_recovery()
    assert list(store.folder.iterdir()) == []
    assert window.document.graph.nodes == {}


def test_new_graph_starts_clean(make_window):
    window = make_window(Graph("fresh"))
    assert not window.isWindowModified() and window.windowTitle().startswith("fresh")


def test_zoom_and_centre_are_saved_with_the_project_and_restored(make_window, revnet, dialogs, tmp_path, qtbot):
    window = make_window(revnet)
    view = window.tabs.main_view()
    view.reset_zoom()
    view.zoom_in()
    view.zoom_in()
    view.centerOn(300, 40)
    target = tmp_path / "view.revs"
    dialogs.save_paths.append(str(target))
    assert window.files.save()
    saved = load(str(target)).view
    assert saved["zoom"] == pytest.approx(view.zoom(), rel=1e-3)

    other = make_window()
    assert other.files.load_path(str(target))
    qtbot.waitUntil(lambda: abs(other.tabs.main_view().zoom() - saved["zoom"]) < 1e-3, timeout=30_000)
    centre = other.tabs.main_view().view_state()
    assert abs(centre["x"] - saved["x"]) < 2 and abs(centre["y"] - saved["y"]) < 2


@pytest.mark.parametrize("button, expected", [("Save", "save"), ("Discard", "discard"), ("Cancel", "cancel")])
def test_real_unsaved_changes_box_maps_its_buttons(qtbot, answer_next_box, button, expected):
    from PySide6.QtWidgets import QWidget

    from revstudio.qt.dialogs import Dialogs

    parent = QWidget()
    qtbot.addWidget(parent)
    seen = answer_next_box(button, exact=False)
    assert Dialogs().ask_unsaved(parent, "model.revs") == expected
    assert seen and "'model.revs' has changes" in seen[0]


@pytest.mark.parametrize("button, expected", [("Restore", "restore"), ("Discard", "discard"), ("Ask later", "later")])
def test_real_restore_box_maps_its_buttons(qtbot, answer_next_box, button, expected):
    from PySide6.QtWidgets import QWidget

    from revstudio.qt.dialogs import Dialogs

    parent = QWidget()
    qtbot.addWidget(parent)
    seen = answer_next_box(button, read="informativeText")
    assert Dialogs().ask_restore(parent, "/tmp/x.revs (autosaved now)") == expected
    assert seen and "/tmp/x.revs" in seen[0]


def test_a_missing_path_to_a_shipped_example_says_how_to_open_it(make_window, dialogs, tmp_path):
    """`revstudio resources/examples/revnet_wired.revs` (the README's path) after a pip install, away from a
    checkout, said only "check the path"."""
    from revstudio import resources

    window = make_window()
    assert not window.files.load_path(str(tmp_path / "resources" / "examples" / "revnet_wired.revs"))
    text = dialogs.errors[-1][1]
    assert "check the path" in text
    assert f"the example 'revnet_wired' installed with revstudio is {resources.example('revnet_wired')}" in text
    assert "File > New from Example > revnet wired" in text
    assert window.files.load_path(str(resources.example("revnet_wired")))
