"""A save or an autosave that cannot be written (a full disk, a read-only folder) is said plainly.

The user must learn that the recovery copy is missing while there is still time to
Save As elsewhere, the crash message must not claim the work is autosaved, and a failed
save keeps the file on disk and the edits in the window.
"""
from __future__ import annotations

import errno

from PySide6.QtWidgets import QMessageBox


def _full_disk(*_args, **_kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_failed_autosave_shows_in_the_status_bar(make_window, revnet, monkeypatch):
    window = make_window(revnet)
    window.document.mark_dirty()
    monkeypatch.setattr(window.recovery, "write", _full_disk)
    assert not window.autosaver.save_now()
    message = window.statusBar().currentMessage()
    assert "autosave" in message.lower() and "No space left on device" in message and "Save As" in message


def test_the_crash_message_does_not_claim_a_failed_autosave(make_window, revnet, monkeypatch):
    from revstudio.qt.app import make_excepthook

    window = make_window(revnet)
    window.document.mark_dirty()
    monkeypatch.setattr(window.recovery, "write", _full_disk)
    shown: list[str] = []
    monkeypatch.setattr(QMessageBox, "warning", lambda parent, title, text: shown.append(text))
    hook = make_excepthook(lambda: window)
    try:
        raise RuntimeError("boom in a slot")
    except RuntimeError as exc:
        hook(RuntimeError, exc, exc.__traceback__)
    assert shown and "boom in a slot" in shown[0]
    assert "Your work is autosaved" not in shown[0] and "Save As" in shown[0]


def test_a_save_on_a_full_disk_names_the_file_once_and_keeps_the_edits(make_window, revnet, dialogs,
                                                                        tmp_path, monkeypatch):
    from revstudio.core import tempfiles
    from revstudio.core.project import load, save

    path = str(tmp_path / "doc.revs")
    save(revnet, path)
    window = make_window(load(path), path)
    window.document.graph.add_node("Activation", "mine", {}, (0, 0))
    window.document.mark_dirty()
    monkeypatch.setattr(tempfiles.os, "fsync", _full_disk)
    assert not window.files.save()
    title, text = dialogs.errors[-1]
    assert text.count(path) == 1 and "No space left on device" in text and "Save As" in text
    assert "unchanged" in text and "mine" not in load(path).nodes and window.document.is_dirty()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".doc.revs")] == []  # no temp left


def test_save_refuses_to_replace_a_read_only_file(make_window, revnet, dialogs, tmp_path):
    import os

    from revstudio.core.project import load, save

    path = str(tmp_path / "reference.revs")
    save(revnet, path)
    os.chmod(path, 0o444)  # protected by its owner (a shared reference project)
    window = make_window(load(path), path)
    window.document.graph.add_node("Activation", "mine", {}, (0, 0))
    window.document.mark_dirty()
    assert not window.files.save()
    title, text = dialogs.errors[-1]
    assert path in text and "read-only" in text and "Save As" in text
    assert "mine" not in load(path).nodes and window.document.is_dirty()
    assert os.stat(path).st_mode & 0o777 == 0o444
