"""``rs.runs``: ``revstudio runs`` from Python, the runs it lists as the dicts ``runs --json`` gives.

The command's own listing (:func:`revstudio.clicmd.runs.listing`: which folder a DIR, a project
file or its folder means, the status rule of the app's Runs tab, ``--status`` and ``--sort``).
Torch-free.
"""
from __future__ import annotations

import argparse
import os
from typing import Any

from revstudio.core.notebook_repr import NotebookRepr, short_repr


class RunList(list[dict[str, Any]], NotebookRepr):
    """The runs, one dict each (``pandas.DataFrame(rs.runs())``), and ``dir``, the folder listed;
    ``to_json()`` is the object ``revstudio runs --json`` prints."""

    def __init__(self, folder: str, runs: list[dict[str, Any]]) -> None:
        super().__init__(runs)
        self.dir = folder

    def to_json(self) -> dict[str, Any]:
        return {"dir": self.dir, "dirs": [self.dir], "runs": list(self)}  # (as `runs --json` of one DIR)

    def __repr__(self) -> str:
        from revstudio.clicmd.runs import _metric_text

        lines = [f"{r['name']}  {r['status']}  step {r['step'] if r['step'] is not None else '-'}/"
                 f"{r['total_steps'] or '-'}  {_metric_text(r['metrics'] or {})}".rstrip() + _why(r) for r in self]
        count = f"{len(self)} run{'s' * (len(self) != 1)}"
        return short_repr(f"<{count} in {self.dir}>", lines, 20, "the list")


def _why(run: dict[str, Any]) -> str:
    """How a failed, killed or unknown run ended, as the command says under its table (cut short)."""
    message = run.get("message") or ""
    if run.get("status") not in ("failed", "killed", "unknown") or not message:
        return ""
    return f"  ({message[:100]}{'...' if len(message) > 100 else ''})"


def runs(folder: str | os.PathLike[str] = "runs", status: str | list[str] | None = None, sort: str = "started",
         reverse: bool = False, filter: str | list[str] | None = None) -> RunList:
    """The runs in ``folder`` as ``revstudio runs`` lists them: a folder of runs (default ``./runs``),
    one run, a project file (its runs) or its folder. ``status``: keep those of these statuses
    ("finished", "failed", ... or a list); ``filter``: keep those matching every word, as ``runs
    --filter WORDS`` and the app's Runs tab do (part of the name, project, label, status, data or mode,
    any case; "status:failed,killed" or "label:lr" look at one field; a list is its words); ``sort``:
    started (default), step, loss, accuracy or duration, "-loss" or ``reverse=True`` descending.
    Raises FileNotFoundError for a folder that is not there, ValueError for a status or key it does
    not know, in the command's words, and TypeError for a filter that is not text."""
    from revstudio.cli import CliError
    from revstudio.clicmd.runs import listing
    from revstudio.training.run_compare import provenance

    if isinstance(status, (list, tuple)):
        status = ",".join(status)
    words = _filter_words(filter)
    given = os.fspath(folder) if isinstance(folder, (str, os.PathLike)) else folder
    if not isinstance(given, str):  # (bytes, a number: an AttributeError from deep in the listing)
        raise TypeError(f"rs.runs: folder={folder!r}: give a folder's path as text or a pathlib.Path")
    try:
        where, found = listing(argparse.Namespace(dir=given, status=status, sort=sort, reverse=reverse,
                                                        filter=words))
    except CliError as exc:
        raise (FileNotFoundError if not os.path.exists(given) else ValueError)(str(exc)) from None
    return RunList(where[0], [{**r.to_json(), **provenance(r.path)} for r in found])


def _filter_words(given: object) -> str | None:
    """``filter=`` as the command's ``--filter`` text: text as it is, a list or tuple of words joined
    by spaces (each word text); a TypeError naming what it is otherwise."""
    if given is None or isinstance(given, str):
        return given
    if isinstance(given, (list, tuple)) and all(isinstance(w, str) for w in given):
        return " ".join(given)
    raise TypeError(f"rs.runs: filter={given!r}: give the words as text (filter='status:failed lr') or a list "
                    "of words, as `revstudio runs --filter WORDS` reads them")


__all__ = ["RunList", "runs"]
