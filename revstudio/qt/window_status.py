"""The main window's status-bar figures: parameters, errors and warnings, the batch field and
the memory estimate, refreshed from the document's report, and messages (``show_message``), which
end in "…" where they do not fit beside the figures (whole in the tooltip and the Log).

:class:`StatusFiguresMixin` is mixed into ``MainWindow``; the bar itself is
:class:`~revstudio.qt.status_bar.MessageStatusBar`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtWidgets import QLabel

from revstudio.qt import report_facts as rf
from revstudio.qt.window_mixin import WindowMixin


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

    def show_message(self, text: str) -> None:
        self.status_bar.showMessage(text, 6000)
