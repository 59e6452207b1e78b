"""A kill at any point of an autosave's writes: the next start offers every copy that reached the disk.

An autosave writes two files (the project text and its sidecar). A child process writes two
autosaves of one document and is SIGKILLed at the k-th rename of its atomic writes (so also with
a temp file left behind), or after all of them; each rename that got through is logged (fsynced)
before the next step. The next start must offer the newest text that was renamed into place,
for the right document, and leave no temp file or lone sidecar behind. Recovery files of the
older format (a sidecar without a digest; a text whose sidecar was never written) still load.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from revstudio.core.graph import Graph
from revstudio.core.project import dumps, save
from revstudio.qt.autosave import RecoveryStore

ROOT = Path(__file__).resolve().parents[2]

CHILD = r"""
import os, signal, sys, types
import revstudio.qt.autosave as autosave
from revstudio.qt.autosave import RecoveryStore

folder, doc, kill_at, log_path, base, *texts = sys.argv[1:]
log = open(log_path, "a")
real, calls = os.replace, [0]

def replace(src, dst):
    calls[0] += 1
    if calls[0] == int(kill_at):
        os.kill(os.getpid(), signal.SIGKILL)  # the temp file is written, the rename never happens
    real(src, dst)
    log.write(os.path.basename(dst) + "\n")
    log.flush()
    os.fsync(log.fileno())

os.replace = replace  # (write_atomic's rename)
store = RecoveryStore(folder)
key = store.key_for(doc, "tok")
for i, text_file in enumerate(texts):
    autosave.time = types.SimpleNamespace(time=lambda: float(base) + i)  # the sidecar's "saved"
    store.write(key, open(text_file, encoding="utf-8").read(), doc, f"version {i + 1}")
