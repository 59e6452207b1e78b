"""The memory figures' batch and their short texts: the batch field next to them, and
lines that always say which batch and dtype a figure is for.

The batch is the project's ``training.batch_size`` (CONTRACTS section 1), the one
the training run uses; editing it is one undoable ``SetTraining``, and the
document's next analysis recomputes every figure at the new batch.
"""
from __future__ import annotations

from typing import Any

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QPainter, QPaintEvent, QResizeEvent
from PySide6.QtWidgets import QLabel, QSizePolicy, QSpinBox, QWidget

from revstudio.core.commands import SetTraining
from revstudio.diagnostics.check import training_batch
from revstudio.qt import report_facts as rf
from revstudio.qt.document import Document
from revstudio.qt.param_editors import UndoKeysToDocument

SHORT = {"standard": "std", "reversible": "rev", "checkpoint": "ckpt"}
ORDER = ("standard", "reversible", "checkpoint")
MAX_BATCH = 1 << 16


class ElidedLabel(QLabel):
    """A one-line label that gives way in a narrow window: its text ends in "…" where it does not
    fit, and the whole text then leads its tooltip. ``text()`` is always the whole text."""

    MIN_WIDTH = 80

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._tip = ""
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Preferred)

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt API
        return QSize(min(self.MIN_WIDTH, super().minimumSizeHint().width()), super().minimumSizeHint().height())

    def shown_text(self) -> str:
        return self.fontMetrics().elidedText(self.text(), Qt.TextElideMode.ElideRight, self.contentsRect().width())

    def is_elided(self) -> bool:
        return self.shown_text() != self.text()

    def setText(self, text: str) -> None:  # noqa: N802 - Qt API
        super().setText(text)
        self._sync_tip()

    def setToolTip(self, tip: str) -> None:  # noqa: N802 - Qt API
        self._tip = tip
        self._sync_tip()

    def _sync_tip(self) -> None:
        whole = self.text() if self.is_elided() else ""
        super().setToolTip("\n\n".join(t for t in (whole, self._tip) if t))

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt API
        super().resizeEvent(event)
        self._sync_tip()

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 - Qt API
        painter = QPainter(self)
        painter.setPen(self.palette().color(self.foregroundRole()))
        painter.drawText(self.contentsRect(), int(self.alignment()), self.shown_text())


