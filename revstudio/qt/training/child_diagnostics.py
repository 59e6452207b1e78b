"""The gradient check and the memory measurement of the drawn project or of a run, each in a child
process (``ChildQuery``: torch never loads in the editor) and shown in a window of its own.
:class:`ChildDiagnosticsMixin` is mixed into ``ui.TrainingUI``, which owns the parts it uses.
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Qt

from revstudio.core.project_format import SNAPSHOT
from revstudio.qt.training import section as sec
from revstudio.qt.training.child_query import ChildQuery

if TYPE_CHECKING:  # pragma: no cover
    from revstudio.qt.main_window import MainWindow
    from revstudio.qt.training.controller import TrainController

    _Base = QObject  # a QObject to the type checker (the queries' parent); TrainingUI derives from it
else:
    _Base = object


class ChildDiagnosticsMixin(_Base):
    """Run > Gradient Check and Measure Memory, and a run's gradient check (the Runs tab)."""

    if TYPE_CHECKING:  # provided by TrainingUI
        window: MainWindow
        document: Any
        controller: TrainController
        dialogs: list[Any]
        queries: list[ChildQuery]

    def _snapshot_file(self) -> Path:
        folder = Path(tempfile.mkdtemp(prefix="revstudio-diag-"))
        path = folder / SNAPSHOT
        path.write_text(sec.snapshot_text(self.document.graph, self.document.path), encoding="ascii")
        return path

    def _refused(self, title: str, doing: str) -> bool:
        """A graph the child would refuse is refused here, naming its errors (not a temp snapshot's path)."""
        problem = self.controller.graph_problem(doing)
        if problem:
            self.window.show_message(problem)
            self.window.dialogs.error(self.window, title, problem)
        return problem is not None

    def gradcheck_project(self) -> ChildQuery | None:
        if self._refused("Cannot check the gradients", "a gradient check"):
            return None
        snap = self._snapshot_file()
        return self._diagnose("gradcheck", "Gradient check of the drawn project", [str(snap), "--json"], snap.parent)

    def memory_project(self) -> ChildQuery | None:
        if self._refused("Cannot measure memory", "measuring memory"):
            return None
        snap = self._snapshot_file()
        batch = sec.resolved(self.document.graph.training).get("batch_size", 8)
        return self._diagnose("memory", "Memory of one training step", [str(snap), "--json", "--batch", str(batch)],
                              snap.parent)

    def gradcheck_run(self, path: Path) -> ChildQuery:
        """The gradient check at the run's last checkpoint (its trained weights), or its snapshot's."""
        snapshot, checkpoint = path / SNAPSHOT, path / "checkpoints" / "last.pt"
        if checkpoint.exists():  # `revstudio gradcheck --checkpoint` loads it (weights_only) and checks its keys
            return self._diagnose("gradcheck", f"Gradient check of {path.name} at its checkpoint",
                                  [str(snapshot), "--json", "--checkpoint", str(path)], None)
        return self._diagnose("gradcheck", f"Gradient check of {path.name}", [str(snapshot), "--json"], None)

    def _diagnose(self, kind: str, title: str, args: list[str], cleanup: Path | None) -> ChildQuery:
        query = ChildQuery("revstudio", [kind, *args], parent=self)
        self.window.show_message(f"{title}: running …")

        def answered(result: dict[str, Any]) -> None:
            if cleanup is not None:
                shutil.rmtree(cleanup, ignore_errors=True)
            self.show_diagnostics(title, kind, result)
        query.answered.connect(answered)
        self.queries = [q for q in self.queries if q.running] + [query]
        return query.start()

    def show_diagnostics(self, title: str, kind: str, result: dict[str, Any]) -> Any:
        from revstudio.qt.plots.diagnostic_plots import DiagnosticsDialog

        dialog = DiagnosticsDialog(title, kind, result, self.window)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.show()
        self.dialogs = [d for d in self.dialogs if _alive(d)] + [dialog]
        self.window.show_message(f"{title}: done")
        return dialog


def _alive(widget: Any) -> bool:
    import shiboken6

    return shiboken6.isValid(widget) and widget.isVisible()
