"""The main window's status-bar figures: parameters, errors and warnings, the batch field and
the memory estimate, refreshed from the document's report, and messages that borrow the memory
figure's room while they show (``show_message``).

:class:`StatusFiguresMixin` is mixed into ``MainWindow``; the bar itself is
:class:`~revstudio.qt.status_bar.MessageStatusBar`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtWidgets import QLabel

from revstudio.qt import report_facts as rf
from revstudio.qt.window_mixin import WindowMixin

_NO_LIMIT = (1 << 24) - 1  # Qt's QWIDGETSIZE_MAX, which PySide6 does not export


class StatusFiguresMixin(WindowMixin):
    """The status bar of ``MainWindow`` and the figures on it."""

    if TYPE_CHECKING:  # provided by MainWindow
        document: Any
        bottom: Any

    def _build_status_bar(self) -> None:
        from revstudio.qt.status_bar import MessageStatusBar

        bar = self.status_bar = MessageStatusBar(self)
        self.setStatusBar(bar)
        self.status_params = QLabel()
        self.status_errors = QLabel()
        self.status_errors.setObjectName("statusErrors")
        self.status_warnings = QLabel()
        self.status_warnings.setObjectName("statusWarnings")
        from revstudio.qt.memory_figures import BatchField, ElidedLabel

        self.status_memory = ElidedLabel()  # the widest item: "…" in a narrow window, whole in its tooltip
        self.status_memory.setObjectName("statusMemory")

        self.status_batch = BatchField(self.document)
        self.status_batch.setObjectName("statusBatch")
        for w in (self.status_params, self.status_errors, self.status_warnings, self.status_batch,
                  self.status_memory):
            bar.add_figure(w)
        bar.messageChanged.connect(self._message_changed)

    def _update_status(self) -> None:
        report = self.document.report
        params = getattr(report, "parameters", None)
        partial = rf.counts(report)[0] > 0  # layers past an error have no shape, so no size yet
        self.status_params.setText(f"{rf.human_count(params)}{'+' * partial} parameters" if params is not None else "")
        self.status_params.setToolTip("Counted over the layers whose shapes are known; fix the errors for the total"
                                      if partial else "")
        errors, warnings = rf.counts(report)
        if not self.document.estimate_pending:  # else the figures follow once walked (estimateChanged)
            self._update_memory_status()
        self.status_errors.setText(f"● {errors} error{'s' * (errors != 1)}")
        self.status_warnings.setText(f"▲ {warnings} warning{'s' * (warnings != 1)}")
        for label, bad in ((self.status_errors, errors > 0), (self.status_warnings, warnings > 0)):
            label.setProperty("bad", bad)
            label.style().unpolish(label)
            label.style().polish(label)
        self.bottom.set_problem_count(errors, warnings)

    def _update_memory_status(self) -> None:
        """The memory figures, once the report's peaks are walked: kept and peak of one state."""
        from revstudio.qt.memory_figures import show_waiting, status_text, status_tooltip

        report = self.document.report
        errors = rf.counts(report)[0]
        show_waiting(self.status_memory, False)
        text = status_text(report)
        if text:
            # with errors the layers past the break have no shape, so no size: partial, like the count
            self.status_memory.setText(f"so far: {text}" if errors else text)
            self.status_memory.setToolTip(("Counted over the layers whose shapes are known: fix the errors for "
                                           "the total.\n" if errors else "") + status_tooltip(report))
        else:
            self.status_memory.setText("memory estimate: connect an Input to see it" if not errors
                                       else "memory estimate: fix the errors first")

    def _memory_status_waiting(self) -> None:
        from revstudio.qt.memory_figures import show_waiting

        show_waiting(self.status_memory, True)

    def _message_changed(self, text: str) -> None:
        if not text:  # the message is gone: the figures have their room back
            self.status_memory.setMaximumWidth(_NO_LIMIT)
            self.status_memory.setVisible(True)

    def show_message(self, text: str) -> None:
        bar = self.status_bar
        # The memory summary is the widest permanent item; a message that would be cut
        # (a path, a rename) borrows its room for the few seconds it shows.
        room = bar.width() - sum(w.width() + 8 for w in bar.figures if w.isVisible() and w is not self.status_memory)
        # The figures give way as in a narrow window (ending in "…") while they keep a few words;
        # only a message that leaves less than that hides them.
        spare = room - bar.fontMetrics().horizontalAdvance(text) - 24 - 8
        memory = self.status_memory
        memory.setMaximumWidth(max(memory.MIN_WIDTH, spare) if spare < memory.sizeHint().width() else _NO_LIMIT)
        memory.setVisible(spare >= memory.MIN_WIDTH)
        bar.showMessage(text, 6000)
