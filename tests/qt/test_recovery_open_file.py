"""A file named at start, or opened from the File menu, with autosaved copies from a crash waiting.

`revstudio b.revs` must open b.revs: only b's own copy is offered there, never a newer copy of
another project (which would replace the file asked for); the others are named in the status bar
and offered when their file is opened. File > Open of a file with a copy offers it too.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

from revstudio.core.graph import Graph
from revstudio.core.project import dumps, save
from revstudio.qt.autosave import RecoveryStore


def _crashed_copies(tmp_path: Path, revnet: Graph, *names: str) -> dict[str, str]:
    """Save each ``name``.revs and leave, as a killed session would, an autosaved copy of it holding
    one more node, ``edit_<name>``; the copies are older the later their name comes. Returns the paths."""
    store = RecoveryStore(tmp_path / "recovery")
    paths = {}
    for age, name in enumerate(names):
        path = str(tmp_path / f"{name}.revs")
        save(revnet, path)
        edited = revnet.copy()
        edited.add_node("Activation", f"edit_{name}", {}, (0, 300))
        store.write(store.key_for(path, name), dumps(edited), path, name)
        meta = store.folder / f"{store.key_for(path, name)}.json"
        data = json.loads(meta.read_text())
        data.update(pid=0, proc="gone", saved=time.time() - 60 - 10 * age)
        meta.write_text(json.dumps(data))
        paths[name] = path
    return paths


def _open_at_start(window, qtbot, path: str | None) -> None:
    done: list[bool] = []
    window.opened.connect(lambda: done.append(True))
    window.open_later(path)
    qtbot.waitUntil(lambda: bool(done), timeout=30_000)


def test_the_file_named_at_start_opens_with_its_own_copy_not_another_projects(
        make_window, dialogs, qtbot, tmp_path, revnet):
    paths = _crashed_copies(tmp_path, revnet, "newer", "asked")
    window = make_window()
    dialogs.restore.append("restore")
    _open_at_start(window, qtbot, paths["asked"])
    offers = [a for a in dialogs.asked if a.startswith("restore:")]
    assert len(offers) == 1 and paths["asked"] in offers[0]
    assert window.document.path == paths["asked"] and "edit_asked" in window.document.graph.nodes
    assert window.document.is_dirty()
    # the other project's copy is kept for its file, and the status bar says it waits
    left = RecoveryStore(tmp_path / "recovery").pending()
    assert [r.path for r in left if r.path != paths["asked"]] == [paths["newer"]]
    note = window.status_bar.currentMessage()
    assert "newer.revs" in note and "open its file" in note
    assert window.settings.recent_files()[0] == paths["asked"]


def test_ask_later_at_start_opens_the_named_file_from_disk(make_window, dialogs, qtbot, tmp_path, revnet):
    paths = _crashed_copies(tmp_path, revnet, "newer", "asked")
    window = make_window()
    dialogs.restore.append("later")
    _open_at_start(window, qtbot, paths["asked"])
    assert window.document.path == paths["asked"]
    assert "edit_asked" not in window.document.graph.nodes and "edit_newer" not in window.document.graph.nodes
    assert not window.document.is_dirty()
    assert len(RecoveryStore(tmp_path / "recovery").pending()) == 2  # both kept for later


def test_a_start_with_no_copy_of_the_named_file_opens_it_unasked(make_window, dialogs, qtbot, tmp_path, revnet):
    paths = _crashed_copies(tmp_path, revnet, "other")
    asked = str(tmp_path / "plain.revs")
    save(revnet, asked)
    window = make_window()
    _open_at_start(window, qtbot, asked)
    assert not [a for a in dialogs.asked if a.startswith("restore:")]
    assert window.document.path == asked and not window.document.is_dirty()
    assert "other.revs" in window.status_bar.currentMessage()
    assert RecoveryStore(tmp_path / "recovery").pending()[0].path == paths["other"]


def test_file_open_of_a_file_with_a_copy_from_a_crash_offers_it(make_window, dialogs, tmp_path, revnet):
    paths = _crashed_copies(tmp_path, revnet, "newer", "asked")
    window = make_window()
    dialogs.restore.append("restore")
    assert window.files.open_file(paths["asked"])
    offers = [a for a in dialogs.asked if a.startswith("restore:")]
    assert len(offers) == 1 and paths["asked"] in offers[0]
    assert window.document.path == paths["asked"] and "edit_asked" in window.document.graph.nodes
    # Discard at File > Open deletes the copy and opens the file as it is on disk
    dialogs.unsaved.append("discard")
    dialogs.restore.append("discard")
    assert window.files.open_file(paths["newer"])
    assert window.document.path == paths["newer"] and "edit_newer" not in window.document.graph.nodes
    assert not [r for r in RecoveryStore(tmp_path / "recovery").pending() if r.path == paths["newer"]]


def test_a_start_without_a_file_still_offers_the_newest_copy(make_window, dialogs, qtbot, tmp_path, revnet):
    paths = _crashed_copies(tmp_path, revnet, "newer", "older")
    window = make_window()
    dialogs.restore.append("restore")
    _open_at_start(window, qtbot, None)
    assert window.document.path == paths["newer"] and "edit_newer" in window.document.graph.nodes


def test_the_restore_question_names_every_way_a_window_ends_unclosed(qtbot, answer_next_box):
    # after a logout (SIGTERM keeps the copy on purpose) or at File > Open, "revstudio did not close
    # cleanly last time" read as a crash of the previous start
    from revstudio.qt.dialogs import Dialogs

    seen = answer_next_box("Ask later")
    assert Dialogs().ask_restore(None, "/tmp/b.revs (autosaved 2026-12-07 09:12:07)") == "later"
    assert "ended without closing normally" in seen[0] and "logout" in seen[0]
    assert "last time" not in seen[0]
