"""A run's status, decided from its folder: the one reading ``revstudio runs`` and the app's Runs tab share.

The worker writes ``running`` when it starts and how it ended (``finished``, ``stopped``, ``failed``)
when it ends. A process that died without writing its end (SIGKILL, the out-of-memory killer, a
crash, a power cut) leaves ``running`` behind: :func:`decide` reads that as ``killed`` once the
process it names is gone (its pid, checked against the start stamp it recorded so that a pid reused
after a reboot does not count), and as ``unknown`` where it cannot tell (a run on another machine, a
status naming no process, a status.json that is missing, unreadable or says something revstudio does
not write). Each ``killed`` and ``unknown`` comes with its reason. Torch-free and Qt-free.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from revstudio.core.processes import host, same_process
from revstudio.core.project_format import SNAPSHOT

# what a worker writes, and the two words a reader adds (in the order `revstudio runs --status` lists them)
WRITTEN = ("running", "finished", "stopped", "failed")
STATUSES = (*WRITTEN, "killed", "unknown")
RESUMABLE = ("stopped", "failed", "killed")  # ended with a checkpoint that --resume continues


@dataclass(frozen=True)
class Verdict:
    status: str                # one of STATUSES
    message: str | None        # the worker's own words, or for killed/unknown why the reader says so
    guessed: bool = False      # the message is the reader's reading of the folder, not the run's own word
    step: int | None = None    # the last step the rows reach (status.json may lag one behind a kill)


def _last_rows(run_dir: str) -> list[Any]:
    """The whole rows at the end of ``metrics.jsonl`` (its last 64 KiB), last first; [] if unreadable."""
    try:
        with open(os.path.join(run_dir, "metrics.jsonl"), "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 65536))
            tail = handle.read()
    except OSError:
        return []
    rows = []
    for line in reversed(tail.splitlines()):
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue  # (a last line cut short by the kill, or the first one cut by the seek)
    return rows


def last_row_step(run_dir: str) -> int | None:
    """The step of the last whole row of ``metrics.jsonl`` that has one (the file's tail is read)."""
    for row in _last_rows(run_dir):
        step = row.get("step") if isinstance(row, dict) else None
        if isinstance(step, int) and not isinstance(step, bool):
            return step
    return None


def early_stopped(run_dir: str) -> dict[str, Any] | None:
    """The ``early_stopped`` of the run's last row where that row is a ``finished`` one that has it (the
    run stopped early and nothing ran after), else None."""
    rows = _last_rows(run_dir)
    last = rows[0] if rows else None
    if isinstance(last, dict) and last.get("event") == "finished" and isinstance(last.get("early_stopped"), dict):
        return dict(last["early_stopped"])
    return None


def started_field(run_dir: str | os.PathLike[str], key: str, lines: int = 8) -> str | None:
    """The text ``key`` of the run's first ``started`` row (``init_from``: the weights ``train --init`` or
    Run > Train From Weights… gave it; ``task``: flow, classification, regression), read from the first
    lines of ``metrics.jsonl`` only; None where no row says (not started, unreadable, not text)."""
    try:
        with open(os.path.join(run_dir, "metrics.jsonl"), encoding="utf-8") as handle:
            for _, line in zip(range(lines), handle, strict=False):
                try:
                    row = json.loads(line)
                except ValueError:
                    return None
                if isinstance(row, dict) and row.get("event") == "started":
                    value = row.get(key)
                    return value if isinstance(value, str) else None
    except (OSError, UnicodeDecodeError):
        pass
    return None


def started_from(run_dir: str, lines: int = 8) -> str | None:
    """The weights a run started from (its ``started`` row's ``init_from``); None for a run started fresh."""
    return started_field(run_dir, "init_from", lines)


def decide(run_dir: str, status: Any) -> Verdict:
    """The status of the run in ``run_dir`` whose status.json read as ``status`` (None where it is
    missing or not JSON), with the reason where the folder alone decides it."""
    if not isinstance(status, dict):
        what = "unreadable (damaged or cut short)" if os.path.exists(os.path.join(run_dir, "status.json")) \
            else "missing"
        step = last_row_step(run_dir)
        why = (f"its rows reach step {step}, so it ran, but how it ended is not recorded" if step is not None
               else "it has no rows either: it may never have started")
        return Verdict("unknown", f"status.json is {what}; {why}", True, step)
    word, message = status.get("status"), status.get("message")
    message = message if isinstance(message, str) else None
    if word not in WRITTEN:
        return Verdict("unknown", f"status.json says {word!r}, not one of {', '.join(WRITTEN)} "
                       "(edited by hand, or written by another program?)", True)
    if word != "running":
        return Verdict(str(word), message)
    pid, where = status.get("pid"), status.get("host")
    if isinstance(where, str) and where and where != host():
        return Verdict("unknown", f"it runs on {where} (process {pid}), whose processes this machine cannot see: "
                       "whether it still runs is not known here; look on that machine", True)
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return Verdict("unknown", "status.json says running but names no process, so whether it still runs "
                       "is not known", True)
    if same_process(pid, status.get("process")):
        return Verdict("running", message)
    step = last_row_step(run_dir)
    parts = [f"its process ({pid}) is gone: it ended without writing its status (killed, a crash, a power cut "
             "or a full disk?)"]
    if step is not None:
        parts.append(f"its last row is step {step}")
    parts.append("--resume continues it from its checkpoint"
                 if os.path.isfile(os.path.join(run_dir, "checkpoints", "last.pt"))
                 else "it left no checkpoint to resume from")
    if message:
        parts.append(f"its last word: {message}")
    return Verdict("killed", "; ".join(parts), True, step)


def looks_like_run(path: str) -> bool:
    """Whether the folder ``path`` is listed as a run: it has a status, rows or the snapshot a start
    writes first (a run that died before its status is listed as unknown, not hidden). A hidden
    folder is a run being moved in."""
    return not os.path.basename(os.path.normpath(path)).startswith(".") and os.path.isdir(path) and any(
        os.path.exists(os.path.join(path, name)) for name in ("status.json", "metrics.jsonl", SNAPSHOT))
