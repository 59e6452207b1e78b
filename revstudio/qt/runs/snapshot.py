"""A run's project snapshot, opened read-only in a canvas tab beside the project.

The snapshot (``RUN_DIR/project.revs``) is the project exactly as the run
trained it. It opens through the same reader as File > Open (so an unreadable
file gets the same message) into a :class:`SnapshotDocument` of its own: the
canvas shows it with its shapes and regions, but every edit is refused with a
message, and nothing in the window saves it (Save writes the project, never
the snapshot). The tab is named "<project> @ run <run>" and marked read-only.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import QGraphicsItem

from revstudio.core.commands import Command
from revstudio.core.project_format import SNAPSHOT
from revstudio.qt.document import Document


class SnapshotDocument(Document):
    """A document that shows a run's snapshot and refuses every edit (it has no undo history)."""

    refused = Signal(str)

    def __init__(self, graph: Any, run_dir: Path) -> None:
        super().__init__(graph, None)
        self.run_dir = run_dir
        self.snapshot = run_dir / SNAPSHOT
        # True from a refusal until control returns to the event loop: the view's own report of
        # the edit it asked for ("Deleted 6 nodes") is then untrue and is not shown
        self.refusing = False

    def push(self, cmd: Command) -> None:
        if not self.refusing:
            self.refusing = True
            QTimer.singleShot(0, self._refusal_over)
        self.refused.emit(refusal(self.run_dir, cmd.text))

    def _refusal_over(self) -> None:
        self.refusing = False


def refusal(run_dir: Path, what: str = "") -> str:
    edit = f" ({what})" if what else ""
    return (f"Not edited{edit}: this tab is run {run_dir.name}'s snapshot, read-only. To change it, "
            f"File > Open {run_dir / SNAPSHOT} and Save As a new project.")


def tab_title(graph_name: str, run_dir: Path) -> str:
    """'digits_revnet @ run 20261202-013000 (read-only)'."""
    return f"{graph_name or 'project'} @ run {run_dir.name} (read-only)"


def open_snapshot_tab(window: Any, run_dir: Path) -> Any:
    """Show ``run_dir``'s snapshot in a read-only canvas tab of ``window`` (reusing an open one).

    Returns the tab's view, or None after showing why the file cannot be read.
    """
    from revstudio.qt.files import OpenError, read_project

    tabs = window.tabs
    key = str(run_dir.resolve())
    view = tabs.read_only_view(key)
    if view is not None:
        tabs.setCurrentWidget(view)
        return view
    try:
        graph = read_project(str(run_dir / SNAPSHOT))
    except OpenError as exc:
        window.dialogs.error(window, "Cannot open the snapshot", str(exc))
        return None
    document = SnapshotDocument(graph, run_dir)
    document.refused.connect(window.show_message)
    tip = (f"The project as run {run_dir.name} trained it ({run_dir / SNAPSHOT}). Read-only: "
           "edits are refused and Save never writes it.")
    view = tabs.add_read_only(key, document, tab_title(graph.name, run_dir), tip)
    for item in view.scene().node_items.values():  # a drag would move a node the document cannot keep
        item.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIsMovable, False)
    view.openGroupRequested.connect(lambda _name: window.show_message(refusal(run_dir, "open a group")))
    window.show_message(f"Opened run {run_dir.name}'s snapshot, read-only")
    return view


def close_snapshot_tab(window: Any, run_dir: Path) -> None:
    """Close the snapshot tab of ``run_dir`` if one is open (its folder is being deleted)."""
    window.tabs.close_read_only(str(run_dir.resolve()))
