"""The open project's file changed or deleted on disk by another program (or another window).

Saving must not overwrite someone else's version silently, and coming back to the
window says what happened (a clean document offers to reload it).
"""
from __future__ import annotations

import os

import pytest
from PySide6.QtCore import QEvent
from PySide6.QtWidgets import QApplication

from revstudio.core.project import load, save


def _rewrite_elsewhere(path: str, channels: int) -> None:
    """What another program (or another revstudio window) does to the file meanwhile."""
    other = load(path)
    other.set_param("f", "out_channels", channels)
    save(other, path)
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))  # a coarse clock still sees it


def _activate(window, settle) -> None:
    """The user comes back to the window from another program."""
    QApplication.sendEvent(window, QEvent(QEvent.Type.WindowActivate))
    settle()


def _edit(window) -> None:
    window.document.graph.add_node("Activation", "mine", {}, (0, 0))
    window.document.mark_dirty()


def test_save_asks_before_overwriting_a_file_changed_on_disk(make_window, revnet_on_disk, dialogs, tmp_path):
    path = revnet_on_disk()
    window = make_window(load(path), path)
    _edit(window)
    _rewrite_elsewhere(path, 6)
    dialogs.overwrites.append("cancel")
    assert not window.files.save()
    assert load(path).node("f").params["out_channels"] == 6  # the other program's version is kept
    assert window.document.is_dirty()
    assert dialogs.asked[-1].startswith("overwrite:") and "doc.revs" in dialogs.asked[-1]
    dialogs.overwrites.append("overwrite")
    assert window.files.save()
    assert "mine" in load(path).nodes and not window.document.is_dirty()
    assert window.files.save() and dialogs.asked.count("overwrite:" + path) == 2  # not again


def test_save_as_instead_keeps_both_versions(make_window, revnet_on_disk, dialogs, tmp_path):
    path = revnet_on_disk()
    window = make_window(load(path), path)
    _edit(window)
    _rewrite_elsewhere(path, 6)
    copy = str(tmp_path / "mine.revs")
    dialogs.overwrites.append("save_as")
    dialogs.save_paths.append(copy)
    assert window.files.save()
    assert load(path).node("f").params["out_channels"] == 6 and "mine" in load(copy).nodes


def test_coming_back_to_the_window_offers_to_reload_a_clean_document(make_window, revnet_on_disk, dialogs, tmp_path, settle):
    path = revnet_on_disk()
    window = make_window(load(path), path)
    _rewrite_elsewhere(path, 6)
    dialogs.confirms.append(True)
    _activate(window, settle)
    assert any(a.startswith("confirm:") for a in dialogs.asked)
    assert window.document.graph.node("f").params["out_channels"] == 6
    before = len(dialogs.asked)
    _activate(window, settle)
    assert len(dialogs.asked) == before  # reloaded: nothing more to ask


def test_coming_back_with_unsaved_edits_keeps_them_and_says_the_file_was_deleted(make_window, revnet_on_disk, dialogs, tmp_path, settle):
    path = revnet_on_disk()
    window = make_window(load(path), path)
    _edit(window)
    os.remove(path)
    _activate(window, settle)
    assert "deleted" in window.statusBar().currentMessage() and "doc.revs" in window.statusBar().currentMessage()
    assert window.document.is_dirty() and "mine" in window.document.graph.nodes
    assert window.files.save() and "mine" in load(path).nodes  # saving writes it back, no question
    assert not any(a.startswith("overwrite:") for a in dialogs.asked)


@pytest.mark.parametrize("button, expected", [("Overwrite", "overwrite"), ("Save As…", "save_as"),
                                              ("Cancel", "cancel")])
def test_real_overwrite_box_maps_its_buttons(qtbot, answer_next_box, button, expected):
    from PySide6.QtWidgets import QWidget

    from revstudio.qt.dialogs import Dialogs

    parent = QWidget()
    qtbot.addWidget(parent)
    seen = answer_next_box(button)
    assert Dialogs().ask_overwrite(parent, "/tmp/x.revs") == expected
    assert seen and "/tmp/x.revs was changed by another program" in seen[0]


def test_a_file_only_touched_on_disk_saves_without_a_question(make_window, revnet_on_disk, dialogs, tmp_path, settle):
    path = revnet_on_disk()
    window = make_window(load(path), path)
    _edit(window)
    later = os.stat(path).st_mtime + 5
    os.utime(path, (later, later))  # `touch`, a sync tool rewriting the same bytes, a checkout
    _activate(window, settle)
    assert window.files.save() and "mine" in load(path).nodes
    assert not any(a.startswith(("overwrite:", "confirm:")) for a in dialogs.asked)


def test_a_deleted_folder_points_to_save_as(make_window, revnet_on_disk, dialogs, tmp_path, settle):
    folder = tmp_path / "project"
    folder.mkdir()
    path = revnet_on_disk(folder)
    window = make_window(load(path), path)
    _edit(window)
    os.remove(path)
    folder.rmdir()
    _activate(window, settle)
    message = window.statusBar().currentMessage()
    assert "folder" in message and "Save As" in message and "Save writes it again" not in message


def test_closing_a_project_deleted_on_disk_asks_first(make_window, revnet, revnet_on_disk, dialogs, tmp_path):
    path = revnet_on_disk()
    window = make_window(load(path), path)  # no edits: the window holds the only copy once it is gone
    os.remove(path)
    dialogs.unsaved.append("save")
    assert window.close()
    assert dialogs.asked[-1].startswith("unsaved:doc.revs") and "deleted" in dialogs.asked[-1]
    assert load(path).node("f").params == revnet.node("f").params  # written back


def test_a_project_deleted_on_disk_is_autosaved_though_unedited(make_window, revnet_on_disk, tmp_path):
    path = revnet_on_disk()
    window = make_window(load(path), path)
    os.remove(path)  # a crash now would lose the only copy, which is in this window
    assert window.autosaver.save_now()
    assert "f" in load(str(window.autosaver.recovery_file)).nodes
