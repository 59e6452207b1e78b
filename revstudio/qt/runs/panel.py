"""The Runs tab: the live run's progress, and every run of this project read from its folder.

Each row is one run directory (running, finished, stopped, failed) with its
settings, final metrics and duration. Selecting rows overlays their curves in
the Plots tab; the buttons act on the selection (open the snapshot, compare
its settings with the current ones, resume, gradient-check its checkpoint,
delete). A filter box (``run_filter_box``) hides the runs its words do not match; those are never
selected. The panel only shows and asks: the training UI does the work.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QFileSystemWatcher, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from revstudio.qt import theme
from revstudio.qt.flow_layout import FlowLayout
from revstudio.qt.plots.rows import RunData, human_duration
from revstudio.qt.runs.compare_runs import setting_text
from revstudio.qt.runs.compare_worker import DetailComparer
from revstudio.qt.runs.run_dirs import RunEntry, belongs_to, list_run_dirs, read_run_dir
from revstudio.qt.runs.run_filter_box import RunFilterBox, hide_rows
from revstudio.qt.runs.run_progress import RunProgress
from revstudio.qt.runs.run_table import COLUMNS, LABEL, PATH_ROLE, SORT_ROLE, STATUS, make_item, sort_key
from revstudio.qt.runs.sample_run import SAMPLE_TIP, sample_refusal
from revstudio.qt.settings import Settings
from revstudio.qt.training.words import early_resume_words, in_app_words
from revstudio.training.run_status import RESUMABLE, early_stopped
from revstudio.training.runs import RunDirError, write_label

RESUME_TIP = "Continue this run from its last checkpoint"


def _row_tip(entry: RunEntry) -> str:
    """A run's row tooltip: its message and the weights it started from (``train --init``), if any."""
    lines = [in_app_words(entry.message) if entry.message else "",
             f"started from weights: {entry.init_from}" if entry.init_from else ""]
    return "\n".join(line for line in lines if line)


