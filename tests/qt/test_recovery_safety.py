"""Recovery files that must survive: two sessions on one file, a reused pid, a file touched on disk.

Each test plays what a crashed or parallel session leaves in the recovery folder
and checks that the autosaved edits are still offered (never deleted unasked).
"""
from __future__ import annotations

import json
import subprocess
import sys
import time

from revstudio.core.graph import Graph
from revstudio.core.project import dumps, load, save
from revstudio.qt.autosave import RecoveryStore


def _edited(graph: Graph, channels: int) -> Graph:
    graph.set_param("f", "out_channels", channels)
    return graph


def _orphan(store: RecoveryStore, **meta: object) -> None:
    """Make every recovery file of ``store`` look like the leftover of a dead session."""
    for path in store.folder.glob("*.json"):
        data = json.loads(path.read_text())
        data.update(meta)
        path.write_text(json.dumps(data))


def test_two_windows_on_one_file_keep_their_own_recovery_files(make_window, revnet, tmp_path, settle):
    path = tmp_path / "doc.revs"
    save(revnet, str(path))
    first = make_window(Graph(), str(path))
    second = make_window(Graph(), str(path))
    for window, channels in ((first, 2), (second, 6)):
        window.document.graph.add_node("Activation", f"a{channels}", {}, (0, 0))
        window.document.mark_dirty()
        assert window.autosaver.save_now()
    assert first.autosaver.recovery_file != second.autosaver.recovery_file
    # The first window closes cleanly: the second one's autosave is not its to delete.
    first.autosaver.discard()
    assert second.autosaver.recovery_file.exists()
    assert "a6" in second.autosaver.recovery_file.read_text()


def test_a_recovery_whose_pid_now_belongs_to_another_program_is_offered(tmp_path, revnet):
    store = RecoveryStore(tmp_path / "rec")
    store.write("untitled-abc", dumps(revnet), None, "lost work")
    # After a reboot (or a long time) the crashed session's pid is some other live program's.
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        _orphan(store, pid=other.pid)
        found = store.pending()
    finally:
        other.kill()
        other.wait()
    assert [r.name for r in found] == ["lost work"]


def test_a_recovery_is_kept_when_another_program_rewrote_the_document(tmp_path, revnet):
    store = RecoveryStore(tmp_path / "rec")
    path = tmp_path / "doc.revs"
    save(revnet, str(path))
    store.write(store.key_for(str(path), "x"), dumps(_edited(revnet, 2)), str(path), "doc")
    _orphan(store, pid=0, saved=time.time() - 60)
    # After the crash, a `git pull` or a sync tool rewrites the document: it is newer than the
    # autosave but holds none of its edits, which must still be offered, not deleted.
    save(_edited(revnet.copy(), 5), str(path))
    found = store.pending()
    assert len(found) == 1 and found[0].file.exists()
    assert "changed on disk" in found[0].describe()


def test_a_damaged_sidecar_is_skipped_not_a_crash_at_start(make_window, dialogs, tmp_path, revnet):
    store = RecoveryStore(tmp_path / "recovery")
    store.write("untitled-abc", dumps(revnet), None, "lost work")
    store.write("untitled-def", dumps(revnet), None, "other work")
    _orphan(store, pid=0)
    (store.folder / "untitled-abc.json").write_text(json.dumps({"saved": 1.0, "pid": "12x", "path": 7}))
    window = make_window()
    dialogs.restore.append("restore")
    assert window.offer_recovery()  # the readable one is offered, the damaged one does not stop it
    assert window.document.graph.name == revnet.name and window.document.path is None


def test_saving_a_restored_recovery_asks_before_overwriting_the_file_changed_since(
        make_window, dialogs, tmp_path, revnet):
    path = tmp_path / "doc.revs"
    save(revnet, str(path))
    crashed = make_window(Graph(), None)
    crashed.files.load_path(str(path))
    crashed.document.graph.add_node("Activation", "mine", {}, (0, 0))
    crashed.document.mark_dirty()
    assert crashed.autosaver.save_now()
    _orphan(RecoveryStore(tmp_path / "recovery"), pid=0, proc="gone", saved=time.time() - 60)
    crashed.autosaver.timer.stop()
    left = {p: p.read_bytes() for p in (tmp_path / "recovery").iterdir()}
    crashed.close()  # (a clean close removes them: put back what the crash would have left)
    for p, data in left.items():
        p.write_bytes(data)
    save(_edited(revnet.copy(), 5), str(path))  # another program, after the crash
    window = make_window()
    dialogs.restore.append("restore")
    assert window.offer_recovery() and "mine" in window.document.graph.nodes
    dialogs.overwrites.append("cancel")
    assert not window.files.save()
    assert dialogs.asked[-1] == f"overwrite:{path}"
    assert "mine" not in load(str(path)).nodes


def test_a_recovery_file_that_cannot_be_read_is_kept_and_the_message_says_what_to_do(
        make_window, dialogs, tmp_path, revnet):
    store = RecoveryStore(tmp_path / "recovery")
    newer = dumps(revnet).replace('"version": 1', '"version": 7')  # written by a newer revstudio
    store.write("untitled-abc", newer, None, "lost work")
    _orphan(store, pid=0)
    window = make_window()
    dialogs.restore.append("restore")
    assert not window.offer_recovery()
    title, text = dialogs.errors[-1]
    assert "newer revstudio" in text and "damaged" not in text  # the edits are there, not broken
    assert str(store.folder / "untitled-abc.revs") in text and "Ask later" in text and "Discard" in text
    assert (store.folder / "untitled-abc.revs").exists() and store.pending()


def test_leftovers_of_killed_autosaves_are_cleaned_at_start(tmp_path, revnet):
    import os

    store = RecoveryStore(tmp_path / "rec")
    store.write("0123456789abcdef-aaaa", dumps(revnet), None, "n")
    old = store.folder / ".0123456789abcdef-dead.revs.k2j4h5g6.tmp"  # a session killed mid-autosave
    old.write_text("{half")
    an_hour_ago = time.time() - 3600
    os.utime(old, (an_hour_ago, an_hour_ago))
    live = store.folder / ".0123456789abcdef-live.json.abcdefgh.tmp"  # being written right now
    live.write_text("{")
    store.pending()
    assert not old.exists() and live.exists()
    assert (store.folder / "0123456789abcdef-aaaa.revs").exists()
