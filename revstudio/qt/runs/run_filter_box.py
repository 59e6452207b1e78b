"""The Runs tab's filter box: type words, see only the runs they match, and how many of how many.

The words are read by ``training.run_filter`` (the rule ``revstudio runs --filter`` reads too) against
what each row shows: its run's name, project, label, status, data and mode. Rows are hidden, never
removed, so sorting, labels and a running run's cells go on as before. Ctrl+F (while the focus is in
the Runs tab; the canvas's Find Node elsewhere) puts the cursor in the box, Esc there (or anywhere in the tab while it holds
words) empties it. A table that shows no row says why in its middle (``EmptyNote``): no run yet and how to
make one, or no run matching the words and how to see them all again.
"""
from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QKeyEvent, QKeySequence
from PySide6.QtWidgets import QHBoxLayout, QLabel, QLineEdit, QTableWidget, QWidget

from revstudio.qt.runs.run_table import COLUMNS, LABEL, STATUS
from revstudio.training.run_filter import RunFilter, run_fields

_DATA, _MODE = COLUMNS.index("data"), COLUMNS.index("mode")


class _FilterEdit(QLineEdit):
    """A line whose Esc empties it (where it holds words; an empty one lets Esc go on to the window)."""

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 (Qt's name)
        if event.matches(QKeySequence.StandardKey.Cancel) and self.text():
            self.clear()
            return
        super().keyPressEvent(event)


class RunFilterBox(QWidget):
    """The box and its count ("12 of 310 runs"); ``changed`` at every edit of its words."""

    changed = Signal()

    def __init__(self, panel: QWidget, table: QTableWidget) -> None:
        super().__init__(panel)
        self.note = EmptyNote(table)
        self.edit = _FilterEdit()
        self.edit.setObjectName("runsFilter")
        self.edit.setClearButtonEnabled(True)
        self.edit.setPlaceholderText("Filter runs (Ctrl+F): name, label, status, data… or status:failed")
        self.edit.setToolTip("Shows the runs matching every word: part of the name, project, label, status, data "
                             "or mode, in any case. status:failed,killed or label:lr looks at one column. Esc "
                             "empties the box. (revstudio runs --filter reads the same words.)")
        self.edit.setAccessibleName("Filter runs")
        self.count = QLabel("")
        self.count.setObjectName("runsCount")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.edit, 1)
        layout.addWidget(self.count)
        self.edit.textChanged.connect(lambda _t: self.changed.emit())
        panel.installEventFilter(self)  # (Ctrl+F anywhere in the panel: the keys its children leave)

    def rule(self) -> RunFilter:
        return RunFilter(self.edit.text())

    def focus(self) -> None:
        self.edit.setFocus()
        self.edit.selectAll()

    def show_count(self, shown: int, total: int) -> None:
        """The count beside the box, and the table's note where it shows no row."""
        self.count.setText(f"{shown} of {total} runs" if shown != total or self.rule() else
                           f"{total} run{'' if total == 1 else 's'}")
        self.note.say(empty_words(shown, total, self.edit.text()))

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt's name)
        # the window's Ctrl+F is the canvas's Find Node: inside the Runs tab the key is taken (its
        # ShortcutOverride accepted) and comes back as a key press that no child of the panel uses
        if isinstance(event, QKeyEvent) and event.matches(QKeySequence.StandardKey.Find):
            if event.type() == QEvent.Type.ShortcutOverride:
                event.accept()
                return True
            if event.type() == QEvent.Type.KeyPress:
                self.focus()
                return True
        # Esc where the panel's children leave it (the table, a button) empties words the box holds, as the
        # table's note says; an empty box lets it go on to the window
        if isinstance(event, QKeyEvent) and event.matches(QKeySequence.StandardKey.Cancel) and self.edit.text():
            if event.type() == QEvent.Type.ShortcutOverride:
                event.accept()
                return True
            if event.type() == QEvent.Type.KeyPress:
                self.edit.clear()
                return True
        return super().eventFilter(watched, event)


def empty_words(shown: int, total: int, words: str) -> str:
    """What a table showing no row says in its middle: no run yet and how to make one, or words matching
    no run and how to see them all again; "" while some row shows."""
    if shown:
        return ""
    if not total:
        return ("No run of this project yet: Run ▸ Train (F5) starts one. Runs trained in a terminal "
                "(revstudio train PROJECT) are listed here too.")
    words = " ".join(words.split())
    quoted = words if len(words) <= 60 else words[:59] + "…"
    return f"No run matches “{quoted}”. Esc clears the filter and shows all {total} run{'' if total == 1 else 's'}."


class EmptyNote(QLabel):
    """A line in the middle of the table's viewport (words wrapped, in the theme's muted colour: its
    stylesheet's ``#runsEmpty``), shown while no row is; clicks and the context menu go through to the table."""

    def __init__(self, table: QTableWidget) -> None:
        super().__init__(table.viewport())
        self.setObjectName("runsEmpty")
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.setWordWrap(True)
        self.setMargin(16)
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self.hide()
        table.viewport().installEventFilter(self)  # (it follows the viewport's size)

    def say(self, text: str) -> None:
        if text != self.text():
            self.setText(text)
        parent = self.parentWidget()
        if parent is not None:
            self.setGeometry(parent.rect())
        self.setVisible(bool(text))

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt's name)
        if event.type() == QEvent.Type.Resize and isinstance(watched, QWidget) and watched is self.parentWidget():
            self.setGeometry(watched.rect())
        return super().eventFilter(watched, event)


def hide_rows(table: QTableWidget, rule: RunFilter) -> int:
    """Hide the rows of ``table`` that ``rule`` does not match, show the rest; returns how many are shown."""
    shown = 0
    for row in range(table.rowCount()):
        keep = not rule or rule.matches(run_fields(*[(item.text() if (item := table.item(row, j)) is not None else "")
                                                     for j in (0, LABEL, STATUS, _DATA, _MODE)]))
        if table.isRowHidden(row) == keep:
            table.setRowHidden(row, not keep)
        shown += keep
    return shown
