"""Run directories: what one training run leaves on disk, written and read back.

A run directory (CONTRACTS section 4) holds the project snapshot, the
resolved config, the environment, ``status.json`` (kept truthful while the run
goes), ``metrics.jsonl`` (the rows of ``--json``), ``checkpoints/last.pt`` and
the exported ``model.py``. Every JSON file is replaced atomically (temporary
file, fsync, rename), so a reader never sees half of one. A status that says
``running`` whose process is gone is reported as ``killed`` (``run_status``). Torch-free: the
app's run list and ``revstudio runs`` read this without loading torch.
"""
from __future__ import annotations

import datetime
import errno
import json
import math
import os
import re
from dataclasses import dataclass, field
from typing import Any

from revstudio.core import tempfiles
from revstudio.core.processes import host, process_stamp
from revstudio.core.project_format import SNAPSHOT

from .evaluation import evaluation_summary
from .run_exports import export_summary
from .run_status import decide, looks_like_run, started_from
from .runs_folder import drop_own_gitignore, make_runs_folder

STATUS = "status.json"
CONFIG = "config.json"
METRICS = "metrics.jsonl"
LABEL = "label.json"      # the user's name for a run ({"label": ...}); written by the app, never by the worker
CHECKPOINT = os.path.join("checkpoints", "last.pt")
# SNAPSHOT (imported above): the run folder's project.revs, named in the core, which reads it too
BEST = os.path.join("checkpoints", "best.pt")  # the weights of the lowest val_loss so far, replaced


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
    resumed: list[str] = field(default_factory=list)  # when each --resume restarted it (``started``: the first start)
    trained_s: float | None = None   # seconds trained before the last (re)start; None: never resumed
    guessed: bool = False            # message is revstudio's reading of the folder (killed, unknown), not the run's
    init_from: str | None = None     # the weights it started from (train --init), None: started fresh

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
                "config": self.config, "label": self.label, "resumed": self.resumed,
                "duration_s": self.duration_s(), "init_from": self.init_from,
                "evaluations": evaluation_summary(self.path), "exports": export_summary(self.path)}

    def duration_s(self, now: datetime.datetime | None = None) -> float | None:
        """Seconds the run actually trained: see :func:`trained_seconds`."""
        return trained_seconds(self.started, self.resumed, self.trained_s, self.ended,
                               self.status == "running", now)


def parse_time(text: str | None) -> datetime.datetime | None:
    """A status.json time (ISO 8601) as an aware datetime; None where it is missing or not a time. A time
    without a zone (a hand-written or old status) is UTC, as the worker writes it."""
    if not text:
        return None
    try:
        when = datetime.datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=datetime.timezone.utc)


def trained_seconds(started: str | None, resumed: list[str], trained_s: float | None, ended: str | None,
                    running: bool, now: datetime.datetime | None = None) -> float | None:
    """The time a run trained, summed over its segments: the earlier ones (``trained_s``, written at
    each resume) plus the last one, from its (re)start to its end (or now, while it runs). The pause
    between a stop and a ``--resume`` is not counted. None where the last start or the end is unknown
    (a killed run). An old status.json without ``resumed`` counts from ``started`` as before."""
    start = parse_time(resumed[-1] if resumed else started)
    end = parse_time(ended)
    if start is None:
        return None
    if end is None:
        if not running:
            return None
        end = now or datetime.datetime.now(datetime.timezone.utc)
    return (trained_s or 0.0) + max(0.0, (end - start).total_seconds())


def human_duration(seconds: float | None) -> str:
    """``seconds`` as the Runs tab and ``revstudio runs`` show a duration: "42 s", "3 min 05 s", "2 h 07 min"."""
    if seconds is None or not math.isfinite(seconds):
        return "–"
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def read_json(path: str) -> Any:
    """The JSON value of the file at ``path``; None where it is missing, unreadable or not JSON."""
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def is_run_dir(path: str) -> bool:
    return os.path.isfile(os.path.join(path, STATUS))


