"""The bottom dock: Problems, Plots, Runs, Code and Log tabs.

Plots and Runs hold honest placeholders until a training run exists; other
parts add their tabs with :meth:`BottomPanel.add_tab` (the code view does).
The Log tab shows the ``revstudio`` logger, including unexpected errors.
In a dock too narrow for the names, the tabs show icons with tight padding (the name in the
tooltip and for screen readers) rather than going behind scroll arrows.
"""
from __future__ import annotations

import logging
import time
from typing import Any

from PySide6.QtCore import QEvent, QObject, QSize, Qt, Signal
from PySide6.QtGui import QFontDatabase, QIcon
from PySide6.QtWidgets import QLabel, QPlainTextEdit, QTabBar, QTabWidget, QVBoxLayout, QWidget

from revstudio.qt import theme
from revstudio.qt.theme import icon

TITLE = "outputTabTitle"  # a page's tab title (what add_tab/tab use), whatever its tab shows
ICONS = {"Problems": "warning", "Plots": "plot", "Runs": "train", "Code": "code", "Memory": "memory",
         "Log": "log"}
# the themes' 14 px a side was most of a tab: at 900 px and 200 % scale Log went behind the arrows
COMPACT_PAD = 7
COMPACT_TAB = f"QTabBar::tab {{ padding: 6px {COMPACT_PAD}px; }}"


class OutputTabBar(QTabBar):
    """A tab bar whose icon-only tabs are as wide as the icon and the compact padding: Qt adds
    16 px of its own around an icon, so six icon tabs still took 276 px."""

    compact = False

    def tabSizeHint(self, index: int) -> QSize:  # noqa: N802 - Qt API
        hint = super().tabSizeHint(index)
        if not self.compact or self.tabIcon(index).isNull():
            return hint
        text = self.tabText(index)
        width = self.iconSize().width() + 2 * COMPACT_PAD
        if text:
            width += 4 + self.fontMetrics().horizontalAdvance(text)
        return QSize(min(width, hint.width()), hint.height())

    def minimumTabSizeHint(self, index: int) -> QSize:  # noqa: N802 - Qt API
        return self.tabSizeHint(index) if self.compact else super().minimumTabSizeHint(index)


def placeholder(title: str, text: str) -> QWidget:
    """A centred explanation for a tab whose content does not exist yet."""
    w = QWidget()
    layout = QVBoxLayout(w)
    label = QLabel(f"<p style='font-size:{theme.px(14)}px; font-weight:600'>{title}</p><p>{text}</p>")
    label.setObjectName("placeholder")
    label.setAlignment(Qt.AlignmentFlag.AlignCenter)
    label.setWordWrap(True)
    layout.addWidget(label)
    return w


class _Bridge(QObject):
    line = Signal(str)


class LogHandler(logging.Handler):
    """Forwards log records to the Log tab; safe to call from any thread."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.bridge = _Bridge()
        self.setFormatter(logging.Formatter("%(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            stamp = time.strftime("%H:%M:%S", time.localtime(record.created))
            text = self.format(record)
            self.bridge.line.emit(f"{stamp}  {record.levelname.lower():<7} {text}")
        except Exception:  # logging must never raise into the caller
            self.handleError(record)


class LogView(QPlainTextEdit):
    """Read-only log with a bounded number of lines."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setReadOnly(True)
        self.setMaximumBlockCount(5000)
        self.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.handler = LogHandler()
        self.handler.bridge.line.connect(self.appendPlainText)

    def attach(self, logger: logging.Logger) -> None:
        logger.addHandler(self.handler)
        if logger.level == logging.NOTSET or logger.level > logging.INFO:
            logger.setLevel(logging.INFO)
        if "revstudio.plugins".startswith(logger.name):
            self._earlier_plugin_problems()

    def _earlier_plugin_problems(self) -> None:
        """Plugins load with the first document, before the window has a Log: what they reported
        then reached only the terminal, while the status bar said "see the Log tab"."""
        from revstudio.core import plugins

        for problem in plugins.problems():
            self.handler.handle(logging.LogRecord(plugins.log.name, logging.WARNING, __file__, 0, "%s",
                                                  (problem,), None))

    def detach(self, logger: logging.Logger) -> None:
        logger.removeHandler(self.handler)


