"""The main window: palette | canvas tabs | inspector, a bottom dock, menus, status bar.

The window only wires parts together: the document owns the graph and the
undo stack, the canvas tabs own the views, :class:`FileController` the file
actions, :class:`Autosaver` crash recovery, ``BottomTabsMixin`` the Code and
Memory tabs, ``StatusFiguresMixin`` the status bar and ``WindowSettingsMixin`` the
theme, preferences and layout, which persist in :class:`Settings`.
"""
from __future__ import annotations

import logging
import os
from typing import Any

import shiboken6
from PySide6.QtCore import QEvent, QMimeData, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QCloseEvent, QDragEnterEvent, QDropEvent, QStatusTipEvent
from PySide6.QtWidgets import (
    QDockWidget,
    QMainWindow,
    QMenu,
    QMessageBox,
    QUndoView,
    QWidget,
)

from revstudio import __version__
from revstudio.core.graph import Graph
from revstudio.qt import actions as act
from revstudio.qt import new_window, recovery_offer, theme
from revstudio.qt.accessible_names import name_parts
from revstudio.qt.autosave import AUTOSAVE_MS, Autosaver, RecoveryStore
from revstudio.qt.bottom_panel import BottomPanel
from revstudio.qt.bottom_tabs import BottomTabsMixin
from revstudio.qt.canvas_tabs import CanvasTabs
from revstudio.qt.diagnostics_panel import DiagnosticsPanel
from revstudio.qt.dialogs import Dialogs
from revstudio.qt.dock_sizes import DockSizeKeeper
from revstudio.qt.document import Document
from revstudio.qt.files import FileController, OpenError, examples, read_project
from revstudio.qt.group_names import GroupNames
from revstudio.qt.inspector import Inspector
from revstudio.qt.palette import PaletteWidget
from revstudio.qt.settings import Settings
from revstudio.qt.shortcuts_help import shortcuts_html
from revstudio.qt.training.ui import install as install_training
from revstudio.qt.window_settings import WindowSettingsMixin
from revstudio.qt.window_status import StatusFiguresMixin

log = logging.getLogger("revstudio")


def _local_files(data: QMimeData) -> list[str]:
    """The local files of a drop from a file manager (a project or not: the drop says which)."""
    return [url.toLocalFile() for url in (data.urls() if data.hasUrls() else []) if url.isLocalFile()]



