"""The Runs tab's actions on run folders: open a run's snapshot, compare its settings, resume, check its
gradients, evaluate it, sample a flow, export it with its weights, delete. :class:`RunActionsMixin` is mixed into ``ui.TrainingUI``, which owns the parts it uses.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt

from revstudio.qt.runs.run_dirs import delete_run_dir
from revstudio.qt.training import section as sec

if TYPE_CHECKING:  # pragma: no cover
    from revstudio.qt.main_window import MainWindow
    from revstudio.qt.plots.rows import RunData
    from revstudio.qt.runs.panel import RunsPanel
    from revstudio.qt.training.child_query import ChildQuery
    from revstudio.qt.training.controller import TrainController


class RunActionsMixin:
    """``TrainingUI.run_action(name, paths)``, the slot of ``RunsPanel.actionRequested``, and its actions."""

    if TYPE_CHECKING:  # provided by TrainingUI
        window: MainWindow
        document: Any
        controller: TrainController
        runs_panel: RunsPanel
        selected: list[Path]
        _overlay_cache: dict[Path, tuple[float, RunData]]

        def _load_run(self, path: Path) -> RunData: ...

        def _refresh_plots(self) -> None: ...

        def gradcheck_run(self, path: Path) -> ChildQuery: ...

    def run_action(self, name: str, paths: list[Path]) -> Any:
        if not paths:
            return None
        if name == "open":
            return self.open_snapshot(paths[0])
        if name == "compare":
            return self.compare_settings(paths[0])
        if name == "resume":
            return self.controller.resume(paths[0], self._load_run(paths[0]) if paths[0] != self.controller.run_dir
                                          else None)
        if name == "gradcheck":
            return self.gradcheck_run(paths[0])
        if name == "evaluate":
            return self.evaluate_run(paths[0])
        if name == "sample":
            from revstudio.qt.runs.sample_run import sample_run_with_dialog

            return sample_run_with_dialog(self.window, paths[0])
        if name == "export":
            from revstudio.qt.runs.export_run import export_run_with_dialog

            return export_run_with_dialog(self.window, paths[0])
        if name == "delete":
            return self.delete_runs(paths)
        return None

    def open_snapshot(self, path: Path) -> Any:
        """The run's project snapshot in a read-only canvas tab (its view, or None if unreadable)."""
        from revstudio.qt.runs.snapshot import open_snapshot_tab

        return open_snapshot_tab(self.window, path)

    def evaluate_run(self, path: Path) -> Any:
        """``revstudio evaluate RUN --json`` in a child process, shown in a window of its own (its dialog)."""
        from revstudio.qt.runs.evaluation_view import EvaluationDialog

        dialog = EvaluationDialog(path, self.window)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.show()
        return dialog.start()

    def compare_settings(self, path: Path) -> Any:
        from revstudio.qt.training.compare_dialog import CompareDialog

        entry = self.runs_panel.entry(path)
        config = dict(entry.config) if entry is not None else {}
        dialog = CompareDialog(path.name, sec.resolved(config), sec.resolved(self.document.graph.training),
                               self.window)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.show()
        return dialog

    def delete_runs(self, paths: list[Path]) -> bool:
        live = self.controller.run_dir if self.controller.running else None
        if live in paths:
            self.window.dialogs.error(self.window, "Cannot delete", f"{live.name} is training; stop it first.")
            return False
        names = ", ".join(p.name for p in paths)
        question = f"Delete {len(paths)} run folder{'s' * (len(paths) != 1)} ({names}) with their checkpoints?"
        if not self.window.dialogs.confirm(self.window, "Delete runs", question):
            return False
        from revstudio.qt.runs.snapshot import close_snapshot_tab

        root = self.runs_panel.root
        for path in paths:
            close_snapshot_tab(self.window, path)
            try:
                delete_run_dir(path, root or path.parent)
            except (OSError, ValueError) as exc:
                self.window.dialogs.error(self.window, "Cannot delete", str(exc))
            self._overlay_cache.pop(path, None)
        self.selected = [p for p in self.selected if p not in paths]
        self.runs_panel.reload()
        self._refresh_plots()
        return True
