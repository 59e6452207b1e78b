"""Runs trained before a project's first save move in with it.

An unsaved project's runs go to the app's data folder (``runs_root(None)``); a saved
one's Runs tab lists ``<project dir>/runs``. So without this, a user who trains a
drawing and then saves it saw its runs vanish from the tab. The first save (an unsaved
project getting a file, not Open or New) moves each run this window started for it into
the project's runs folder, renamed after the file (``untitled-<time>`` becomes
``coupling-<time>``). A run still training moves once it ends. A run that cannot be moved
stays where it was, and the status bar says where.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from revstudio.qt.runs.run_dirs import move_run_dir, renamed_run
from revstudio.qt.training.controller import run_stem, runs_root

if TYPE_CHECKING:  # pragma: no cover
    from revstudio.qt.training.ui import TrainingUI

log = logging.getLogger(__name__)


class UnsavedRuns:
    """The runs a window started while its project had no file, and their move on its first save."""

    def __init__(self, ui: TrainingUI) -> None:
        self.ui = ui
        self.runs: list[tuple[Path, str]] = []   # (run folder, the project's name it was named after)
        self.waiting: list[tuple[Path, str]] = []  # saved while it trained: moves when it ends

    def started(self, run_dir: Path) -> None:
        document = self.ui.document
        if document.path is None and run_dir.parent == runs_root(None) and \
                all(path != run_dir for path, _ in self.runs):
            self.runs.append((run_dir, run_stem(document)))

    def forget(self) -> None:
        """Another project in the window (Open, New): its runs are not this one's."""
        self.runs.clear()
        self.waiting.clear()

    def saved(self) -> None:
        """The project has a file now: bring its runs along (those still training, when they end)."""
        if self.ui.document.path is None or not self.runs:
            return
        runs, self.runs = self.runs, []
        controller = self.ui.controller
        now = [(path, stem) for path, stem in runs if not (controller.running and path == controller.run_dir)]
        self.waiting += [entry for entry in runs if entry not in now]
        self._move(now)

    def ended(self) -> None:
        if self.ui.document.path is not None and self.waiting:
            waiting, self.waiting = self.waiting, []
            self._move(waiting)

    def is_waiting(self, run_dir: Path | None) -> bool:
        return any(path == run_dir for path, _ in self.waiting)

    def _move(self, runs: list[tuple[Path, str]]) -> None:
        ui, document = self.ui, self.ui.document
        root, stem = runs_root(document.path), run_stem(document)
        moved, failed = 0, []
        for path, old_stem in runs:
            if not path.is_dir():  # deleted from the Runs tab meanwhile
                continue
            try:
                target = move_run_dir(path, root, renamed_run(path.name, old_stem, stem))
            except OSError as exc:
                failed.append(f"{path.name} ({exc.strerror or exc})")
                log.warning("could not move run %s into %s: %s", path, root, exc)
                continue
            moved += 1
            self._follow(path, target)
        ui.runs_panel.set_root(root, stem)
        ui.selected = [path for path in ui.selected if path.is_dir()]
        ui._refresh_plots()
        ui.update_progress()  # the progress lines name the last run by its new folder, as the table does
        if failed:
            ui.window.show_message(f"Could not move {', '.join(failed)} into {root}; "
                                   f"{'it stays' if len(failed) == 1 else 'they stay'} in {runs_root(None)}")
        elif moved:
            ui.window.show_message(f"Moved {moved} run{'s' * (moved != 1)} trained before the first save into {root}")

    def _follow(self, old: Path, new: Path) -> None:
        """Everything that named the run by its folder names the new one."""
        ui, controller = self.ui, self.ui.controller
        if controller.run_dir == old:
            controller.run_dir = new
            if controller.run is not None:
                controller.run.name = new.name
        live = ui.runs_panel.live.pop(old, None)
        if live is not None:
            ui.runs_panel.live[new] = live
        ui.selected = [new if path == old else path for path in ui.selected]
        ui._overlay_cache.pop(old, None)
