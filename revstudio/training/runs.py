"""Run directories: what one training run leaves on disk, written and read back.

A run directory (CONTRACTS section 4) holds the project snapshot, the
resolved config, the environment, ``status.json`` (kept truthful while the run
goes), ``metrics.jsonl`` (the rows of ``--json``), ``checkpoints/last.pt`` and
the exported ``model.py``. Every JSON file is replaced atomically (temporary
file, fsync, rename), so a reader never sees half of one. A status that says
``running`` whose process is gone is reported as ``killed``. Torch-free: the
app's run list and ``revstudio runs`` read this without loading torch.
"""
from __future__ import annotations

import datetime
import errno
import json
import math
import os
from dataclasses import dataclass, field
from typing import Any

from revstudio.core import tempfiles

STATUS = "status.json"
CONFIG = "config.json"
METRICS = "metrics.jsonl"
LABEL = "label.json"      # the user's name for a run ({"label": ...}); written by the app, never by the worker
CHECKPOINT = os.path.join("checkpoints", "last.pt")


# status.json's message of a run stopped because the reader of its rows went away (`train | head`)
READER_GONE = "stopped: the reader of the output went away (a closed pipe); --resume continues it"


def finite(value: Any) -> Any:
    """``value`` (numbers, dicts, lists) with every non-finite number as None: JSON has no NaN
    or Infinity, so a row or a ``--json`` report writes them as null (docs/cli.md)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def json_text(value: Any) -> str:
    """``value`` as one line of JSON, the one writer of every ``--json`` object and run row: a
    non-finite number as null (:func:`finite`), and ``allow_nan=False`` so that no NaN or Infinity
    token, which JSON parsers such as jq reject, can be printed at all."""
    return json.dumps(finite(value), allow_nan=False)


def now_iso() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


class RunDirError(Exception):
    """A run directory that cannot be written (no permission, a full disk, a file in the way);
    the message names the file, the reason and what to do."""

    def __init__(self, path: str, exc: OSError) -> None:
        self.path, self.why = path, exc.strerror or str(exc)
        self.full = exc.errno in (errno.ENOSPC, errno.EDQUOT)  # (a full disk: the rest is fine)
        denied = exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS)
        todo = ("free some space" if self.full else "give --out a folder you can write" if denied
                else "free some space or give --out a folder you can write")
        in_way = _file_in_the_way(path) if exc.errno in (errno.ENOTDIR, errno.EEXIST) else None
        if in_way is not None:  # (--out names a file, or a path through one: nothing to free or allow)
            self.why, todo = f"{in_way} is a file, not a folder", "give --out a folder, or a new one's path"
        super().__init__(f"cannot write {path}: {self.why}; {todo}")


def _file_in_the_way(path: str) -> str | None:
    """The nearest folder above ``path`` that exists as something else than a folder, or None."""
    here = os.path.dirname(os.path.abspath(path))
    while here and not os.path.exists(here):
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent
    return None if os.path.isdir(here) else here


def write_atomic(path: str, data: bytes | str) -> None:
    """Write a run file so that the old one or the whole new one is there at any moment;
    its folder (``checkpoints/``) is made on demand. A RunDirError when it cannot be written."""
    try:
        tempfiles.write_atomic(path, data, make_folder=True)
    except OSError as exc:
        raise RunDirError(path, exc) from None


def write_json(path: str, value: Any) -> None:
    write_atomic(path, json.dumps(value, indent=2, sort_keys=False) + "\n")


def rewrite_in_place(path: str, text: str) -> bool:
    """Put ``text`` into the existing file ``path`` without asking the disk for room: a full disk
    refuses the temporary file of an atomic write, but the file's own allocated blocks can take a
    text no longer than they are (padded with spaces, which JSON readers skip). One write, no
    truncation. Returns whether it was written (False: too long, or the file is not there)."""
    data = text.encode("utf-8")
    try:
        info = os.stat(path)
        room = max(info.st_size, getattr(info, "st_blocks", 0) * 512)
        if len(data) > room:
            return False
        data += b" " * max(0, info.st_size - len(data))  # (the old text's tail: blanked, not cut)
        fd = os.open(path, os.O_WRONLY)
        try:
            done = os.pwrite(fd, data, 0)
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:
        return False
    return done == len(data)


def pid_alive(pid: Any) -> bool:
    """Whether process ``pid`` is running (not gone, not a zombie)."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, but someone else's
        return True
    except OSError:
        return False
    # a zombie (exited, not yet reaped by its parent) is not running either
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            return handle.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return True