class BatchField(UndoKeysToDocument, QSpinBox):
    """The batch behind the memory figures, shared with the training settings (undoable)."""

    def __init__(self, document: Document, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.document = document
        self.setRange(1, MAX_BATCH)
        self.setKeyboardTracking(False)  # one command per finished edit, not per keystroke
        self.setAccelerated(True)
        self.setPrefix("batch ")
        self.setToolTip("Batch size of the memory figures and of training (the project's "
                        "training.batch_size); Ctrl+Z undoes a change")
        self._graph: Any = None
        self._syncing = False
        self.valueChanged.connect(self._commit)
        document.graphReplaced.connect(self._attach)
        self._attach()

    def _attach(self) -> None:
        if self._graph is not None:
            self._graph.training_changed.unsub(self._on_training)
        self._graph = self.document.graph
        self._graph.training_changed.sub(self._on_training)
        self._show()

    def _on_training(self, old: Any = None, new: Any = None) -> None:
        self._show()

    def _show(self) -> None:
        self._syncing = True
        try:
            # a batch beyond the field (a hand-edited project) shows as its largest, never raises
            self.setValue(min(training_batch(self.document.graph), MAX_BATCH))
        finally:
            self._syncing = False

    def _commit(self, value: int) -> None:
        if self._syncing:
            return
        graph = self.document.graph
        if training_batch(graph) == value:
            return
        section = {**graph.training, "batch_size": int(value)}
        self.document.push(SetTraining(graph, section, f"Set batch size to {value}"))


def show_waiting(widget: QWidget, waiting: bool) -> None:
    """Grey ``widget``'s memory figures while they are of an earlier graph state (the new state's
    peaks not walked yet, past ``document.WAITING_MS``); ``waiting=False`` shows them as current."""
    widget.setProperty("waiting", waiting)
    widget.setEnabled(not waiting)  # the disabled colours: grey in every style


def estimate_of(report: Any) -> Any:
    est = getattr(report, "estimate", None)
    return est if est is not None and hasattr(est, "peak_bytes") else None


def batch_label(est: Any) -> str:
    """'batch 32, float32': what every figure is for."""
    return f"batch {est.batch}, {est.dtype}"


def status_text(report: Any) -> str | None:
    """'kept std 1.1 MiB · rev 514 KiB · ckpt 769 KiB  peak std 1.6 MiB · ...' or None."""
    est = estimate_of(report)
    if est is None:
        return None
    kept = " · ".join(f"{SHORT[m]} {rf.human_bytes(est.activation_bytes(m))}" for m in ORDER)
    peak = " · ".join(f"{SHORT[m]} {rf.human_bytes(est.peak_bytes(m))}" for m in ORDER)
    return f"{est.dtype}   kept {kept}   peak {peak}"


def status_tooltip(report: Any) -> str:
    est = estimate_of(report)
    if est is None:
        return ""
    from revstudio.diagnostics.explain import ATTRIBUTION, mode_notes

    lines = [f"Estimated memory of one training step at {batch_label(est)} (weights "
             f"{rf.human_bytes(est.parameter_bytes())} not included):"]
    for m in ORDER:
        lines.append(f"{m}: kept for backward {rf.human_bytes(est.activation_bytes(m))}, "
                     f"peak {rf.human_bytes(est.peak_bytes(m))}")
    lines += mode_notes(est)
    lines.append(ATTRIBUTION)
    lines.append("Change the batch in the field beside these figures; Memory (bottom panel) measures them.")
    return "\n".join(lines)


def region_badge(report: Any, region_id: str) -> tuple[str, str, bool]:
    """(label, tooltip, saves?) of a region's backdrop: its saving at the figures' batch."""
    est = estimate_of(report)
    region = est.regions.get(region_id) if est is not None else None
    if region is None:
        return "reversible", f"Reversible region {region_id}", True
    from revstudio.diagnostics.explain import region_text

    saved = region.saved_bytes
    peak_delta = est.peak_bytes("standard") - est.peak_bytes("reversible")
    saves = saved > 0 and peak_delta > 0
    if saves:
        # the peak is the whole model's: with several regions, say so rather than repeat it as each one's
        peak = "at the model's peak" if len(est.regions) > 1 else "peak"
        label = (f"reversible · saves {rf.human_bytes(saved)} kept, "
                 f"{rf.human_bytes(peak_delta)} {peak} ({batch_label(est)})")
    elif saved > 0:
        label = f"reversible · no saving at the peak ({batch_label(est)})"
    elif saved < 0:  # it keeps more than standard mode would: "saves nothing" undersold that
        label = f"reversible · costs {rf.human_bytes(-saved)} more than standard ({batch_label(est)})"
    else:
        label = f"reversible · saves nothing ({batch_label(est)})"
    tip = (f"Reversible region {region_id} at {batch_label(est)}: {region_text(region)}. "
           f"Peak of a training step: standard {rf.human_bytes(est.peak_bytes('standard'))}, "
           f"reversible {rf.human_bytes(est.peak_bytes('reversible'))}.")
    return label, tip, saves


def node_lines(report: Any, node_id: str) -> list[tuple[str, str]]:
    """(label, text) rows of a node's memory: kept per mode and how its bytes are attributed."""
    est = estimate_of(report)
    if est is None or node_id not in est.nodes:
        return []
    from revstudio.diagnostics.explain import node_attribution

    node = est.nodes[node_id]
    rows = [(f"Kept ({m}, {batch_label(est)})", rf.human_bytes(node.activation_bytes[m])) for m in ORDER]
    seen: dict[str, list[str]] = {}
    for m in ORDER:
        seen.setdefault(node_attribution(est, node_id, m), []).append(m)
    for text, modes in seen.items():
        if text:
            rows.append(("Why" if len(modes) == 3 else f"Why ({', '.join(modes)})", text))
    return rows
