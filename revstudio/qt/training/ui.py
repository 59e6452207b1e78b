"""Training in the window: the Run menu, Train/Stop, progress, the Plots and Runs tabs.

:func:`install` adds everything to a :class:`MainWindow` without the window
knowing the details: actions (Train F5, Stop Shift+F5, Run Settings Ctrl+F5,
gradient check and memory of the drawn project), the Run menu and toolbar
buttons, a progress bar in the status bar, and the two bottom tabs. The Plots
tab is built on first use: pyqtgraph costs the editor's start-up a second
(``lazy_tab.LazyTab``). The Runs tab's actions are ``run_actions``'s, the gradient
check and memory in child processes ``child_diagnostics``'s (mixins of ``TrainingUI``).
"""
from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Qt, QTimer
from PySide6.QtGui import QAction, QKeySequence

from revstudio.qt.plots.rows import RunData, SavedRows
from revstudio.qt.runs.panel import RunsPanel
from revstudio.qt.runs.run_progress import RunProgress
from revstudio.qt.theme import icon
from revstudio.qt.training.adopt import UnsavedRuns
from revstudio.qt.training.child_diagnostics import ChildDiagnosticsMixin
from revstudio.qt.training.child_query import ChildQuery
from revstudio.qt.training.controller import TrainController, run_stem, runs_root
from revstudio.qt.training.lazy_tab import LazyTab
from revstudio.qt.training.run_actions import RunActionsMixin
from revstudio.qt.training.words import in_app_words

if TYPE_CHECKING:  # pragma: no cover
    from revstudio.qt.main_window import MainWindow
    from revstudio.qt.plots.panel import PlotsPanel

log = logging.getLogger("revstudio")
PROGRESS_MS = 200
FIRST_LOAD_MS = 30.0  # a selected saved run's rows filed at once: a short run's all of them
LOAD_MS = 8.0         # then per turn of the event loop, across the runs still being read


def _set_status(run: RunData, status: str | None) -> None:
    if status is not None:
        run.status = status
        run.version += 1



