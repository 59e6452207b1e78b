"""Crash recovery: the open document is autosaved to a recovery file 2 s after each pause in editing.

One recovery file per open document and session lives in ``recovery`` in revstudio's data folder
with a small JSON sidecar naming the document and the session that wrote it. A clean
save or close removes both; on start, recovery files of dead sessions are offered for
restoring unless their document on disk already holds exactly the same text.

The sidecar is written first and names the text it announces by digest, then the text: a kill
between the two leaves a sidecar announcing text that is not there (the previous copy, offered
as of its own time, or none, and the sidecar goes). A copy without a sidecar (left by an older
revstudio killed between its writes, text first) is still offered: for the recent file whose
path hash its name holds, else as a project of unknown file; so is a copy whose sidecar is damaged
(cut short, not JSON), saying so: what the sidecar would have said is read from the copy itself.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import re
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QObject, QTimer, Signal

from revstudio.core import app_data
from revstudio.core.processes import process_stamp
from revstudio.core.tempfiles import remove_stale, write_atomic
from revstudio.qt.autosave_writer import RecoveryWriter, Snapshot
from revstudio.qt.document import Document

# The copy is written once editing pauses this long; while edits keep coming without a pause,
# at the latest every AUTOSAVE_MS (Preferences: "Autosave at least every").
PAUSE_MS = 2_000
AUTOSAVE_MS = 10_000
# A recovery copy without a sidecar is offered once this much older than its last write: the
# older revstudio that can leave one wrote its sidecar right after it (no live session's copy).
ORPHAN_AGE_S = 10.0
# ``write_atomic``'s temp files here: ".<key>.revs." or ".<key>.json." + 8 random characters + ".tmp"
_LEFTOVER = re.compile(r"(\.[\w-]+\.(?:revs|json)\.)[a-z0-9_]{8}\.tmp")
log = logging.getLogger("revstudio")


def default_recovery_dir() -> Path:
    """``recovery`` in revstudio's data folder (``core.app_data``; an earlier revstudio's copies, in
    ``.../revstudio/revstudio/recovery``, are moved there first, so a crash's copy is still offered)."""
    return Path(app_data.path("recovery"))


@dataclass(frozen=True)
class Recovery:
    """One recovery file found on disk."""

    file: Path          # the autosaved project text
    meta: Path          # its sidecar
    path: str | None    # the document it belongs to (None: never saved)
    name: str
    saved: float        # time.time() of the autosave
    changed_on_disk: bool = False  # the document was rewritten (by another program) after it
    disk: tuple[int, int, int] | None = None  # the document's file as the crashed session knew it
    orphan: bool = False  # no sidecar: which file it belongs to is not known
    damaged_sidecar: bool = False  # its sidecar is there but damaged: what it said is read from the copy

    def describe(self) -> str:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.saved))
        what = self.path or (f"project '{self.name}' (which file it was is not known: Save As to keep it)"
                             if self.orphan else f"unsaved project '{self.name}'")
        note = "; the file was changed on disk after this autosave" if self.changed_on_disk else ""
        if self.damaged_sidecar:
            note += ("; its recovery note was damaged, so the project's name is the copy's own and its file "
                     + ("was found from the copy's name" if self.path else "is not known")
                     + f"; the copy is {self.file}")
        return f"{what} (autosaved {when}{note})"

    def discard(self) -> None:
        for p in (self.file, self.meta):
            try:
                p.unlink()
            except OSError:
                pass


