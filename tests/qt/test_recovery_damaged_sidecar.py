"""A recovery copy whose sidecar is damaged (cut short, not JSON) is offered, never hidden.

The sidecar names the document a recovery copy belongs to. A damaged one made the copy beside it
invisible: skipped as "not ours to judge", and not offered as a copy without a sidecar either
(the sidecar file was there). Now the copy is offered, saying the sidecar was damaged: its
project's name is read from the copy, its file from the hash in the copy's name where a recent
file has it.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from revstudio.core.project import dumps, save
from revstudio.qt.autosave import ORPHAN_AGE_S, RecoveryStore


def _damage(store: RecoveryStore, key: str, age_s: float = 60.0) -> Path:
    """Cut ``key``'s sidecar short, as a crash of the disk's cache may leave it; both files ``age_s`` old."""
    meta = store.folder / f"{key}.json"
    meta.write_text(meta.read_text()[:17])
    when = time.time() - age_s
    for path in (meta, store.folder / f"{key}.revs"):
        os.utime(path, (when, when))
    return meta


def test_a_copy_with_a_damaged_sidecar_is_offered_for_its_recent_file(tmp_path, revnet) -> None:
    doc = tmp_path / "doc.revs"
    save(revnet, str(doc))
    store = RecoveryStore(tmp_path / "recovery")
    key = store.key_for(str(doc), "tok")
    revnet.name = "edited coupling"
    store.write(key, dumps(revnet), str(doc), "doc")
    _damage(store, key)
    with_file, = store.pending([str(doc)])
    assert with_file.path == os.path.abspath(doc) and with_file.damaged_sidecar
    text = with_file.describe()
    assert "recovery note was damaged" in text and "found from the copy's name" in text, text
    assert str(with_file.file) in text
    unknown, = store.pending([])  # (not among the recent files: offered all the same, of unknown file)
    assert unknown.path is None and unknown.name == "edited coupling" and "is not known" in unknown.describe()


def test_an_untitled_copy_with_a_damaged_sidecar_is_restored_and_then_cleared(make_window, dialogs, tmp_path,
                                                                               revnet) -> None:
    store = RecoveryStore(tmp_path / "recovery")
    revnet.name = "lost work"
    store.write("untitled-abc", dumps(revnet), None, "lost work")
    meta = _damage(store, "untitled-abc")
    window = make_window()  # (its recovery folder is tmp_path / "recovery")
    dialogs.restore.append("restore")
    assert window.offer_recovery()
    assert window.document.graph.name == "lost work" and window.document.path is None
    asked = [a for a in dialogs.asked if a.startswith("restore:")]
    assert len(asked) == 1 and "unsaved project 'lost work'" in asked[0] and "damaged" in asked[0], asked
    assert not meta.exists() and not (store.folder / "untitled-abc.revs").exists()  # (restored: both go)


def test_a_young_copy_with_a_damaged_sidecar_waits_and_is_kept(tmp_path, revnet) -> None:
    # (it may be a running session's, whose next autosave rewrites the sidecar)
    store = RecoveryStore(tmp_path / "recovery")
    store.write("untitled-young", dumps(revnet), None, "young")
    _damage(store, "untitled-young", age_s=ORPHAN_AGE_S / 10)
    assert store.pending([]) == []
    assert (store.folder / "untitled-young.revs").exists() and (store.folder / "untitled-young.json").exists()