class TrainingUI(RunActionsMixin, ChildDiagnosticsMixin, QObject):
    """Owns the run controller and the training widgets of one window."""

    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self.window = window
        self.document = window.document
        self.controller = TrainController(window.document, self)
        self.runs_panel = RunsPanel()
        self.plots_tab = LazyTab(self._build_plots, scroll=True)
        self.status_progress = RunProgress(compact=True)
        self.status_progress.hide()
        self.dialogs: list[Any] = []        # diagnostics windows
        self.queries: list[ChildQuery] = []
        self._overlay_cache: dict[Path, tuple[float, RunData]] = {}
        self._loading: dict[Path, SavedRows] = {}  # saved runs shown whose rows are still being filed
        self.selected: list[Path] = []
        self.unsaved = UnsavedRuns(self)  # runs trained before the first save move in with it
        self.last_failure = ""

        window.bottom.replace_tab("Plots", self.plots_tab)
        window.bottom.replace_tab("Runs", self.runs_panel)
        window.status_bar.add_figure(self.status_progress, first=True)
        self._build_actions()
        self.controller.started.connect(self._run_started)
        self.controller.ended.connect(self._run_ended)
        self.controller.changed.connect(self._rows_filed)
        self.controller.message.connect(window.show_message)
        self.runs_panel.selectionChanged.connect(self._selection_changed)
        self.runs_panel.labelChanged.connect(self._refresh_plots)
        self.runs_panel.actionRequested.connect(self.run_action)
        self.document.pathChanged.connect(self._path_changed)
        self.document.graphReplaced.connect(self._graph_replaced)
        self.timer = QTimer(self)
        self.timer.setInterval(PROGRESS_MS)
        self.timer.timeout.connect(self.update_progress)
        self._path_changed()

    # ---- actions and menu -----------------------------------------------------------
    def _action(self, name: str, text: str, slot: Any, shortcut: str | None, icon_name: str | None,
                tip: str) -> QAction:
        act = QAction(text, self.window)
        act.setObjectName(name)
        if shortcut:
            act.setShortcut(QKeySequence(shortcut))
            act.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        if icon_name:
            act.setIcon(icon(icon_name))
            act.setProperty("icon_name", icon_name)  # retinted with the theme
        act.setStatusTip(tip)
        act.setToolTip(f"{tip} ({shortcut})" if shortcut else tip)
        act.triggered.connect(lambda _c=False: slot())
        self.window.addAction(act)
        self.window.actions_by_name[name] = act
        return act

    def _build_actions(self) -> None:
        w = self.window
        self._action("train", "&Train", self.train, "F5", "train",
                     "Train this project (synthetic data and defaults unless Run Settings say otherwise)")
        self._action("train_from_weights", "Train From &Weights…", self.train_from_weights, None, None,
                     "Train this project starting from weights of your own (a state_dict file, a checkpoint "
                     "or a run folder's last one) instead of fresh ones")
        self._action("stop", "&Stop", self.stop, "Shift+F5", "stop", "Stop the run (its last checkpoint is kept)")
        self._action("run_settings", "Run &Settings…", self.edit_settings, "Ctrl+F5", "run-settings",
                     "Data, loss, optimizer, schedule, device, precision, mode and intervals of training")
        self._action("gradcheck_project", "&Gradient Check", self.gradcheck_project, None, None,
                     "Compare reversible and standard gradients of the drawn project on one batch")
        self._action("memory_project", "Measure &Memory at Training Batch", self.memory_project, None, None,
                     "Measure the peak memory of one training step in each mode at the Run Settings' batch, "
                     "in a window of its own (the Memory tab measures at its own batch, device and precision)")
        self._action("show_plots", "Show &Plots", lambda: self.show_tab("Plots"), None, None, "The live plots")
        self._action("show_runs", "Show R&uns", lambda: self.show_tab("Runs"), None, None, "Every run of the project")
        menu = w.menuBar().addMenu("&Run")
        help_action = next((a for a in w.menuBar().actions() if a.text().replace("&", "") == "Help"), None)
        if help_action is not None:  # keep Help last
            w.menuBar().removeAction(menu.menuAction())
            w.menuBar().insertMenu(help_action, menu)
        for name in ("train", "train_from_weights", "stop", None, "run_settings", None, "gradcheck_project", "memory_project",
                     "memory_depth", None,
                     "show_plots", "show_runs"):
            if name is None:
                menu.addSeparator()
            else:
                menu.addAction(w.actions_by_name[name])
        self.run_menu = menu
        toolbar = getattr(w, "toolbar", None)
        if toolbar is not None:
            toolbar.addSeparator()
            for name in ("train", "stop", "run_settings"):
                toolbar.addAction(w.actions_by_name[name])
        self._update_actions()

    def _update_actions(self) -> None:
        running = self.controller.running
        a = self.window.actions_by_name
        a["stop"].setEnabled(running)
        a["train"].setToolTip("A run is training: stop it first (Shift+F5)" if running else
                              "Train this project (F5)")

    def show_tab(self, title: str) -> None:
        self.window.bottom_dock.show()
        widget = self.window.bottom.tab(title)
        if widget is not None:
            self.window.bottom.setCurrentWidget(widget)

    # ---- plots ------------------------------------------------------------------------
    def _build_plots(self) -> PlotsPanel:
        from revstudio.qt.plots.panel import PlotsPanel

        panel = PlotsPanel()
        panel.set_runs(self.shown_runs())
        return panel

    @property
    def plots(self) -> PlotsPanel:
        return self.plots_tab.ensure()

    def shown_runs(self) -> list[RunData]:
        """The live run first, then the runs selected in the Runs tab (their curves overlaid)."""
        runs: list[RunData] = []
        live = self.controller.run
        live_dir = self.controller.run_dir
        ours = live_dir is not None and self.runs_panel.entry(live_dir) is not None  # (not another project's)
        if live is not None and (self.controller.running or ours and (not self.selected
                                                                       or live_dir in self.selected)):
            runs.append(live)
        for path in self.selected:
            if path == live_dir and live is not None:
                continue
            runs.append(self._load_run(path))
        if live is not None and live_dir is not None and (entry := self.runs_panel.entry(live_dir)) is not None:
            live.label = entry.label
        return runs

    def _load_run(self, path: Path) -> RunData:
        metrics = path / "metrics.jsonl"
        try:
            stamp = metrics.stat().st_mtime_ns + metrics.stat().st_size
        except OSError:
            stamp = 0
        cached = self._overlay_cache.get(path)
        if cached is None or cached[0] != stamp:
            data = RunData(path.name)
            entry = self.runs_panel.entry(path)
            if entry is not None:
                data.status = entry.status
            old = self._loading.pop(path, None)
            if old is not None:
                old.close()
            # the folder's status (a killed run's) once the rows' own are filed; a short run is filed
            # whole now, a long one a few milliseconds per turn of the event loop (its curves grow)
            load = SavedRows(metrics, data, then=lambda run, s=(entry.status if entry else None): _set_status(run, s))
            cached = self._overlay_cache[path] = (stamp, data)
            if not load.pump(FIRST_LOAD_MS):
                self._loading[path] = load
                QTimer.singleShot(0, self, self._file_saved_rows)
        entry = self.runs_panel.entry(path)
        cached[1].label = entry.label if entry is not None else None  # (relabelled without new rows)
        return cached[1]

    def _file_saved_rows(self) -> None:
        """File a few milliseconds of the selected saved runs' rows (in the order they were selected), then
        let the event loop take input and paint before the next few; a run no longer shown is let go."""
        deadline = time.perf_counter() + LOAD_MS / 1000.0
        for path, load in list(self._loading.items()):
            cached = self._overlay_cache.get(path)
            if cached is None or cached[1] is not load.run or path not in self.selected:
                load.close()  # (deselected, deleted or moved: read again if it is selected again)
                self._loading.pop(path, None)
                self._overlay_cache.pop(path, None)
                continue
            left = (deadline - time.perf_counter()) * 1000.0
            if left <= 0:
                break
            if load.pump(left):
                self._loading.pop(path, None)
        if self._loading:
            QTimer.singleShot(0, self, self._file_saved_rows)

    def _refresh_plots(self) -> None:
        if self.plots_tab.content is not None:
            self.plots.set_runs(self.shown_runs())

    def _selection_changed(self, paths: list[Path]) -> None:
        self.selected = list(paths)
        self._refresh_plots()

    # ---- train / stop ------------------------------------------------------------------
    def train_from_weights(self) -> str | None:
        """Run > Train From Weights…: ask for the weights, then Train from them (``revstudio train
        --init``: weights that do not fit are refused by the run, its message in the Runs tab)."""
        start = str(Path(self.document.path).parent if self.document.path else Path.cwd())
        path = self.window.dialogs.weights_path(self.window, start)
        return self.train(init=path) if path else None

    def train(self, init: str | None = None) -> str | None:
        """Start a run (from the weights ``init`` names, else fresh); returns the refusal's reason
        (also shown) or None."""
        if not self._own_copy_first():
            return "Not started: Save As was cancelled"
        reason = self.controller.start(init)
        if reason:
            self.window.show_message(reason)
            if self.controller.running:
                self.runs_panel.show_failure(reason)
            else:
                self.window.dialogs.error(self.window, "Cannot train", reason)
        return reason

    def _own_copy_first(self) -> bool:
        """A shipped example opened by its path: offer Save As before Train, so its runs go beside the
        user's copy; declined, they go to the app's data folder (said in the status bar). False where
        the Save As that was accepted was then cancelled."""
        from revstudio.resources import is_shipped

        path = self.document.path
        if not path or not is_shipped(path):
            return True
        root = runs_root(path)
        if self.window.dialogs.confirm(
                self.window, "Train a shipped example",
                f"{Path(path).name} is an example shipped with revstudio, whose folder is not yours to write "
                f"runs in. Save your own copy first (Save As), so its runs go beside it? "
                f"(No trains it as it is, its runs in {root}.)"):
            return bool(self.window.files.save_as())
        self.window.show_message(f"Runs of the shipped example {Path(path).name} go to {root}")
        return True

    def stop(self) -> bool:
        return self.controller.stop()

    def _run_started(self, run: RunData) -> None:
        run_dir = self.controller.run_dir
        if run_dir is not None:
            self.unsaved.started(run_dir)
            self.runs_panel.live[run_dir] = run
            self.runs_panel.set_root(run_dir.parent, run_stem(self.document))
        self.selected = []
        self.runs_panel.clear_failure()
        self.runs_panel.table.clearSelection()
        self.status_progress.show()
        self.timer.start()
        self.show_tab("Plots")
        self._refresh_plots()
        self._update_actions()
        log.info("training %s: %s", run.name, " ".join(self.controller._process.arguments()  # type: ignore[union-attr]
                                                       if self.controller._process else []))

    def _rows_filed(self, run: RunData) -> None:
        """Say in the Log what became of the run's uint8 inputs (scaled to [0, 1], or kept raw) and what
        its thread count does to its numbers (a resume on another count, more threads than CPUs), once
        its started row is in, and a resume on another device than the run's last (a GPU machine's run
        on a laptop): as `revstudio train` prints them, never silent."""
        notes = [run.info.get("inputs"), *(run.info.get("threads_notes") or ()), *(run.info.get("device_notes") or ())]
        notes = [n for n in notes if n]
        if notes and not run.inputs_said:
            run.inputs_said = True
            for note in notes:
                log.info("run %s: %s", run.name, in_app_words(str(note)))

    def _run_ended(self, run: RunData) -> None:
        self.unsaved.ended()  # (a run trained before the first save joins the project's runs now)
        self.runs_panel.clear_failure()  # (a Train refused while it ran is old news; its own failure follows)
        self.update_progress()
        self.timer.stop()
        self.runs_panel.set_stale(False)
        self.runs_panel.reload()
        self._update_actions()
        if self.plots_tab.content is not None:
            self.plots.set_runs(self.shown_runs())  # (a run of a project no longer open leaves them)
            self.plots.refresh(force=True)
        if run.status == "failed":
            tail = self.controller.stderr_tail()
            text = (f"Train was refused before it started (no run was kept): {run.message}"
                    if self.controller.run_removed else f"Run {run.name} failed: {run.message}")
            if tail:
                text += "\n\nWhat it printed last:\n" + "\n".join(tail)
            self.last_failure = text
            self.runs_panel.show_failure(text)
            self.show_tab("Runs")
            log.error("%s", text)
            self.window.dialogs.error(self.window, "Training failed", text)
        elif run.status == "stopped":
            log.info("run %s stopped at step %d", run.name, run.step)
        elif run.early:
            log.info("run %s finished: %s", run.name, run.early)
        else:
            log.info("run %s finished at step %d", run.name, run.step)
        if run.warning and run.status != "failed":
            log.warning("run %s: %s", run.name, run.warning)
        if run.note:
            log.info("run %s: %s", run.name, run.note)

    def update_progress(self) -> None:
        run = self.controller.run
        if run is not None and self.controller.run_removed and not self.controller.running:
            self._no_run_left(run)
            return
        elapsed = self.controller.elapsed_s() if run is not None else 0.0
        for widget in (self.status_progress, self.runs_panel.progress):
            widget.show_run(run, elapsed)
        live_dir = self.controller.run_dir
        if self.controller.running and live_dir is not None and self.unsaved.is_waiting(live_dir):
            self.runs_panel.set_stale(True, f"Run {live_dir.name} started before the project was saved: it "
                                            f"moves into {self.runs_panel.root} when it ends.")
        elif self.controller.running and live_dir is not None and self.runs_panel.entry(live_dir) is None:
            self.runs_panel.set_stale(True, f"Run {live_dir.name} belongs to another project (its folder is "
                                            f"{live_dir}); it trains on until it ends or you stop it (Shift+F5).")
        else:
            self.runs_panel.set_stale(self.controller.is_stale())
        if run is not None and run.ended:
            what = "the loss diverged" if run.warning and run.warning.startswith("the loss diverged") else \
                "not learning"
            diverged = f" ({what}: see Plots)" if run.warning and run.status != "failed" else ""
            if run.note and not diverged:
                diverged = " (too short to check that it learns: see Log)"
            self.status_progress.label.setText(
                {"stopped": f"stopped at step {run.step}", "failed": f"failed at step {run.step}"}.get(
                    run.status, f"finished: {run.early or f'{run.step} step' + 's' * (run.step != 1)}") + diverged)

    def _no_run_left(self, run: RunData) -> None:
        """The last run ended before it started and its folder is gone (a refused start, a Stop while
        the worker loaded): the progress line names no run that is not there, and says what happened."""
        for widget in (self.status_progress, self.runs_panel.progress):
            widget.show_run(None, 0.0)
        how = "was stopped" if run.status == "stopped" else "was refused"
        self.runs_panel.progress.label.setText(
            f"No run training: the last Train {how} before it started and left no run; Train (F5) starts one")
        self.status_progress.hide()
        if self.controller.run_dir is not None:
            self.runs_panel.live.pop(self.controller.run_dir, None)
        self.runs_panel.set_stale(False)

    # ---- settings ----------------------------------------------------------------------
    def edit_settings(self) -> Any:
        from revstudio.qt.training.settings_dialog import RunSettingsDialog

        dialog = RunSettingsDialog(self.document, self.window)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.open()
        return dialog

    # ---- the project's runs --------------------------------------------------------------------
    def _graph_replaced(self) -> None:
        self.unsaved.forget()
        if not self.controller.running:  # an ended run's progress was the old project's, not this one's
            self.status_progress.hide()
            self.runs_panel.progress.show_run(None, 0.0)
        self._path_changed()

    def _path_changed(self, *_args: object) -> None:
        """Another project (Open, New, Save As): its runs in the Runs tab, and in Plots only its
        runs and a run still training (the one run the window trains, whichever project started it).
        A first save brings the runs trained before it along (``adopt.UnsavedRuns``)."""
        self.unsaved.saved()
        self.runs_panel.set_root(runs_root(self.document.path), run_stem(self.document))
        self.selected = self.runs_panel.selected_paths()
        self._refresh_plots()

    # ---- closing -------------------------------------------------------------------------------------
    def shutdown(self) -> None:
        for query in self.queries:
            query.kill()
        self.controller.shutdown()


def install(window: MainWindow) -> TrainingUI:
    """Add training to ``window`` (called once by the window)."""
    return TrainingUI(window)
