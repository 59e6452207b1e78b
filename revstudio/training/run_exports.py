"""A run's exports: each ``revstudio export RUN`` (the Runs tab's Export with Weights… runs it) adds one
short JSON line to the run folder's ``exports.jsonl``, the file rewritten whole and atomically, so a kill
leaves the old record or the new one, never half a line. ``revstudio runs --json`` (``exports``) and the
Runs tab's detail show the latest: where the run's code and weights went, and from which step.
"""
from __future__ import annotations

import json
import os
from typing import Any

EXPORTS = "exports.jsonl"
KEPT = 100  # the lines kept: the latest matters, a long history of re-exports does not


def run_of(source: str) -> str | None:
    """The run folder whose weights ``source`` names (the folder itself, or a checkpoint in its
    ``checkpoints/``), else None (a file of weights of one's own: no run to record the export in)."""
    from .runs import is_run_dir

    path = os.path.abspath(source)
    if os.path.isdir(path):
        return path if is_run_dir(path) else None
    folder = os.path.dirname(path)
    run = os.path.dirname(folder)
    return run if os.path.basename(folder) == "checkpoints" and is_run_dir(run) else None


def exports(run_dir: str) -> list[dict[str, Any]]:
    """The run's recorded exports, oldest first (unreadable lines, a hand edit's, left out)."""
    try:
        with open(os.path.join(run_dir, EXPORTS), encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    rows = []
    for line in lines:
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict) and isinstance(row.get("code"), str):
            rows.append(row)
    return rows


def record_export(run_dir: str, code: str, weights: str | None, step: Any, checkpoint: str) -> str | None:
    """Add the export to the run's ``exports.jsonl``; None, or why it could not be recorded (words: the
    export itself is written, so this is a note, not a failure)."""
    from .runs import RunDirError, now_iso, write_atomic

    row = {"time": now_iso(), "code": os.path.abspath(code),
           "weights": os.path.abspath(weights) if weights else None,
           "checkpoint": os.path.relpath(os.path.abspath(checkpoint), run_dir),
           "step": step if isinstance(step, int) and not isinstance(step, bool) else None}
    kept = [json.dumps(r, ensure_ascii=False) for r in exports(run_dir)[-(KEPT - 1):]]
    try:
        write_atomic(os.path.join(run_dir, EXPORTS), "".join(f"{line}\n" for line in [*kept, json.dumps(row)]))
    except RunDirError as exc:
        return f"the export was not recorded in the run folder: cannot write {exc.path} ({exc.why})"
    return None


def export_summary(run_dir: str) -> dict[str, Any] | None:
    """What ``revstudio runs --json`` says of a run's exports: ``{"count", "latest": {"time", "code",
    "weights", "checkpoint", "step"}}``, or None where it was never exported."""
    saved = exports(run_dir)
    return {"count": len(saved), "latest": saved[-1]} if saved else None


def export_text(summary: dict[str, Any] | None) -> str | None:
    """The latest export in a line (the Runs tab's detail), or None where there is none."""
    if not summary:
        return None
    latest = summary["latest"]
    step = f"step {latest['step']}" if latest.get("step") is not None else "its weights"
    files = latest["code"] + (f" and {os.path.basename(str(latest['weights']))}" if latest.get("weights") else "")
    when = str(latest.get("time") or "")[:16].replace("T", " ")
    more = f"; {summary['count']} exports in all" if summary["count"] > 1 else ""
    return f"exported: {step} to {files}" + (f" ({when} UTC{more})" if when else "")