class RunsPanel(QWidget):
    """The table of runs, the live progress and the actions on the selection."""

    selectionChanged = Signal(list)      # [Path] of the selected runs
    actionRequested = Signal(str, list)  # action name, [Path]: open / compare / resume / gradcheck / evaluate / sample / export / delete
    labelChanged = Signal(object)        # Path of a run whose label was edited here

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("runsPanel")
        self.root: Path | None = None
        self.stem: str | None = None
        self.entries: list[RunEntry] = []
        self.live: dict[Path, RunData] = {}   # runs started here override what their folder says
        self.progress = RunProgress()
        self.stale = QLabel("")
        self.stale.setObjectName("runStale")
        self.stale.setProperty("tone", "warning")
        self.stale.hide()
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        # only the label cell takes edits (make_item): double-click, F2, or the context menu's Edit Label
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.DoubleClicked
                                   | QAbstractItemView.EditTrigger.EditKeyPressed)
        self.table.verticalHeader().setVisible(False)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        column, descending = Settings().runs_sort()
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(COLUMNS.index(column) if column in COLUMNS else COLUMNS.index("started"),
                                Qt.SortOrder.DescendingOrder if descending else Qt.SortOrder.AscendingOrder)
        header.sortIndicatorChanged.connect(self._sorted)
        self.table.itemSelectionChanged.connect(self._selection_changed)
        self.table.itemChanged.connect(self._label_edited)
        self.filter = RunFilterBox(self, self.table)  # (hides the rows its words do not match: docs/editor.md)
        self.filter.changed.connect(self._filter_changed)
        self.table.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.table.customContextMenuRequested.connect(self._context_menu)
        self._failure = ""  # the last run's failure (show_failure), shown while nothing is selected
        self.detail = QPlainTextEdit()
        self.detail.setReadOnly(True)
        self.detail.setObjectName("runDetail")
        self.comparer = DetailComparer(self)  # several runs' detail, made off the UI thread
        self.comparer.ready.connect(self.detail.setPlainText)
        self.detail.setPlaceholderText("Select a run to see its message and settings; select several to see "
                                        "which settings differ and which did best.")
        self.buttons: dict[str, QPushButton] = {}
        row = FlowLayout()  # wraps in a narrow panel rather than cutting the buttons' words
        for name, text, tip in (
                ("open", "Open Snapshot", "Open the project exactly as this run trained it, in a read-only tab"),
                ("compare", "Compare Settings", "This run's settings side by side with the current project's"),
                ("resume", "Resume", RESUME_TIP),
                ("gradcheck", "Gradient Check", "Compare reversible and standard gradients at this run's "
                                                "checkpoint"),
                ("evaluate", "Evaluate…", "Score this finished or stopped run's checkpoint on the samples it held "
                                          "out: loss, accuracy per class, confusion matrix (revstudio evaluate)"),
                ("sample", "Sample…", SAMPLE_TIP),
                ("export", "Export with Weights…", "Write this run's network as PyTorch code (OUT.py) and its "
                                                   "trained weights beside it (OUT.pt), as revstudio export RUN does"),
                ("delete", "Delete…", "Delete the selected run folders (asks first)")):
            button = QPushButton(text)
            button.setToolTip(tip)
            button.clicked.connect(lambda _c=False, n=name: self.actionRequested.emit(n, self.selected_paths()))
            self.buttons[name] = button
            row.addWidget(button)
        refresh = QPushButton("Refresh")
        refresh.clicked.connect(self.reload)
        row.addWidget(refresh)
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self.table)
        split.addWidget(self.detail)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.progress)
        layout.addWidget(self.stale)
        layout.addLayout(row)
        layout.addWidget(self.filter)
        layout.addWidget(split, 1)
        self._reload_soon = QTimer(self)
        self._reload_soon.setSingleShot(True)
        self._reload_soon.setInterval(300)
        self._reload_soon.timeout.connect(self.reload)
        self.watcher = QFileSystemWatcher(self)
        self.watcher.directoryChanged.connect(lambda _p: self._reload_soon.start())
        # a running run's own files change without its folder coming or going: its status.json
        # (step, loss) is looked at once a second while some listed run is running, and only
        # its row's cells that changed are rewritten (no reload: no flicker, sort and selection kept)
        self._seen: dict[Path, tuple[int, int, int] | None] = {}
        self.poll = QTimer(self)
        self.poll.setInterval(1000)
        self.poll.timeout.connect(self.refresh_running)
        self._update_buttons()

    # ---- contents -------------------------------------------------------------
    def set_root(self, root: Path | None, stem: str | None = None) -> None:
        """The project's runs folder (watched: runs started from a terminal appear too) and the
        project's name, which its runs' folders start with (other projects' runs there are not listed)."""
        if self.watcher.directories():
            self.watcher.removePaths(self.watcher.directories())
        self.root, self.stem = root, stem
        if root is not None and root.is_dir():
            self.watcher.addPath(str(root))
        self.reload()

    def reload(self) -> None:
        if self.table.state() == QAbstractItemView.State.EditingState:
            self._reload_soon.start()  # (a label being typed is not thrown away by a live run's rows)
            return
        selected = set(self.selected_paths())
        if self.root is not None and self.root.is_dir() and str(self.root) not in self.watcher.directories():
            self.watcher.addPath(str(self.root))
        self.entries = [e for e in list_run_dirs(self.root) if belongs_to(e.name, self.stem)] \
            if self.root is not None else []
        self.table.blockSignals(True)
        self.table.setSortingEnabled(False)  # (rows filled in place, then sorted once)
        self.table.clearSelection()
        self.table.setRowCount(len(self.entries))
        for i, entry in enumerate(self.entries):
            for j, (text, key) in enumerate(self._cells(entry)):
                item = make_item(j, text, key, str(entry.path))
                if j == STATUS:
                    item.setForeground(_colour(theme.status_colour(text)))
                if j != LABEL and _row_tip(entry):
                    item.setToolTip(_row_tip(entry))
                self.table.setItem(i, j, item)
        self.table.setSortingEnabled(True)
        self.filter.show_count(hide_rows(self.table, self.filter.rule()), len(self.entries))
        self._select(selected)  # (those the filter shows: a run hidden is not acted on)
        self.table.blockSignals(False)
        self._update_buttons()
        self._show_detail()
        self._seen = {e.path: _signature(e.path) for e in self.entries if self._followed(e)}
        self._poll_if_running()

    def _followed(self, e: RunEntry) -> bool:
        """Whether a run's status.json may still change: it runs, its live run here has not ended, it is
        unknown (another machine's run, which that machine goes on writing; a status being rewritten), or
        it has none yet (a folder seen before its worker wrote it)."""
        live = self.live.get(e.path)
        return e.status in ("running", "unknown") or (live is not None and not live.ended) or \
            (e.guessed and not (e.path / "status.json").exists())

    def _poll_if_running(self) -> None:
        if self._seen and not self.poll.isActive():
            self.poll.start()
        elif not self._seen:
            self.poll.stop()

    def refresh_running(self) -> None:
        """Rewrite the cells of each running run whose status.json changed since it was read (its
        step, loss, status and duration); the rest of the table is left as it is."""
        if self.table.state() == QAbstractItemView.State.EditingState:
            return  # (a label being typed: the next tick)
        changed = [p for p, sig in self._seen.items() if _signature(p) != sig]
        if not changed:
            return
        selected = set(self.selected_paths())
        self.table.blockSignals(True)
        self.table.setSortingEnabled(False)  # (cells rewritten in place, then sorted once)
        for path in changed:
            entry = read_run_dir(path)
            self.entries = [entry if e.path == path else e for e in self.entries]
            self._seen.pop(path)
            if self._followed(entry):
                self._seen[path] = _signature(path)
            row = next((r for r in range(self.table.rowCount()) if (item := self.table.item(r, 0)) is not None
                        and Path(str(item.data(PATH_ROLE))) == path), None)
            if row is not None:
                self._rewrite_row(row, entry)
        self.table.setSortingEnabled(True)
        if set(self.selected_paths()) != selected:
            self.table.clearSelection()
            self._select(selected)
        self.table.blockSignals(False)
        self._poll_if_running()
        if self.filter.rule():  # (a status the words name may have come or gone)
            self._filter_changed()
        if selected & set(changed):
            self._update_buttons()
            self._show_detail()

    def _rewrite_row(self, row: int, entry: RunEntry) -> None:
        for j, (text, key) in enumerate(self._cells(entry)):
            item = self.table.item(row, j)
            if item is None or j == LABEL or item.text() == text:
                continue
            item.setText(text)
            item.setData(SORT_ROLE, sort_key(key))
            if j == STATUS:
                item.setForeground(_colour(theme.status_colour(text)))
        tip = _row_tip(entry)
        for j in range(self.table.columnCount()):
            item = self.table.item(row, j)
            if item is not None and j != LABEL:
                item.setToolTip(tip)

    def restyle(self) -> None:
        """Recolour the status cells for the theme just applied."""
        for row in range(self.table.rowCount()):
            item = self.table.item(row, STATUS)
            if item is not None:
                item.setForeground(_colour(theme.status_colour(item.text())))

    def _cells(self, e: RunEntry) -> list[tuple[str, Any]]:
        """Each column's text and the value it sorts by."""
        live = self.live.get(e.path)
        status, step, metrics = e.status, e.step, dict(e.metrics)
        if live is not None and (live.status in ("running", "starting") or status == "running"
                                 or live.ended):
            status = {"starting": "running"}.get(live.status, live.status)
            step = max(step, live.step)
            metrics = {**metrics, **live.metrics}
        total = e.total_steps or (live.total_steps if live is not None else None)
        c = e.config
        started = (e.started or "").replace("T", " ")[:19]
        numbers = [metrics.get("loss"), metrics.get("val_loss"), metrics.get("val_accuracy")]
        return [(e.name, e.name), (e.label or "", e.label or ""), (status, status),
                (f"{step}" + (f" / {total}" if total else ""), step),
                *((_metric(v), v if _metric(v) else None) for v in numbers),
                (str(c.get("mode", "")), str(c.get("mode", ""))), (_metric(c.get("lr")), c.get("lr")),
                (str(c.get("batch_size", "")), c.get("batch_size")), (str(c.get("data", "")), str(c.get("data", ""))),
                (started, e.started or ""), (human_duration(e.duration_s()), e.duration_s())]

    def selected_paths(self) -> list[Path]:
        """The selected runs in the listing's order (newest first), whatever the table is sorted by:
        each run keeps its overlay colour when the table is sorted again."""
        chosen = {str(i.data(PATH_ROLE)) for i in self.table.selectedItems() if not self.table.isRowHidden(i.row())}
        return [e.path for e in self.entries if str(e.path) in chosen]

    def select_paths(self, paths: list[Path]) -> None:
        self.table.clearSelection()
        self._select(set(paths))

    def _select(self, paths: set[Path]) -> None:
        mode = self.table.selectionMode()
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.MultiSelection)
        for row in range(self.table.rowCount()):
            item = self.table.item(row, 0)
            if item is not None and not self.table.isRowHidden(row) and Path(str(item.data(PATH_ROLE))) in paths:
                self.table.selectRow(row)
        self.table.setSelectionMode(mode)

    def _filter_changed(self) -> None:
        """Show the runs the filter's words match; a selected run it hides is deselected (its curves leave
        the plots, the detail and the buttons act on the runs shown: Delete… never on a run out of sight)."""
        picked = self.table.selectionModel().hasSelection()  # (typing with nothing selected: no paths read)
        before = self.selected_paths() if picked else []
        self.filter.show_count(hide_rows(self.table, self.filter.rule()), len(self.entries))
        if picked:
            self._drop_hidden()
            if self.selected_paths() != before:
                self._selection_changed()

    def _drop_hidden(self) -> None:
        """Deselect the rows the filter hides (Ctrl+A and Shift+click select them too), so none comes
        back selected when the words change."""
        model = self.table.selectionModel()
        rows = {i.row() for i in model.selectedRows() if self.table.isRowHidden(i.row())}
        if rows:
            from PySide6.QtCore import QItemSelectionModel

            self.table.blockSignals(True)
            for row in rows:
                model.select(self.table.model().index(row, 0), QItemSelectionModel.SelectionFlag.Deselect
                             | QItemSelectionModel.SelectionFlag.Rows)
            self.table.blockSignals(False)

    # ---- sorting and labels ------------------------------------------------------
    def _sorted(self, column: int, order: Qt.SortOrder) -> None:
        Settings().set_runs_sort(COLUMNS[column], order == Qt.SortOrder.DescendingOrder)

    def edit_label(self, path: Path) -> None:
        """Open the label cell of ``path``'s row for typing (F2 and double-click do the same)."""
        for row in range(self.table.rowCount()):
            item = self.table.item(row, LABEL)
            if item is not None and Path(str(item.data(PATH_ROLE))) == path:
                self.table.setCurrentItem(item)
                self.table.editItem(item)
                return

    def _label_edited(self, item: QTableWidgetItem) -> None:
        if item.column() != LABEL:
            return
        path = Path(str(item.data(PATH_ROLE)))
        entry = self.entry(path)
        if entry is None or item.text() == (entry.label or ""):
            return
        try:
            entry.info.label = write_label(str(path), item.text())
        except RunDirError as exc:
            self._reload_soon.start()  # (the cell goes back to the label on disk)
            todo = "free some space" if exc.full else "check that you can write to the run's folder"
            self.detail.setPlainText(f"The label of run {path.name} was not saved: cannot write {exc.path} "
                                     f"({exc.why}); {todo}, then edit the label again.")
            return
        self._reload_soon.start()  # (not now: the cell's editor is still closing)
        self._show_detail()
        self.labelChanged.emit(path)

    def _context_menu(self, pos: Any) -> None:
        from PySide6.QtWidgets import QMenu

        item = self.table.itemAt(pos)
        if item is None:
            return
        path = Path(str(item.data(PATH_ROLE)))
        menu = QMenu(self.table)
        menu.addAction("Edit Label…", lambda: self.edit_label(path)).setShortcut("F2")
        for button in self.buttons.values():
            if button.isEnabled():
                menu.addAction(button.text(), button.click)
        menu.popup(self.table.viewport().mapToGlobal(pos))

    def entry(self, path: Path) -> RunEntry | None:
        return next((e for e in self.entries if e.path == path), None)

    def _selection_changed(self) -> None:
        if self.filter.rule():
            self._drop_hidden()
        self._update_buttons()
        self._show_detail()
        self.selectionChanged.emit(self.selected_paths())

    def _update_buttons(self) -> None:
        paths = self.selected_paths()
        one = len(paths) == 1
        entry = self.entry(paths[0]) if one else None
        for name in ("open", "compare"):
            self.buttons[name].setEnabled(one)
        self.buttons["resume"].setEnabled(entry is not None and entry.status in RESUMABLE
                                          and entry.checkpoint.exists())
        early = early_stopped(str(entry.path)) if entry is not None and entry.status == "finished" else None
        self.buttons["resume"].setToolTip(early_resume_words(early, str(entry.path)) if entry is not None and early
                                          else RESUME_TIP)  # (a run that stopped early: why Resume is off)
        self.buttons["gradcheck"].setEnabled(entry is not None and entry.snapshot.exists())
        self.buttons["evaluate"].setEnabled(entry is not None and entry.status in ("finished", "stopped")
                                            and entry.snapshot.exists() and entry.checkpoint.exists())
        refusal = sample_refusal(entry.path) if entry is not None else None  # (a run that is no flow: why not)
        self.buttons["sample"].setEnabled(self.buttons["evaluate"].isEnabled() and refusal is None)
        self.buttons["sample"].setToolTip(refusal or SAMPLE_TIP)
        self.buttons["export"].setEnabled(entry is not None and entry.snapshot.exists() and entry.checkpoint.exists())
        self.buttons["delete"].setEnabled(bool(paths))

    def _show_detail(self, extra: str = "") -> None:
        paths = self.selected_paths()
        entry = self.entry(paths[0]) if len(paths) == 1 else None
        if entry is None:
            several = [e for e in (self.entry(p) for p in paths) if e is not None]
            if len(several) > 1:  # (made on a worker thread: _compared shows it)
                text = self.comparer.request(several, [self._latest_metrics(e) for e in several], setting_text)
                if text is not None:
                    self.detail.setPlainText(text)
                return
            self.comparer.cancel()
            # nothing picked: the last run's failure (a refused run's folder is gone, so no row has it)
            self.detail.setPlainText("\n\n".join(t for t in (self._failure, extra) if t))
            return
        self.comparer.cancel()
        status = self._cells(entry)[STATUS][0]  # (the status cell's: what the app saw live comes first)
        lines = [f"{entry.name}: {status}" + (f" ({entry.label})" if entry.label else "")]
        live = self.live.get(entry.path)
        messages = [entry.message]
        if live is not None and live.message and live.message != entry.message:
            # the app watched this run end: what it saw replaces the folder's guess ("killed:
            # its process is gone"), which would say the same thing twice
            messages = [live.message] if entry.guessed else [*messages, live.message]
        lines += [in_app_words(m) for m in messages if m]
        if entry.init_from:
            lines.append(f"started from weights: {entry.init_from}")
        if entry.checkpoint.exists():
            lines.append(f"checkpoint: {entry.checkpoint}")
            if (entry.path / "model.py").is_file():  # (how the trained network goes into one's own code)
                lines.append(f"code: {entry.path / 'model.py'} (from model import Model; model = Model(); "
                             "model.load_state_dict(torch.load(checkpoint, map_location='cpu', weights_only=True)['model']))")
        from revstudio.qt.runs.evaluation_view import latest_evaluation
        from revstudio.training.run_exports import export_summary, export_text

        # (Evaluate… writes the one, Export with Weights… the other)
        lines += [e for e in (latest_evaluation(entry.path), export_text(export_summary(str(entry.path)))) if e]
        if extra:
            lines += ["", extra]
        if entry.config:
            lines += ["", "settings:"] + [f"  {k}: {setting_text(k, v)}" for k, v in sorted(entry.config.items())]
        self.detail.setPlainText("\n".join(lines))

    def _latest_metrics(self, e: RunEntry) -> dict[str, Any]:
        live = self.live.get(e.path)
        return {**e.metrics, **(live.metrics if live is not None else {})}

    def show_failure(self, text: str) -> None:
        """A failed run's message and stderr tail, shown whatever is selected, and again whenever
        nothing is (a reload, an emptied selection) until :meth:`clear_failure`."""
        self._failure = text
        self.detail.setPlainText(text)

    def clear_failure(self) -> None:
        """A new run started: the last one's failure is no longer the news."""
        self._failure = ""

    def set_stale(self, stale: bool, text: str | None = None) -> None:
        self.stale.setText(text or "The project was edited after this run started: it trains the older version "
                           "saved in its run folder (project.revs).")
        self.stale.setVisible(stale)


def _signature(path: Path) -> tuple[int, int, int] | None:
    """What changes when a run's status.json is rewritten (replaced atomically: a new file)."""
    try:
        info = (path / "status.json").stat()
    except OSError:
        return None
    return info.st_mtime_ns, info.st_ino, info.st_size


def _metric(v: Any) -> str:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return ""
    return f"{v:.4g}"


def _colour(name: str) -> Any:
    from PySide6.QtGui import QBrush, QColor

    return QBrush(QColor(name))