class MainWindow(BottomTabsMixin, StatusFiguresMixin, WindowSettingsMixin, QMainWindow):
    """One window editing one document."""

    opened = Signal()  # the file given on the command line (if any) is open
    # Filled by revstudio.qt.actions.build_menus:
    recent_menu: QMenu
    examples_menu: QMenu
    panels_menu: QMenu
    groups_menu: QMenu

    def __init__(self, document: Document | None = None, settings: Settings | None = None,
                 dialogs: Dialogs | None = None, recovery: RecoveryStore | None = None,
                 autosave_ms: int = AUTOSAVE_MS) -> None:
        super().__init__()
        self.setObjectName("revstudioMainWindow")
        self.setWindowIcon(theme.app_icon())
        self.document = document or Document(Graph())
        if self.document.parent() is None:
            self.document.setParent(self)  # the window owns its document: they die together
        self.settings = settings or Settings()
        self.dialogs = dialogs or Dialogs()
        self.actions_by_name: dict[str, QAction] = {}
        self._painted = False
        self._after_paint: list[Any] = []
        self.files = FileController(self, self.document, self.settings, self.dialogs)
        self.files.restore_instead = lambda path: self.offer_recovery(path, asked=True)
        self.recovery = recovery or RecoveryStore()
        if autosave_ms == AUTOSAVE_MS:  # the default: the user's preference decides
            autosave_ms = self.settings.autosave_seconds * 1000
        self.autosaver = Autosaver(self.document, self.recovery, autosave_ms, self)
        self.autosaver.failed.connect(self.show_message)

        self.tabs = CanvasTabs(self.document, self)
        self.files.before_save.append(self.tabs.store_view)
        self.tabs.set_theme(theme.current() == "dark")
        self.setCentralWidget(self.tabs)
        self.node_palette = PaletteWidget()
        self.inspector = Inspector(self.document)
        self.history = QUndoView(self.document.undo_stack)
        self.history.setEmptyLabel("<opened>")
        self.diagnostics = DiagnosticsPanel(self.document)
        self.bottom = BottomPanel(self.diagnostics)
        self.bottom.log.attach(log)
        self.palette_dock = self._dock("Nodes", "paletteDock", self.node_palette, Qt.DockWidgetArea.LeftDockWidgetArea)
        self.inspector_dock = self._dock("Inspector", "inspectorDock", self.inspector,
                                         Qt.DockWidgetArea.RightDockWidgetArea)
        self.history_dock = self._dock("History", "historyDock", self.history, Qt.DockWidgetArea.RightDockWidgetArea)
        self.bottom_dock = self._dock("Output", "bottomDock", self.bottom, Qt.DockWidgetArea.BottomDockWidgetArea)
        self.splitDockWidget(self.inspector_dock, self.history_dock, Qt.Orientation.Vertical)
        self.setCorner(Qt.Corner.BottomLeftCorner, Qt.DockWidgetArea.LeftDockWidgetArea)
        self.setCorner(Qt.Corner.BottomRightCorner, Qt.DockWidgetArea.RightDockWidgetArea)

        self.group_names = GroupNames(self)
        act.build_actions(self)
        act.build_menus(self)
        self.toolbar = act.build_toolbar(self)
        for dock in (self.palette_dock, self.inspector_dock, self.history_dock, self.bottom_dock):
            self.panels_menu.addAction(dock.toggleViewAction())
        self.actions_by_name["dark_theme"].setChecked(theme.current() == "dark")
        self.actions_by_name["overview"].setChecked(self.settings.overview)
        self.tabs.set_overview(self.settings.overview)
        self.setAcceptDrops(True)  # .revs files dropped from a file manager open
        self._build_status_bar()
        name_parts(self)
        self._fill_examples()
        self._fill_recent(self.settings.recent_files())
        self._add_code_tab()
        self._add_memory_tab()
        self.training = install_training(self)

        self.node_palette.addRequested.connect(self.add_node_at_centre)
        self.diagnostics.nodesActivated.connect(self.select_nodes)
        self.inspector.openGroupRequested.connect(self.tabs.open_group)
        self.inspector.renameGroupRequested.connect(lambda name: self.group_names.rename(name))
        self.inspector.message.connect(self.show_message)
        self.tabs.selectionChanged.connect(self.inspector.set_selection)
        self.tabs.message.connect(self.show_message)
        self.files.message.connect(self.show_message)
        self.document.stepped.connect(self.show_message)  # "Undid Delete 1 node"
        self.files.recentChanged.connect(self._fill_recent)
        self.document.analysisChanged.connect(self._update_status)
        self.document.estimateChanged.connect(self._update_memory_status)
        self.document.estimateWaiting.connect(self._memory_status_waiting)
        # Bound methods only (no lambdas) on document signals: Qt disconnects them
        # when this window is destroyed, even if the document lives on.
        self.document.dirtyChanged.connect(self._update_title)
        self.document.pathChanged.connect(self._update_title)
        self.document.graphReplaced.connect(self._update_title)
        self.document.undo_stack.indexChanged.connect(self._update_title)

        self.resize(1440, 900)
        # Inspector gets most of the right column; the bottom dock a third of the height.
        self.resizeDocks([self.inspector_dock, self.history_dock], [560, 200], Qt.Orientation.Vertical)
        self.resizeDocks([self.palette_dock, self.inspector_dock], [230, 320], Qt.Orientation.Horizontal)
        self.resizeDocks([self.bottom_dock], [230], Qt.Orientation.Vertical)
        self._default_state = self.saveState()
        self._restore_layout()
        self.dock_sizes = DockSizeKeeper(self, [self.palette_dock, self.inspector_dock, self.history_dock,
                                                self.bottom_dock])
        self._update_title()
        self._update_status()

    # ---- construction helpers ------------------------------------------
    def _dock(self, title: str, name: str, widget: QWidget, area: Qt.DockWidgetArea) -> QDockWidget:
        dock = QDockWidget(title, self)
        dock.setObjectName(name)
        dock.setWidget(widget)
        dock.setFeatures(QDockWidget.DockWidgetFeature.DockWidgetMovable
                         | QDockWidget.DockWidgetFeature.DockWidgetClosable
                         | QDockWidget.DockWidgetFeature.DockWidgetFloatable)
        self.addDockWidget(area, dock)
        return dock

    def _update_title(self, *_args: object) -> None:
        if not shiboken6.isValid(self.document.undo_stack):  # signals while tearing down
            return
        name = self.files.display_name()
        self.setWindowTitle(f"{name}[*] — revstudio")
        self.setWindowModified(self.document.is_dirty())
        self.tabs.rename_main(self.document.graph.name or "main")

    # ---- canvas helpers ---------------------------------------------------
    def current_view(self) -> Any:
        return self.tabs.current_view()

    def add_node_at_centre(self, type_id: str) -> None:
        """The palette's Enter / double-click: in free space next to the selection."""
        self.current_view().add_node_beside_selection(type_id)

    def quick_add(self) -> None:
        """Edit > Add Node… (Shift+A): at the pointer, or beside the selection where it is off the canvas."""
        view = self.current_view()
        view.open_quick_add(view.cursor_in_view())

    def open_in_new_window(self) -> bool:
        """File > Open in New Window…: the chosen project in another editor window, this one kept."""
        path = self.dialogs.open_path(self, self.settings.last_dir())
        return bool(path) and new_window.open_window(path, self.show_message)

    def select_all(self) -> None:
        """Edit > Select All: every node of the canvas, the view left where it is (as the canvas's Ctrl+A)."""
        self.current_view().select_all()

    def select_node(self, node_id: str) -> None:
        """Show ``node_id`` of the main graph selected."""
        self.select_nodes([node_id])

    def select_nodes(self, node_ids: list[str]) -> None:
        """Show ``node_ids`` of the main graph selected and framed (diagnostics clicks)."""
        found = [n for n in node_ids if n in self.document.graph.nodes]
        if not found:
            self.show_message(f"Node {node_ids[0] if node_ids else '?'} is not on the main canvas")
            return
        self.tabs.setCurrentIndex(0)
        view = self.tabs.main_view()
        view.select_nodes(found)
        view.reveal_nodes(found)  # they may be far off screen, or specks in a fitted big graph
        self.inspector.set_selection(self.document.graph, found)

    def select_group_node(self, group: str, node_id: str) -> None:
        """Show ``node_id`` of group ``group``'s body selected, on the group's tab (code clicks)."""
        body = self.document.graph.groups.get(group)
        if body is None or node_id not in body.nodes or not self.tabs.open_group(group):
            self.show_message(f"Node {node_id} is not in group {group}")
            return
        view = self.current_view()
        view.select_nodes([node_id])
        view.reveal_node(node_id)
        self.inspector.set_selection(body, [node_id])

    # ---- files and recovery --------------------------------------------
    def _fill_recent(self, paths: list[str]) -> None:
        act.fill_recent(self.recent_menu, paths, self.files.open_file, self.files.clear_recent)

    def _fill_examples(self) -> None:
        self.examples_menu.clear()
        found = examples()
        for path in found:
            action = self.examples_menu.addAction(path.stem.replace("_", " "))
            action.setToolTip(str(path))
            action.triggered.connect(lambda _c=False, p=path: self.files.open_example(p))
        if not found:
            self.examples_menu.addAction("No examples installed").setEnabled(False)

    def offer_recovery(self, path: str | None = None, asked: bool = False) -> bool:
        """Offer the newest pending recovery file (only ``path``'s, when given); True if one was
        restored. ``asked``: the user already let the open document go (File > Open)."""
        for rec in recovery_offer.pending_for(self.recovery, self.settings.recent_files(), path):
            answer = self.dialogs.ask_restore(self, rec.describe())
            if answer == "discard":
                rec.discard()
                continue
            if answer != "restore":
                return False
            try:
                graph = read_project(str(rec.file))
            except OpenError as exc:
                self.dialogs.error(self, "Cannot restore", f"The autosaved copy cannot be read: {exc}. The file is "
                                   "kept: Ask later keeps offering it, Discard deletes it.")
                continue
            if not asked and not self.files.maybe_save():
                return False
            # an export's project (a session before exports opened untitled) is no file to save into
            self.document.replace_graph(graph, None if (rec.path or "").lower().endswith(".py") else rec.path)
            if rec.disk is not None and self.document.path:  # the file as the edits knew it: Save asks if it changed since
                self.document.remember_disk(rec.disk)
            if self.document.path:  # reopened, as an Open would: first in File > Open Recent
                self.files.recentChanged.emit(self.settings.add_recent(self.document.path))
            self.document.mark_dirty()
            rec.discard()
            self.autosaver.save_now()  # the restored edits are again only in memory: keep a copy
            self.show_message(f"Restored {rec.describe()}; save to keep it")
            log.info("restored %s", rec.describe())
            return True
        return False

    def export_code(self) -> None:
        try:
            from revstudio.qt.code_view import export_with_dialog
        except ImportError:
            self.dialogs.info(self, "Export", "Code export is not installed in this build.")
            return
        export_with_dialog(self, self.document)

    def export_onnx(self) -> None:
        """File > Export ONNX…: the network as an ONNX file, exported and checked in a child process."""
        from revstudio.qt.export_onnx import export_onnx_with_dialog

        self.onnx_export = export_onnx_with_dialog(self, self.document)

    def about(self) -> None:
        QMessageBox.about(self, "About revstudio",
                          f"<b>revstudio {__version__}</b><p>A studio for memory-saving reversible "
                          "neural networks.</p><p>Settings: " + self.settings.file_name() + "</p>")

    def show_shortcuts(self) -> None:
        """Help > Keyboard Shortcuts: every action with a key, from the actions themselves."""
        self.dialogs.info(self, "Keyboard shortcuts", shortcuts_html(self.actions_by_name))

    # ---- dropping files -----------------------------------------------------
    def dragEnterEvent(self, event: QDragEnterEvent) -> None:  # noqa: N802 - Qt API
        if _local_files(event.mimeData()):
            event.acceptProposedAction()
        else:
            super().dragEnterEvent(event)

    def dropEvent(self, event: QDropEvent) -> None:  # noqa: N802 - Qt API
        paths = _local_files(event.mimeData())
        if paths:
            event.acceptProposedAction()
            self.files.open_dropped(paths)
        else:
            super().dropEvent(event)

    # ---- closing ----------------------------------------------------------
    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt API
        # one question at a time: the run first (Cancel there asks nothing more), then unsaved
        # edits; the run is stopped only once both answers let the window close
        if not self._may_stop_run() or not self.files.maybe_save():
            event.ignore()
            return
        self.training.shutdown()  # a run is stopped (checkpointed), never left behind
        self.autosaver.shutdown()
        self.autosaver.discard()
        self.save_layout()
        self.bottom.log.detach(log)
        self.document.shutdown()  # an estimate under way on its worker is dropped, never applied
        event.accept()

    def _may_stop_run(self) -> bool:
        """Whether closing may stop the run training now (asks; True when none is training)."""
        ctl = self.training.controller
        run = ctl.run
        if not ctl.running or run is None or ctl.stopping:  # (Stop was pressed: no question to ask)
            return True
        total = f" of {run.total_steps}" if run.total_steps else ""
        if not run.step:  # still starting: no checkpoint yet, nothing a Resume could continue
            return bool(self.dialogs.ask_stop_run(
                self, f"{run.name} is still starting and has trained no step yet. "
                      "Stopping ends it before its first step, with nothing to resume."))
        return bool(self.dialogs.ask_stop_run(
            self, f"{run.name} is at step {run.step}{total}. Stopping keeps its last checkpoint; "
                  "Resume in the Runs tab continues it."))

    def open_later(self, path: str | None) -> None:
        """Open ``path`` and offer recovery once the window has been painted.

        Waiting for the first paint keeps start-up snappy: the empty window is
        on screen before a large project is read and checked.
        """
        if path is None and not new_window.started_by_new_window() and self.settings.reopen_last:
            recent = [p for p in self.settings.recent_files() if os.path.exists(p)]
            path = recent[0] if recent else None

        def go() -> None:
            target = os.path.abspath(path) if path else None
            # a file named at start: only its own autosaved copy is offered (another project's would
            # replace the file asked for); the others wait for their file, or a start without one
            restored = self.offer_recovery(target)
            if target and not restored:
                self.files.load_path(target)
            if target:
                waiting = recovery_offer.others_note(self.recovery, self.settings.recent_files(), target)
                if waiting:
                    self.show_message(waiting)
            self.opened.emit()
        if self._painted:
            QTimer.singleShot(0, go)
        else:
            self._after_paint.append(go)

    def event(self, event: QEvent) -> bool:
        if isinstance(event, QStatusTipEvent):  # a menu item's tip: in the message label, not painted over the figures
            self.statusBar().showMessage(event.tip())
            return True
        if event.type() == QEvent.Type.WindowActivate:
            # back from another program: did it change or delete the file? (asked after the event)
            QTimer.singleShot(0, self.files.check_disk)
        if event.type() == QEvent.Type.Paint and not self._painted:
            self._painted = True
            for fn in self._after_paint:
                QTimer.singleShot(0, fn)
            self._after_paint.clear()
        return super().event(event)