class BottomPanel(QTabWidget):
    """The tab widget inside the bottom dock."""

    def __init__(self, problems: QWidget, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setTabBar(OutputTabBar(self))
        self.setDocumentMode(True)
        self.tabBar().setDrawBase(False)
        # In a narrow dock (900 px at 200 % scale) the last tabs went behind scroll arrows:
        # tabs shrink to "Mem…" first, and scroll only when even that does not fit.
        self.tabBar().setElideMode(Qt.TextElideMode.ElideRight)
        self.problems = problems
        self.plots = placeholder("Plots", "Live plots of loss, accuracy and memory start with a training run.")
        self.runs = placeholder("Runs", "Training runs of this project will be listed here: "
                                "each run starts with a training run from the Run menu or "
                                "<code>revstudio train</code>.")
        self.log = LogView()
        self.problems_text = "Problems"
        self.compact = False
        self._overhead = 28.0  # px a tab adds to its name (padding, margins), measured when names show
        self._fitting = False
        for widget, title in ((problems, "Problems"), (self.plots, "Plots"), (self.runs, "Runs"),
                              (self.log, "Log")):
            self._insert(self.count(), widget, title)

    def _insert(self, index: int, widget: QWidget, title: str) -> int:
        widget.setProperty(TITLE, title)
        index = self.insertTab(index, widget, title)
        self._fit_labels()
        return index

    def title(self, index: int) -> str:
        """The tab's name ("Problems"), also while it shows an icon."""
        widget = self.widget(index)
        name = widget.property(TITLE) if widget is not None else None
        return str(name) if name else self.tabText(index)

    def label(self, index: int) -> str:
        """What the tab says in full ("Problems (3)"): its tooltip and accessible name."""
        return self.problems_text if self.widget(index) is self.problems else self.title(index)

    def _fit_labels(self) -> None:
        """Names where they all fit the dock's width; icons (tight padding, the name on hover and for
        screen readers) where they would go behind scroll arrows."""
        if self._fitting:
            return
        self._fitting = True
        try:
            for _ in range(2):  # a second pass where the named tabs measured a new overhead
                overhead = self._overhead
                self._show_labels()
                if self.compact or overhead == self._overhead:
                    break
        finally:
            self._fitting = False

    def _show_labels(self) -> None:
        bar = self.tabBar()
        labels = [self.label(i) for i in range(self.count())]
        metrics = bar.fontMetrics()
        need = sum(metrics.horizontalAdvance(t) + self._overhead for t in labels)
        compact = self.width() > 0 and need > self.width()
        if compact != self.compact:
            self.compact = compact
            if isinstance(bar, OutputTabBar):
                bar.compact = compact
            bar.setStyleSheet(COMPACT_TAB if compact else "")
        for i, text in enumerate(labels):
            name = ICONS.get(self.title(i)) if compact else None
            # an icon-only Problems tab keeps its count ("3")
            shown = text if name is None else text[len(self.title(i)):].strip(" ()")
            if bar.tabText(i) != shown:
                bar.setTabText(i, shown)
            bar.setTabIcon(i, icon(name) if name else QIcon())
            bar.setTabToolTip(i, text)  # an elided or icon-only tab names itself on hover
            bar.setAccessibleTabName(i, text)
        if not compact and labels:  # what a named tab adds to its name, in the style now applied
            self._overhead = max(0.0, bar.tabSizeHint(0).width() - metrics.horizontalAdvance(bar.tabText(0)))

    def resizeEvent(self, event: Any) -> None:  # noqa: N802 - Qt API
        super().resizeEvent(event)
        self._fit_labels()

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt API
        super().changeEvent(event)
        if event.type() in (QEvent.Type.PaletteChange, QEvent.Type.StyleChange, QEvent.Type.FontChange):
            self._fit_labels()  # re-tint the icons; a new style's padding is measured on the names

    def tabRemoved(self, index: int) -> None:  # noqa: N802 - Qt API
        super().tabRemoved(index)
        self._fit_labels()

    def add_tab(self, widget: QWidget, title: str) -> int:
        """Add a tab before Log (the log stays last); replaces a tab of the same title."""
        for i in range(self.count()):
            if self.title(i) == title:
                self.removeTab(i)
                break
        return self._insert(self.indexOf(self.log), widget, title)

    def replace_tab(self, title: str, widget: QWidget) -> None:
        """Put ``widget`` in the place of the tab ``title`` (the training UI fills Plots and Runs)."""
        for i in range(self.count()):
            if self.title(i) == title:
                old = self.widget(i)
                current = self.currentIndex() == i
                self.removeTab(i)
                self._insert(i, widget, title)
                if current:
                    self.setCurrentIndex(i)
                if title == "Plots":
                    self.plots = widget
                elif title == "Runs":
                    self.runs = widget
                if old is not None:
                    old.deleteLater()
                return
        self.add_tab(widget, title)

    def tab(self, title: str) -> QWidget | None:
        for i in range(self.count()):
            if self.title(i) == title:
                return self.widget(i)
        return None

    def set_problem_count(self, errors: int, warnings: int) -> None:
        n = errors + warnings
        self.problems_text = f"Problems ({n})" if n else "Problems"
        self._fit_labels()