def read_run(run_dir: str) -> RunInfo:
    """What ``run_dir`` says about its run, its status decided by :func:`run_status.decide` (the one
    reading the app's Runs tab shares): a missing or broken status reads as ``unknown``, a running
    one whose process is gone as ``killed``, each with why."""
    status = read_json(os.path.join(run_dir, STATUS))
    config = read_json(os.path.join(run_dir, CONFIG))
    verdict = decide(run_dir, status)
    if not isinstance(status, dict):
        return RunInfo(path=run_dir, status=verdict.status, step=verdict.step,
                       config=config if isinstance(config, dict) else {}, message=verdict.message,
                       label=read_label(run_dir), guessed=verdict.guessed, init_from=started_from(run_dir))
    metrics = status.get("metrics")
    resumed = status.get("resumed")
    trained = status.get("trained_s")
    step = _typed(status.get("step"), int)
    return RunInfo(
        path=run_dir, status=verdict.status, step=step if verdict.step is None else max(step or 0, verdict.step),
        total_steps=_typed(status.get("total_steps"), int),
        config=config if isinstance(config, dict) else {},
        metrics=metrics if isinstance(metrics, dict) else {},
        started=_typed(status.get("started"), str), ended=_typed(status.get("ended"), str),
        message=verdict.message, pid=_typed(status.get("pid"), int), label=read_label(run_dir),
        resumed=[t for t in resumed if isinstance(t, str)] if isinstance(resumed, list) else [],
        trained_s=float(trained) if isinstance(trained, (int, float)) and not isinstance(trained, bool)
        and math.isfinite(trained) and trained >= 0 else None, guessed=verdict.guessed,
        init_from=started_from(run_dir))


def record_end(run_dir: str, status: str, message: str) -> bool:
    """Write how a run ended into its status.json for the worker that could not (it died of a full
    disk, or was killed), so that the Runs tab and ``revstudio runs`` later say why instead of
    "killed". Only a status that still says running, of a process that is gone, is replaced; a
    disk still full leaves it as it was. Returns whether it was written."""
    path = os.path.join(run_dir, STATUS)
    old = read_json(path)
    if not isinstance(old, dict) or decide(run_dir, old).status != "killed":
        return False
    try:
        write_json(path, {**old, "status": status, "message": message, "ended": now_iso()})
    except RunDirError:
        return False
    return True


MAX_LABEL = 200


def read_label(run_dir: str) -> str | None:
    """The user's label of ``run_dir`` (its ``label.json``), or None where it has none or it is unreadable."""
    value = read_json(os.path.join(run_dir, LABEL))
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


STAMPED = re.compile(r"(.+)-\d{8}-\d{6}(?:-\d+)?")  # <project>-<date>-<time>[-n], as runs are named


def belongs_to(name: str, stem: str | None) -> bool:
    """Whether the run folder ``name`` is one of project ``stem``'s: projects in one folder share its
    ``runs`` folder, and revstudio train and the app's Train name each run after its project. A
    folder named otherwise (``--out`` from a terminal) is listed for every project."""
    match = STAMPED.fullmatch(name)
    return stem is None or match is None or match.group(1) == stem


def list_runs(directory: str) -> list[RunInfo]:
    """The runs in ``directory`` (or ``directory`` itself if it is one), oldest first."""
    if is_run_dir(directory):
        return [read_run(directory)]
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    runs = [read_run(os.path.join(directory, n)) for n in names if looks_like_run(os.path.join(directory, n))]
    runs.sort(key=lambda r: (r.started or "", r.name))
    return runs


def _resumed_fields(run_dir: str, now: str) -> dict[str, Any]:
    """What a resume keeps of the status it continues: the first ``started``, the earlier resumes
    with this one added, and the seconds trained so far (the last segment ends at its ``ended``, or,
    killed, at the last write of its status). Empty where the old status has no start time."""
    path = os.path.join(run_dir, STATUS)
    info = read_run(run_dir)
    if info.started is None:
        return {}
    ended = info.ended
    if ended is None:  # (killed: its status was last written at its last step)
        try:
            ended = datetime.datetime.fromtimestamp(os.stat(path).st_mtime, datetime.timezone.utc).isoformat()
        except OSError:
            ended = None
    trained = trained_seconds(info.started, info.resumed, info.trained_s, ended, False)
    return {"started": info.started, "resumed": [*info.resumed, now],
            "trained_s": round(trained if trained is not None else info.trained_s or 0.0, 3)}