@dataclass
class RunInfo:
    """One run directory as ``revstudio runs`` and the app's run list show it."""

    path: str
    status: str                      # running | finished | stopped | failed | killed | unknown
    step: int | None = None
    total_steps: int | None = None
    config: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)
    started: str | None = None
    ended: str | None = None
    message: str | None = None
    pid: int | None = None
    label: str | None = None         # the user's name for the run (label.json), None where unset

    @property
    def name(self) -> str:
        return os.path.basename(os.path.normpath(self.path))

    @property
    def has_checkpoint(self) -> bool:
        return os.path.isfile(os.path.join(self.path, CHECKPOINT))

    def __repr__(self) -> str:
        # a notebook's list_runs(...): one short line a run, not its config and end message
        step = "no step yet" if self.step is None else f"step {self.step}" + (
            f"/{self.total_steps}" if self.total_steps else "")
        figures = "".join(f", {k} {v:.4g}" for k, v in self.metrics.items()
                          if isinstance(v, (int, float)) and not isinstance(v, bool))
        label = f" ({self.label})" if self.label else ""
        return f"<RunInfo {self.name!r}{label}: {self.status}, {step}{figures}>"

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "name": self.name, "status": self.status, "step": self.step,
                "total_steps": self.total_steps, "metrics": self.metrics, "started": self.started,
                "ended": self.ended, "message": self.message, "checkpoint": self.has_checkpoint,
                "config": self.config, "label": self.label}


