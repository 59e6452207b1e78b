"""The bottom dock: Problems, Plots, Runs, Code and Log tabs.

Plots and Runs hold honest placeholders until a training run exists; other
parts add their tabs with :meth:`BottomPanel.add_tab` (the code view does).
The Log tab shows the ``revstudio`` logger, including unexpected errors.
"""
from __future__ import annotations

import logging
import time

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import QLabel, QPlainTextEdit, QTabWidget, QVBoxLayout, QWidget


def placeholder(title: str, text: str) -> QWidget:
    """A centred explanation for a tab whose content does not exist yet."""
    w = QWidget()
    layout = QVBoxLayout(w)
    label = QLabel(f"<p style='font-size:14px; font-weight:600'>{title}</p><p>{text}</p>")
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

    def detach(self, logger: logging.Logger) -> None:
        logger.removeHandler(self.handler)


class BottomPanel(QTabWidget):
    """The tab widget inside the bottom dock."""

    def __init__(self, problems: QWidget, parent: QWidget | None = None) -> None:
        super().__init__(parent)
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
        self.addTab(problems, "Problems")
        self.addTab(self.plots, "Plots")
        self.addTab(self.runs, "Runs")
        self.addTab(self.log, "Log")

    def tabInserted(self, index: int) -> None:  # noqa: N802 - Qt API
        super().tabInserted(index)
        self.setTabToolTip(index, self.tabText(index))  # an elided "P…" names itself on hover

    def add_tab(self, widget: QWidget, title: str) -> int:
        """Add a tab before Log (the log stays last); replaces a tab of the same title."""
        for i in range(self.count()):
            if self.tabText(i) == title:
                self.removeTab(i)
                break
        index = self.insertTab(self.indexOf(self.log), widget, title)
        return index

    def replace_tab(self, title: str, widget: QWidget) -> None:
        """Put ``widget`` in the place of the tab ``title`` (the training UI fills Plots and Runs)."""
        for i in range(self.count()):
            if self.tabText(i) == title:
                old = self.widget(i)
                current = self.currentIndex() == i
                self.removeTab(i)
                self.insertTab(i, widget, title)
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
            if self.tabText(i) == title:
                return self.widget(i)
        return None

    def set_problem_count(self, errors: int, warnings: int) -> None:
        n = errors + warnings
        text = f"Problems ({n})" if n else "Problems"
        self.setTabText(self.indexOf(self.problems), text)
        self.setTabToolTip(self.indexOf(self.problems), text)