def _writer_alive(pid: int, stamp: object) -> bool:
    """True if the session that wrote a recovery file still runs (it is not a crash)."""
    if isinstance(stamp, str) and process_stamp(os.getpid()) is not None:
        return process_stamp(pid) == stamp  # a reused pid is another program: the writer is gone
    return _pid_alive(pid)


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True  # written by this very session
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class RecoveryStore:
    """The folder of recovery files."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = Path(folder) if folder is not None else default_recovery_dir()

    def key_for(self, path: str | None, token: str) -> str:
        if path:  # the session's token too: two windows on one file must not share (or delete) one
            return f"{_path_hash(path)}-{token}"
        return f"untitled-{token}"

    def write(self, key: str, text: str, path: str | None, name: str,
              disk: tuple[int, int, int] | None = None) -> Path:
        self.folder.mkdir(parents=True, exist_ok=True)
        target = self.folder / f"{key}.revs"
        meta = {"path": os.path.abspath(path) if path else None, "name": name,
                "saved": time.time(), "pid": os.getpid(), "proc": process_stamp(os.getpid()),
                "disk": list(disk) if disk else None, "sha256": _digest(text.encode("utf-8"))}
        # The sidecar first: a kill between the two writes then leaves the previous copy (or none)
        # under a sidecar that says it is not the text announced, never a copy without a sidecar.
        write_atomic(self.folder / f"{key}.json", json.dumps(meta))
        write_atomic(target, text)
        return target

    def remove(self, key: str) -> None:
        for suffix in (".revs", ".json"):  # the text first: a kill between leaves no copy without a sidecar
            try:
                (self.folder / f"{key}{suffix}").unlink()
            except OSError:
                pass

    def _remove_leftovers(self) -> None:
        """Temp files of autosaves killed mid-write: each session writes under its own names, so no
        later autosave of the same name would ever clear them (only unlocked, older ones go)."""
        started = time.time()
        for prefix in {m.group(1) for p in self.folder.iterdir() if (m := _LEFTOVER.fullmatch(p.name))}:
            remove_stale(str(self.folder), prefix, ".tmp", started)

    def pending(self, known: Iterable[str] = ()) -> list[Recovery]:
        """Recovery files worth offering, newest first; stale ones are removed. ``known``: files
        a copy without a sidecar may belong to (its name holds a hash of its file's path)."""
        found: list[Recovery] = []
        if not self.folder.is_dir():
            return found
        self._remove_leftovers()
        paths = {_path_hash(p): os.path.abspath(p) for p in known}
        for meta_path in self.folder.glob("*.json"):
            rec = self._from_sidecar(meta_path, paths)
            if rec is not None:
                found.append(rec)
        found.extend(self._orphans(paths))
        found.sort(key=lambda r: r.saved, reverse=True)
        return found

    def _from_sidecar(self, meta_path: Path, paths: dict[str, str]) -> Recovery | None:
        file = meta_path.with_suffix(".revs")
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            saved, pid, path = float(meta["saved"]), int(meta.get("pid", 0)), meta.get("path")
            if path is not None and not isinstance(path, str):
                raise TypeError("path")
        except OSError:
            return None  # there but unreadable now: kept for a later start
        except (ValueError, KeyError, TypeError, AttributeError):
            # a damaged sidecar (a truncated or corrupted write): the copy beside it is still the
            # user's edits, offered as a copy without one, noting the damage; the others go on
            return self._orphan(file, paths, time.time(), damaged=True) if file.exists() else None
        if _writer_alive(pid, meta.get("proc")):
            return None  # belongs to another running revstudio
        try:
            data = file.read_bytes()
        except FileNotFoundError:  # killed between the sidecar and the first copy: no edits reached the disk
            _unlink(meta_path)
            return None
        except OSError:
            return None  # there but unreadable now: kept for a later start
        name = str(meta.get("name", "untitled"))
        digest = meta.get("sha256")
        if isinstance(digest, str) and digest != _digest(data):
            # killed between a later autosave's sidecar and its text: the copy is the previous one,
            # as of its own write (and under its own name)
            saved, name = _mtime(file, saved), _project_name(data, name)
        return _judged(Recovery(file, meta_path, path, name, saved, disk=_stamp(meta.get("disk"))))

    def _orphans(self, paths: dict[str, str]) -> list[Recovery]:
        """Copies without a sidecar: an older revstudio wrote the text first and was killed before
        its sidecar. Offered for their file where ``paths`` (known files by path hash) has it, else
        as projects of unknown file (a live writer's would be seconds old)."""
        now = time.time()
        found = [self._orphan(file, paths, now) for file in self.folder.glob("*.revs")
                 if not file.with_suffix(".json").exists()]
        return [rec for rec in found if rec is not None]

    def _orphan(self, file: Path, paths: dict[str, str], now: float, damaged: bool = False) -> Recovery | None:
        """The copy ``file`` offered without (the word of) its sidecar: its project's name from the
        text itself, its file from the hash in its name where a known file has it. None while it is
        young enough to be a live session's (or it cannot be read now; it is kept)."""
        saved = _mtime(file, now)
        if now - saved < ORPHAN_AGE_S:
            return None
        try:
            data = file.read_bytes()
        except OSError:
            return None
        path = paths.get(file.name.split("-", 1)[0])
        return _judged(Recovery(file, file.with_suffix(".json"), path, _project_name(data, "untitled"), saved,
                                orphan=path is None and not file.name.startswith("untitled-"),
                                damaged_sidecar=damaged))


def _judged(rec: Recovery) -> Recovery | None:
    """``rec`` as offered (noting a document rewritten since), or None (and the copy removed) where
    the document on disk was saved with these very edits after the autosave."""
    path = rec.path
    newer = path is not None and os.path.exists(path) and os.path.getmtime(path) >= rec.saved
    if path is not None and newer and _same_text(path, rec.file):
        rec.discard()
        return None
    return dataclasses.replace(rec, changed_on_disk=newer)


def _path_hash(path: str) -> str:
    return hashlib.sha1(os.path.abspath(path).encode()).hexdigest()[:16]


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _mtime(file: Path, default: float) -> float:
    try:
        return file.stat().st_mtime
    except OSError:
        return default


def _project_name(data: bytes, default: str) -> str:
    """The ``name`` of a project's text, or ``default`` where it has none or is no project."""
    try:
        name = json.loads(data).get("name")
    except (ValueError, AttributeError):
        return default
    return name if isinstance(name, str) and name else default


def _unlink(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass


def _stamp(value: object) -> tuple[int, int, int] | None:
    if isinstance(value, list) and len(value) == 3 and all(type(v) is int for v in value):
        return (value[0], value[1], value[2])
    return None


def _same_text(path: str, file: Path) -> bool:
    try:
        return Path(path).read_bytes() == file.read_bytes()
    except OSError:
        return False


class Autosaver(QObject):
    """Writes the document's recovery file while it has unsaved edits.

    After each edit (any change of the undo stack: an edit, undo, redo) the copy is written once
    editing pauses for ``pause_ms`` (a burst of typing is one write), and while editing goes on
    without a pause, at the latest every ``interval_ms`` (Preferences). The UI thread only copies
    the graph; the text is made and written by a :class:`RecoveryWriter` thread."""

    failed = Signal(str)  # an autosave could not be written (said once per distinct reason)
    _finished = Signal(int, object)  # (generation, error or None), from the writer thread

    def __init__(self, document: Document, store: RecoveryStore, interval_ms: int = AUTOSAVE_MS,
                 parent: QObject | None = None, pause_ms: int = PAUSE_MS) -> None:
        super().__init__(parent)
        self.document = document
        self.store = store
        self._token = uuid.uuid4().hex[:12]
        self._key = store.key_for(document.path, self._token)
        self.last_error: str | None = None
        self.writes = 0          # recovery files written (tests count them)
        self._pending = False    # an edit that no snapshot has taken yet
        self._writer = RecoveryWriter(self._write, self._finished.emit)
        self._finished.connect(self._on_finished)
        # the pause after the last edit: restarted by every edit
        self.pause = QTimer(self)
        self.pause.setSingleShot(True)
        self.pause.setInterval(pause_ms)
        self.pause.timeout.connect(self.flush)
        # the upper bound while edits keep coming without a pause (and a deleted file's copy)
        self.timer = QTimer(self)
        self.timer.setInterval(interval_ms)
        self.timer.timeout.connect(self._tick)
        self.timer.start()
        document.dirtyChanged.connect(self._on_dirty)
        document.pathChanged.connect(self._on_path)
        document.edited.connect(self._on_edit)

    @property
    def recovery_file(self) -> Path:
        return self.store.folder / f"{self._key}.revs"

    def _needed(self) -> bool:
        # unsaved edits, or the file was deleted on disk: this window holds the only copy
        return self.document.is_dirty() or self.document.disk_state() == "deleted"

    def _snapshot(self) -> Snapshot:
        doc = self.document
        return Snapshot(self._key, doc.graph.copy(), doc.path, doc.graph.name, doc.disk)

    def _write(self, snap: Snapshot) -> None:
        from revstudio.core.project import dumps

        self.store.write(snap.key, dumps(snap.graph), snap.path, snap.name, snap.disk)

    def _on_edit(self) -> None:
        if self.document.is_dirty():
            self._pending = True
            self.pause.start()  # (re)started: the copy waits for a pause in the editing
        else:  # undone back to the saved state: the clean document's file goes (dirtyChanged)
            self._pending = False
            self.pause.stop()

    def _tick(self) -> None:
        if self._pending or (self.document.disk_state() == "deleted" and not self.recovery_file.exists()):
            self.flush()

    def flush(self) -> bool:
        """Hand the document as it is now to the writer thread (if it has anything to keep);
        True if a snapshot was handed over. Returns at once: the copy is written meanwhile."""
        self.pause.stop()
        self._pending = False
        if not self._needed():
            return False
        self._writer.submit(self._snapshot())
        return True

    def save_now(self) -> bool:
        """Autosave at once, on this thread (a crash, a terminate signal, a restore): True if a
        file was written. A copy the writer thread had not yet written is superseded."""
        self.pause.stop()
        self._pending = False
        if not self._needed():
            return False
        snap = self._snapshot()
        self._writer.cancel()
        with self._writer.io:
            try:
                self._write(snap)
            except Exception as exc:  # a full disk must not take the editor down
                self._report(exc)
                return False
        self._report(None)
        return True

    def wait(self, timeout: float = 10.0) -> bool:
        """Block until the writer thread has nothing left to write (tests, shutdown); True if so."""
        import time

        end = time.monotonic() + timeout
        while self._writer.busy():
            if time.monotonic() > end:
                return False
            time.sleep(0.005)
        return True

    def _on_finished(self, generation: int, error: object) -> None:
        if isinstance(error, BaseException) and not self._writer.current(generation):
            return  # a copy superseded since (a later write or a discard): its failure is no news
        self._report(error if isinstance(error, BaseException) else None)

    def _report(self, exc: BaseException | None) -> None:
        if exc is None:
            self.writes += 1
            self.last_error = None
            return
        reason = (exc.strerror if isinstance(exc, OSError) else None) or exc
        error = (f"Autosave to {self.store.folder} failed ({reason}): your edits have no recovery "
                 "copy; save your work with Save As (to another disk if this one is full)")
        if error != self.last_error:  # say it once, not at every autosave
            log.warning(error)
            self.failed.emit(error)
        self.last_error = error

    def discard(self) -> None:
        """The document was saved or closed cleanly: forget its recovery file (a copy still
        waiting is dropped; one being written is finished first, then removed)."""
        self.pause.stop()
        self._pending = False
        self._writer.cancel()
        with self._writer.io:
            self.store.remove(self._key)

    def shutdown(self) -> None:
        """The window closes: no more autosaves, and the writer thread ends."""
        self.timer.stop()
        self.pause.stop()
        self._writer.stop()

    def _on_dirty(self, dirty: bool) -> None:
        if dirty:  # (also edits that are on no disk without an edit: a restored recovery file)
            self._on_edit()
        else:
            self.discard()

    def _on_path(self, path: str) -> None:
        new = self.store.key_for(path or None, self._token)
        if new != self._key:
            self._writer.cancel()
            with self._writer.io:
                self.store.remove(self._key)
            self._key = new