def _read_json(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def is_run_dir(path: str) -> bool:
    return os.path.isfile(os.path.join(path, STATUS))


def read_run(run_dir: str) -> RunInfo:
    """What ``run_dir`` says about its run; a missing or broken status reads as ``unknown``."""
    status = _read_json(os.path.join(run_dir, STATUS))
    config = _read_json(os.path.join(run_dir, CONFIG))
    if not isinstance(status, dict):
        return RunInfo(path=run_dir, status="unknown", config=config if isinstance(config, dict) else {},
                       message="status.json is missing or unreadable", label=read_label(run_dir))
    state = str(status.get("status", "unknown"))
    message = status.get("message")
    if state == "running" and not pid_alive(status.get("pid")):
        state = "killed"
        message = message or ("the process ended without writing its status (killed, or a full disk?); "
                              "--resume continues it")
    metrics = status.get("metrics")
    return RunInfo(
        path=run_dir, status=state, step=_typed(status.get("step"), int),
        total_steps=_typed(status.get("total_steps"), int),
        config=config if isinstance(config, dict) else {},
        metrics=metrics if isinstance(metrics, dict) else {},
        started=_typed(status.get("started"), str), ended=_typed(status.get("ended"), str),
        message=_typed(message, str), pid=_typed(status.get("pid"), int), label=read_label(run_dir))


def record_end(run_dir: str, status: str, message: str) -> bool:
    """Write how a run ended into its status.json for the worker that could not (it died of a full
    disk, or was killed), so that the Runs tab and ``revstudio runs`` later say why instead of
    "killed". Only a status that still says running, of a process that is gone, is replaced; a
    disk still full leaves it as it was. Returns whether it was written."""
    path = os.path.join(run_dir, STATUS)
    old = _read_json(path)
    if not isinstance(old, dict) or old.get("status") != "running" or pid_alive(old.get("pid")):
        return False
    try:
        write_json(path, {**old, "status": status, "message": message, "ended": now_iso()})
    except RunDirError:
        return False
    return True


MAX_LABEL = 200


def read_label(run_dir: str) -> str | None:
    """The user's label of ``run_dir`` (its ``label.json``), or None where it has none or it is unreadable."""
    value = _read_json(os.path.join(run_dir, LABEL))
    text = value.get("label") if isinstance(value, dict) else None
    return text.strip() or None if isinstance(text, str) else None


def write_label(run_dir: str, text: str) -> str | None:
    """Give ``run_dir`` the label ``text`` (one line; empty removes it) in its own small file beside
    status.json, replaced atomically: the folder is never renamed (a live worker may be writing in it)
    and status.json stays the worker's. Returns the label kept; a RunDirError where it cannot be written."""
    label = " ".join(text.split())[:MAX_LABEL]
    path = os.path.join(run_dir, LABEL)
    if not label:
        try:
            os.remove(path)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise RunDirError(path, exc) from None
        return None
    if not os.path.isdir(run_dir):
        raise RunDirError(path, FileNotFoundError(errno.ENOENT, "the run folder is gone", run_dir))
    write_json(path, {"label": label})
    return label


def _typed(value: Any, kind: type) -> Any:
    """``value`` where it is a ``kind`` (never a bool), else None: a damaged or hand-edited
    status.json (a step of "abc", a start time of 5) reads as unknown, not as a crash."""
    return value if isinstance(value, kind) and not isinstance(value, bool) else None


def list_runs(directory: str) -> list[RunInfo]:
    """The runs in ``directory`` (or ``directory`` itself if it is one), oldest first."""
    if is_run_dir(directory):
        return [read_run(directory)]
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    runs = [read_run(os.path.join(directory, n)) for n in names if is_run_dir(os.path.join(directory, n))]
    runs.sort(key=lambda r: (r.started or "", r.name))
    return runs


def read_metrics(run_dir: str) -> list[dict[str, Any]]:
    """The rows of ``metrics.jsonl``; a last line cut short by a kill is skipped."""
    rows = []
    try:
        with open(os.path.join(run_dir, METRICS), encoding="utf-8") as handle:
            for line in handle:
                try:
                    row = json.loads(line)
                except ValueError:
                    continue
                if isinstance(row, dict):
                    rows.append(row)
    except OSError:
        pass
    return rows


class RunWriter:
    """The writing side of a run directory (rank 0 only): status, config and metric rows."""

    def __init__(self, path: str) -> None:
        self.path = path
        try:
            os.makedirs(os.path.join(path, "checkpoints"), exist_ok=True)
            self._metrics: int | None = os.open(os.path.join(path, METRICS), os.O_WRONLY | os.O_CREAT | os.O_APPEND,
                                                0o644)
        except OSError as exc:
            raise RunDirError(exc.filename or path, exc) from None
        self.status: dict[str, Any] = {"status": "running", "pid": os.getpid(), "step": 0, "total_steps": None,
                                       "started": now_iso(), "ended": None, "metrics": {}, "message": None}

    def file(self, name: str) -> str:
        return os.path.join(self.path, name)

    def update_status(self, **fields: Any) -> None:
        self.status.update(fields)
        try:
            write_json(self.file(STATUS), self.status)
        except RunDirError as exc:  # a full disk takes no new file: the old one's own space may take it
            if not (exc.full and rewrite_in_place(self.file(STATUS), json.dumps(self.status) + "\n")):
                raise

    def row(self, row: dict[str, Any]) -> None:
        # one unbuffered write per row: a kill can cut at most the last line, and a write the
        # disk cannot take is cut back off, so no half row stays behind (nor waits in a buffer)
        if self._metrics is None:
            return
        data = (json_text(row) + "\n").encode("utf-8")
        end = os.lseek(self._metrics, 0, os.SEEK_END)
        try:
            done = 0
            while done < len(data):
                done += os.write(self._metrics, data[done:])
        except OSError as exc:
            try:
                os.ftruncate(self._metrics, end)
            except OSError:
                pass
            raise RunDirError(self.file(METRICS), exc) from None

    def close(self) -> None:
        if self._metrics is not None:
            try:
                os.close(self._metrics)
            except OSError:
                pass
            self._metrics = None