os.kill(os.getpid(), signal.SIGKILL)  # killed after the last write: the copy is kept
"""


def _edited(graph: Graph, channels: int) -> Graph:
    graph = graph.copy()
    graph.set_param("f", "out_channels", channels)
    return graph


def _age_leftovers(folder: Path, pattern: str = "*") -> None:
    """The next start comes later than the kill (a temp file written this second is left alone)."""
    an_hour_ago = time.time() - 3600
    for p in folder.glob(pattern):
        os.utime(p, (an_hour_ago, an_hour_ago))


# 2 autosaves x 2 files = 4 renames: killed at each of them, and after the last
@pytest.mark.parametrize("kill_at", [1, 2, 3, 4, 5])
def test_a_kill_at_any_write_of_an_autosave_still_offers_what_reached_the_disk(
        kill_at, tmp_path, revnet, make_window, dialogs):
    doc = tmp_path / "doc.revs"
    save(revnet, str(doc))
    an_hour_ago = time.time() - 3600
    os.utime(doc, (an_hour_ago, an_hour_ago))  # saved before the session's edits
    texts = [dumps(_edited(revnet, channels)) for channels in (2, 3)]
    text_files = []
    for i, text in enumerate(texts):
        text_files.append(tmp_path / f"text{i}.revs")
        text_files[-1].write_text(text, encoding="utf-8")
    folder, log = tmp_path / "recovery", tmp_path / "renames.log"
    folder.mkdir()
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    base = time.time() - 1800  # (after the document's save)
    out = subprocess.run([sys.executable, "-c", CHILD, str(folder), str(doc), str(kill_at), str(log), str(base),
                          *map(str, text_files)], capture_output=True, text=True, env=env, timeout=120,
                         cwd=ROOT)
    assert out.returncode == -signal.SIGKILL, out.stderr
    renamed = log.read_text().split() if log.exists() else []
    copies = sum(name.endswith(".revs") for name in renamed)  # autosave texts that reached the disk
    sidecars = sum(name.endswith(".json") for name in renamed)
    _age_leftovers(folder, ".*.tmp")

    found = RecoveryStore(folder).pending()
    assert not list(folder.glob(".*.tmp"))  # the killed write's temp file is cleaned at start
    if copies == 0:  # killed before any text was on disk: nothing to offer, nothing left behind
        assert found == [] and list(folder.iterdir()) == []
        return
    assert [r.file.read_text(encoding="utf-8") for r in found] == [texts[copies - 1]], (renamed, found)
    assert found[0].path == str(doc) and not found[0].changed_on_disk
    # offered as of the copy's own autosave, not of a later sidecar whose copy never landed
    assert found[0].saved == (base + copies - 1 if sidecars == copies else found[0].file.stat().st_mtime)
    dialogs.restore.append("restore")
    window = make_window()
    assert window.offer_recovery()
    assert window.document.path == str(doc) and window.document.is_dirty()
    assert window.document.graph.node("f").params["out_channels"] == (2, 3)[copies - 1]


def _old_pair(store: RecoveryStore, key: str, text: str, path: str | None, name: str) -> None:
    """What the previous revstudio wrote: the text, then a sidecar without a digest."""
    store.folder.mkdir(parents=True, exist_ok=True)
    (store.folder / f"{key}.revs").write_text(text, encoding="utf-8")
    (store.folder / f"{key}.json").write_text(json.dumps(
        {"path": path, "name": name, "saved": time.time() - 60, "pid": 0, "proc": "gone", "disk": None}))


def test_a_copy_whose_sidecar_a_kill_prevented_is_offered_as_a_project_of_unknown_file(
        tmp_path, revnet, make_window, dialogs):
    store = RecoveryStore(tmp_path / "recovery")
    _old_pair(store, "0123456789abcdef-dead", dumps(_edited(revnet, 2)), str(tmp_path / "doc.revs"), "doc")
    (store.folder / "0123456789abcdef-dead.json").unlink()  # the older revstudio was killed before it
    _age_leftovers(store.folder)
    found = store.pending()
    assert [r.name for r in found] == [revnet.name] and found[0].path is None
    assert "which file it was is not known" in found[0].describe()
    dialogs.restore.append("restore")
    window = make_window()
    assert window.offer_recovery()
    assert window.document.path is None and window.document.is_dirty()
    assert window.document.graph.node("f").params["out_channels"] == 2
    assert list(store.folder.glob("0123456789abcdef-dead.*")) == []  # restored: its file went


def test_a_copy_just_written_without_its_sidecar_is_not_offered_yet(tmp_path, revnet):
    store = RecoveryStore(tmp_path / "recovery")
    _old_pair(store, "untitled-live", dumps(revnet), None, "n")
    (store.folder / "untitled-live.json").unlink()  # an older revstudio between its two writes
    assert store.pending() == [] and (store.folder / "untitled-live.revs").exists()


def test_recovery_files_of_the_previous_format_still_load(tmp_path, revnet, make_window, dialogs):
    store = RecoveryStore(tmp_path / "recovery")
    doc = tmp_path / "doc.revs"
    save(revnet, str(doc))
    an_hour_ago = time.time() - 3600
    os.utime(doc, (an_hour_ago, an_hour_ago))
    _old_pair(store, store.key_for(str(doc), "old"), dumps(_edited(revnet, 2)), str(doc), "doc")
    found = store.pending()
    assert [r.path for r in found] == [str(doc)]
    dialogs.restore.append("restore")
    window = make_window()
    assert window.offer_recovery() and window.document.path == str(doc)
    assert window.document.graph.node("f").params["out_channels"] == 2


def test_a_live_sessions_sidecar_without_its_text_is_left_alone(tmp_path, revnet):
    store = RecoveryStore(tmp_path / "recovery")
    store.write("untitled-live", dumps(revnet), None, "n")  # our own pid: a live session
    (store.folder / "untitled-live.revs").unlink()  # (between its sidecar and its text)
    assert store.pending() == [] and (store.folder / "untitled-live.json").exists()


def test_a_copy_without_a_sidecar_is_offered_for_its_file_when_that_is_a_recent_file(
        tmp_path, revnet, make_window, dialogs):
    doc = tmp_path / "doc.revs"
    save(revnet, str(doc))
    an_hour_ago = time.time() - 3600
    os.utime(doc, (an_hour_ago, an_hour_ago))
    store = RecoveryStore(tmp_path / "recovery")
    key = store.key_for(str(doc), "dead")  # (its name holds a hash of the document's path)
    _old_pair(store, key, dumps(_edited(revnet, 2)), str(doc), "doc")
    (store.folder / f"{key}.json").unlink()  # the older revstudio was killed before it
    _age_leftovers(store.folder)
    window = make_window()
    window.settings.add_recent(str(tmp_path / "other.revs"))
    window.settings.add_recent(str(doc))
    dialogs.restore.append("restore")
    assert window.offer_recovery()
    assert window.document.path == str(doc) and window.document.is_dirty()
    assert window.document.graph.node("f").params["out_channels"] == 2
    assert dialogs.asked[0].startswith(f"restore:{doc} (autosaved")


def test_a_dead_sessions_sidecar_is_kept_while_its_copy_is_there_but_unreadable(tmp_path, revnet):
    store = RecoveryStore(tmp_path / "recovery")
    _old_pair(store, "untitled-abc", dumps(revnet), None, "n")
    (store.folder / "untitled-abc.revs").unlink()
    (store.folder / "untitled-abc.revs").mkdir()  # (reading it fails, but not as "missing")
    assert store.pending() == [] and (store.folder / "untitled-abc.json").exists()
