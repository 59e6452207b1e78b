"""A project's run directories (CONTRACTS section 4) read into plain records for the Runs tab.

A run directory holds ``status.json`` (written by the worker), ``config.json``,
``metrics.jsonl`` and ``checkpoints/last.pt``. Its status is decided by
``revstudio.training.run_status.decide``, the one reading ``revstudio runs``
shares: the same words (``killed``, ``unknown``) and the same reasons. No Qt here.
"""
from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path
from typing import Any

from revstudio.core.processes import pid_alive
from revstudio.training.run_status import looks_like_run
from revstudio.training.runs import CHECKPOINT, METRICS, SNAPSHOT, RunInfo, belongs_to, read_run
from revstudio.training.runs import STAMPED as _STAMPED
from revstudio.training.runs_folder import make_runs_folder

__all__ = ["RunEntry", "belongs_to", "delete_run_dir", "is_run_dir", "list_run_dirs", "move_run_dir", "pid_alive",
           "read_run_dir", "renamed_run"]


class RunEntry:
    """One run as the Runs tab lists it: ``revstudio runs``'s record of it (:class:`RunInfo`, kept whole as
    ``info``) with what only the app needs on top: the folder as a Path, the step as a number (0 before
    the first), the title and the files the tab opens. Every other field (status, config, metrics,
    label, ...) is read through from ``info``, so a field ``revstudio runs`` adds reaches the tab."""

    __slots__ = ("info",)

    def __init__(self, info: RunInfo) -> None:
        self.info = info

    def __getattr__(self, name: str) -> Any:
        if name == "info":  # (not set yet: a copy or an unpickle looks before __init__)
            raise AttributeError(name)
        return getattr(self.info, name)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RunEntry) and other.info == self.info

    __hash__ = None  # type: ignore[assignment]  # (as the record it reads: mutable, compared by value)

    def __repr__(self) -> str:
        return f"RunEntry({self.info!r})"

    @property
    def path(self) -> Path:
        return Path(self.info.path)

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def step(self) -> int:
        """The last step reached; 0 before the first (the table and the plots count from it)."""
        return self.info.step or 0

    @property
    def title(self) -> str:
        """What the run is called in the legend and the detail: its label, else its folder's name."""
        return self.info.label or self.name

    @property
    def snapshot(self) -> Path:
        return self.path / SNAPSHOT

    @property
    def checkpoint(self) -> Path:
        return self.path / CHECKPOINT

    @property
    def metrics_file(self) -> Path:
        return self.path / METRICS

    def duration_s(self) -> float | None:
        """Seconds trained, the pauses between a stop and a resume left out (``trained_seconds``)."""
        return self.info.duration_s()


def read_run_dir(path: str | Path) -> RunEntry:
    """One run as the Runs tab lists it: :func:`revstudio.training.runs.read_run`, status and
    reason as ``revstudio runs`` prints them."""
    return RunEntry(read_run(str(path)))


def is_run_dir(path: Path) -> bool:
    return looks_like_run(str(path))


def list_run_dirs(root: str | Path) -> list[RunEntry]:
    """Every run under ``root`` (a project's ``runs`` folder), newest first."""
    root = Path(root)
    try:
        children = [p for p in root.iterdir() if is_run_dir(p)]
    except OSError:
        return []
    children.sort(key=lambda p: (p.stat().st_mtime if p.exists() else 0.0, p.name), reverse=True)
    return [read_run_dir(p) for p in children]


def delete_run_dir(path: str | Path, root: str | Path) -> None:
    """Remove one run folder; refuses anything that is not a run directly inside ``root``."""
    path, root = Path(path).resolve(), Path(root).resolve()
    if path.parent != root or not is_run_dir(path):
        raise ValueError(f"{path} is not a run folder of {root}; nothing was deleted")
    shutil.rmtree(path)


def renamed_run(name: str, old_stem: str, new_stem: str) -> str:
    """A run folder's name under the project's new name: ``untitled-20261206-143000`` of a project
    first saved as ``coupling.revs`` becomes ``coupling-20261206-143000``."""
    match = _STAMPED.fullmatch(name)
    if match is None or match.group(1) != old_stem:
        return name
    return new_stem + name[len(old_stem):]


def move_run_dir(path: Path, root: Path, name: str) -> Path:
    """Move the run folder ``path`` into ``root`` as ``name`` (``name-2``... where that is taken) and
    return where it went. Across file systems it is copied to a hidden folder beside the target,
    renamed into place and only then removed: a failure (a full disk) leaves the run where it was,
    whole, and no part copy behind. Raises OSError with the reason."""
    make_runs_folder(root)
    target, n = root / name, 2
    while target.exists():
        target, n = root / f"{name}-{n}", n + 1
    try:
        os.rename(path, target)
        return target
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
    part = root / f".{target.name}.moving"
    try:
        shutil.copytree(path, part)
        os.rename(part, target)
    except BaseException:
        shutil.rmtree(part, ignore_errors=True)
        raise
    shutil.rmtree(path, ignore_errors=True)
    return target