def read_metrics(run_dir: str) -> list[dict[str, Any]]:
    """The rows of ``metrics.jsonl``; a last line cut short by a kill is skipped, as is one of bytes that
    are not text (a disk error, another program's write), which read as a UnicodeDecodeError before."""
    rows = []
    try:
        with open(os.path.join(run_dir, METRICS), encoding="utf-8", errors="replace") as handle:
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
    """The writing side of a run directory (rank 0 only): status, config and metric rows. A resumed
    run (``resumed``) keeps its first ``started``, adds this start to ``resumed`` and the time its
    last segment trained to ``trained_s``, so that its duration leaves out the pause."""

    def __init__(self, path: str, resumed: bool = False) -> None:
        self.path = path
        try:
            os.makedirs(os.path.join(path, "checkpoints"), exist_ok=True)
            self._metrics: int | None = os.open(os.path.join(path, METRICS), os.O_WRONLY | os.O_CREAT | os.O_APPEND,
                                                0o644)
        except OSError as exc:
            raise RunDirError(exc.filename or path, exc) from None
        self.status: dict[str, Any] = {"status": "running", "pid": os.getpid(), "host": host(),
                                       "process": process_stamp(os.getpid()), "step": 0, "total_steps": None,
                                       "started": now_iso(), "ended": None, "metrics": {}, "message": None}
        if resumed:
            self.status.update(_resumed_fields(path, self.status["started"]))

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
        except BaseException as exc:  # (a second Ctrl+C in the middle of it too: no half row stays)
            try:
                os.ftruncate(self._metrics, end)
            except OSError:
                pass
            if isinstance(exc, OSError):
                raise RunDirError(self.file(METRICS), exc) from None
            raise

    def close(self) -> None:
        if self._metrics is not None:
            try:
                os.close(self._metrics)
            except OSError:
                pass
            self._metrics = None


# What the start of a new run writes into its folder (session._record, RunWriter)
START_FILES = (SNAPSHOT, CONFIG, "environment.json", "model.py", "model.py.txt", STATUS, METRICS)


class StartUndo:
    """What starting a new run creates, noted before it does, so that a run refused before it
    starts (a mistyped data path, a device it cannot use) leaves nothing behind: the files and
    folders that were not there before are removed, never what was (a folder the user made for
    it, the snapshot the app wrote there, an earlier run's files)."""

    def __init__(self, path: str) -> None:
        self.path = os.path.abspath(path)
        self.made: list[str] = []  # the folders that did not exist, innermost first
        folder = self.path
        while not os.path.lexists(folder) and os.path.dirname(folder) != folder:
            self.made.append(folder)
            folder = os.path.dirname(folder)
        self.before = set(os.listdir(self.path)) if os.path.isdir(self.path) else set()

    def undo(self) -> None:
        for name in START_FILES:
            if name not in self.before:
                try:
                    os.remove(os.path.join(self.path, name))
                except OSError:
                    pass
        for folder in ([] if "checkpoints" in self.before else [os.path.join(self.path, "checkpoints")]) + self.made:
            drop_own_gitignore(folder)  # (a runs/ folder made for this run holds it)
            try:
                os.rmdir(folder)  # (only an empty one: anything else in it stays)
            except FileNotFoundError:
                continue
            except OSError:
                return


def claim_run_dir(path: str) -> tuple[str, StartUndo]:
    """Make the folder of a run revstudio names itself: ``path``, or the next ``path-N`` where
    another run made it first (a sweep started in parallel, in the same second). ``os.mkdir`` is
    the claim, so two runs never share a folder; returns it and what its making is undone by."""
    stem, n = path, 1
    while True:
        undo = StartUndo(path)
        try:
            make_runs_folder(os.path.dirname(path))
            os.mkdir(path)
            return path, undo
        except FileExistsError:
            n += 1
            path = f"{stem}-{n}"
        except OSError as exc:
            undo.undo()
            raise RunDirError(exc.filename or path, exc) from None
