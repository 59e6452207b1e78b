"""The main window's look and layout: the colour theme, File > Preferences and the dock layout
kept between sessions (``Settings``), reset by View > Reset Layout.

:class:`WindowSettingsMixin` is mixed into ``MainWindow``, which owns the parts it restyles.
"""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, cast

from PySide6.QtCore import QByteArray, QRect, Qt
from PySide6.QtWidgets import QApplication

from revstudio.qt import actions as act
from revstudio.qt import theme
from revstudio.qt.fit_scroll import FRAME, keep_on_screen, screen_of
from revstudio.qt.preferences import PreferencesDialog
from revstudio.qt.window_mixin import WindowMixin

if TYPE_CHECKING:
    from revstudio.qt.main_window import MainWindow


class WindowSettingsMixin(WindowMixin):
    """Theme, preferences and saved layout of ``MainWindow``."""

    if TYPE_CHECKING:  # provided by MainWindow
        settings: Any
        actions_by_name: Any
        tabs: Any
        node_palette: Any
        diagnostics: Any
        inspector: Any
        autosaver: Any
        dock_sizes: Any
        palette_dock: Any
        inspector_dock: Any
        history_dock: Any
        bottom_dock: Any
        _default_state: Any

        def current_view(self) -> Any: ...

        def show_message(self, text: str) -> None: ...

    def toggle_theme(self) -> None:
        self.set_theme("light" if theme.current() == "dark" else "dark")

    def toggle_overview(self) -> None:
        """View > Overview: on or off on every canvas, and so on the next start."""
        on = self.actions_by_name["overview"].isChecked()
        self.settings.overview = on
        self.tabs.set_overview(on)

    def focus_overview(self) -> None:
        """View > Focus Overview (Ctrl+Shift+O): the keys to the canvas's overview, and back again.

        With View > Overview off it turns it on (the user asked for the map); where the whole graph
        is in view there is no map to move, and the status bar says so."""
        view = self.current_view()
        overview = getattr(view, "overview", None)
        if overview is None:
            return
        if overview.hasFocus():
            view.setFocus(Qt.FocusReason.ShortcutFocusReason)
            return
        if not overview.wanted:
            self.actions_by_name["overview"].setChecked(True)
            self.toggle_overview()
        if not overview.take_focus():
            self.show_message("The whole graph is in view, so there is no overview to move: it shows "
                              "(and Ctrl+Shift+O reaches it) once the graph does not fit the canvas")

    def set_theme(self, name: str) -> None:
        app = QApplication.instance()
        if isinstance(app, QApplication):
            theme.apply_theme(app, name)
        self.settings.theme = theme.current()
        self.actions_by_name["dark_theme"].setChecked(theme.current() == "dark")
        act.retint(cast("MainWindow", self))
        self.tabs.set_theme(theme.current() == "dark")
        self.node_palette.populate()  # category swatches follow the canvas colours
        highlighter = getattr(getattr(self, "code_view", None), "highlighter", None)
        if highlighter is not None and hasattr(highlighter, "set_dark"):
            highlighter.set_dark(theme.current() == "dark")
        self.diagnostics.refresh()
        self.inspector.refresh_facts()
        training = getattr(self, "training", None)
        if training is not None:
            training.runs_panel.restyle()  # status colours are per cell, not in the stylesheet
        if "pyqtgraph" in sys.modules:  # no plot exists before pyqtgraph is imported (start-up skips it)
            from revstudio.qt.plots.plot_theme import restyle_all

            restyle_all()

    def show_preferences(self) -> PreferencesDialog:
        """File > Preferences: a window-modal dialog applied on OK."""
        dialog = PreferencesDialog(self.settings, self)
        dialog.applied.connect(self.apply_preferences)
        dialog.open()
        return dialog

    def apply_preferences(self) -> None:
        if self.settings.theme != theme.current():
            self.set_theme(self.settings.theme)
        app = QApplication.instance()
        if self.settings.text_scale != theme.text_scale() and isinstance(app, QApplication):
            theme.set_text_scale(app, self.settings.text_scale)
            self.inspector.refresh_facts()  # (rich text with sizes of its own)
            self.tabs.set_theme(theme.current() == "dark")  # the cards' words (their cached paints)
            if "pyqtgraph" in sys.modules:
                from revstudio.qt.plots.plot_theme import restyle_all

                restyle_all()  # the legends' text size
        self.autosaver.timer.setInterval(self.settings.autosave_seconds * 1000)

    def _restore_layout(self) -> None:
        geometry, state = self.settings.layout()
        if geometry is not None:
            self.restoreGeometry(geometry)
        if state is not None:
            self.restoreState(state)

    def fit_to_screen(self, available: QRect | None = None) -> None:
        """Shrink the window to the screen's free area (``available``: that area) and keep it on it.

        The 1440x900 first size, or a layout saved on a bigger monitor, opened past the edges of
        a 1366x768 laptop: the status bar, the inspector's values and the dock edges were off
        screen and, without a window manager that clamps, unreachable."""
        if available is None:
            screen = screen_of(self)
            if screen is None:
                return
            available = screen.availableGeometry()
        room = available.size() - FRAME
        width, height = min(self.width(), room.width()), min(self.height(), room.height())
        if (width, height) != (self.width(), self.height()):
            self.resize(width, height)
        keep_on_screen(self, available)

    def reset_layout(self) -> None:
        self.restoreState(self._default_state)
        for dock in (self.palette_dock, self.inspector_dock, self.history_dock, self.bottom_dock):
            dock.show()
        self.resizeDocks([self.inspector_dock, self.history_dock], [560, 200], Qt.Orientation.Vertical)
        self.resizeDocks([self.palette_dock, self.inspector_dock], [230, 320], Qt.Orientation.Horizontal)
        self.resizeDocks([self.bottom_dock], [230], Qt.Orientation.Vertical)
        self.dock_sizes.preferred.clear()  # the next layout pass takes these as the user's sizes
        self.dock_sizes._timer.start()

    def save_layout(self) -> None:
        self.settings.save_layout(QByteArray(self.saveGeometry()), QByteArray(self.saveState()))
        self.settings.sync()
