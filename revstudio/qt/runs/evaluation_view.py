"""The Runs tab's Evaluate…: ``revstudio evaluate RUN --json`` in a child process, its figures drawn.

:class:`EvaluationDialog` starts the command (a :class:`ChildQuery`: torch never loads in the editor, the
window keeps painting), can cancel it (Cancel, or closing the window, kills the child), and shows the
answer: the loss and what the task adds (a run with ``checkpoints/best.pt`` offers its last or its best
weights, a choice that scores again), a confusion-matrix heatmap (:class:`ConfusionHeatmap`) and the
command's own text of the per-class figures and worst samples; a refusal is shown in its words.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QEvent, QPoint, QRect, QSize, Qt
from PySide6.QtGui import QColor, QFont, QFontDatabase, QHelpEvent, QPainter, QPaintEvent
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QToolTip,
    QVBoxLayout,
    QWidget,
)

from revstudio.qt import theme
from revstudio.qt.plots.colour_vision import relative_luminance
from revstudio.qt.training.child_query import ChildQuery


def _mix(a: QColor, b: QColor, share: float) -> QColor:
    share = min(1.0, max(0.0, share))
    return QColor(round(a.red() + (b.red() - a.red()) * share), round(a.green() + (b.green() - a.green()) * share),
                  round(a.blue() + (b.blue() - a.blue()) * share))


def _ink_on(fill: QColor) -> QColor:
    """Black or white, whichever reads on ``fill`` (its relative luminance, as WCAG weighs it)."""
    lum = relative_luminance(fill.name())
    return QColor("#000000") if (lum + 0.05) / 0.05 > 1.05 / (lum + 0.05) else QColor("#ffffff")


class ConfusionHeatmap(QWidget):
    """A classes x classes matrix: rows the true class, columns the predicted one; each cell's colour is
    its share of its row (the row's recall, so a rare class reads as clearly as a common one), its count
    written in it where it fits, and its figures in a tooltip."""

    MARGIN = 34  # room for the axis titles and class numbers

    def __init__(self, matrix: list[list[int]], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.matrix = matrix
        self.setMinimumSize(220, 220)
        self.setMouseTracking(True)
        self.setObjectName("confusionHeatmap")

    def sizeHint(self) -> QSize:
        side = self.MARGIN + max(1, len(self.matrix)) * 34
        return QSize(min(side, 640), min(side, 640))

    def share(self, row: int, col: int) -> float:
        total = sum(self.matrix[row])
        return self.matrix[row][col] / total if total else 0.0

    def fill(self, row: int, col: int) -> QColor:
        """The cell's colour: the theme's base blended toward its accent (the diagonal) or error colour (a
        confusion) by the cell's share of its row."""
        c = theme.colors()
        return _mix(QColor(c.base), QColor(c.accent if row == col else c.error), self.share(row, col))

    def _grid(self) -> tuple[int, int, int]:
        n = max(1, len(self.matrix))
        side = max(1, min(self.width(), self.height()) - self.MARGIN - 4)
        cell = max(1, side // n)
        return n, cell, self.MARGIN

    def cell_at(self, pos: QPoint) -> tuple[int, int] | None:
        n, cell, m = self._grid()
        col, row = (pos.x() - m) // cell, (pos.y() - m) // cell
        return (row, col) if 0 <= row < n and 0 <= col < n and pos.x() >= m and pos.y() >= m else None

    def paintEvent(self, event: QPaintEvent) -> None:
        c = theme.colors()
        n, cell, m = self._grid()
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing, False)
        p.fillRect(self.rect(), QColor(c.window))
        font = QFont(self.font())
        font.setPointSizeF(max(6.0, min(font.pointSizeF(), cell * 0.32)))
        p.setFont(font)
        numbers = cell >= 18  # (counts only where they can be read)
        for r in range(len(self.matrix)):
            for col in range(len(self.matrix)):
                rect = QRect(m + col * cell, m + r * cell, cell, cell)
                fill = self.fill(r, col)
                p.fillRect(rect, fill)
                if numbers:
                    p.setPen(_ink_on(fill))
                    p.drawText(rect, Qt.AlignmentFlag.AlignCenter, str(self.matrix[r][col]))
        p.setPen(QColor(c.border))
        p.drawRect(QRect(m, m, n * cell, n * cell).adjusted(0, 0, -1, -1))
        p.setPen(QColor(c.muted))
        step = max(1, (14 * n) // max(1, n * cell) + (1 if cell < 14 else 0))  # (labels that do not overlap)
        for k in range(0, n, step):
            p.drawText(QRect(m + k * cell, m - 16, cell, 14), Qt.AlignmentFlag.AlignCenter, str(k))
            p.drawText(QRect(m - 20, m + k * cell, 18, cell), Qt.AlignmentFlag.AlignRight
                       | Qt.AlignmentFlag.AlignVCenter, str(k))
        p.setPen(QColor(c.text))
        p.drawText(QRect(m, 0, n * cell, 16), Qt.AlignmentFlag.AlignCenter, "predicted class")
        p.save()
        p.translate(0, m + n * cell)
        p.rotate(-90)
        p.drawText(QRect(0, 0, n * cell, 14), Qt.AlignmentFlag.AlignCenter, "true class")
        p.restore()
        p.end()

    def event(self, e: QEvent) -> bool:
        if e.type() == QEvent.Type.ToolTip and isinstance(e, QHelpEvent):
            at = self.cell_at(e.pos())
            if at is None:
                QToolTip.hideText()
            else:
                r, col = at
                QToolTip.showText(e.globalPos(), f"true {r}, predicted {col}: {self.matrix[r][col]} "
                                  f"({100 * self.share(r, col):.1f} % of class {r})", self)
            return True
        return super().event(e)


def summary_text(result: dict[str, Any]) -> str:
    """The figures' headline: the loss and the task's own (accuracy, MSE and MAE, bits per dimension)."""
    def num(v: Any) -> str:
        return "-" if v is None else f"{v:.4g}"
    if result.get("task") == "classification":
        acc = result.get("accuracy")
        head = (f"accuracy {'-' if acc is None else f'{100 * acc:.1f} %'} ({result.get('correct')} of "
                f"{result.get('scored')})  ·  loss {num(result.get('loss'))}")
    elif result.get("task") == "regression":
        head = f"MSE {num(result.get('mse'))}  ·  MAE {num(result.get('mae'))}"
    else:
        head = f"NLL {num(result.get('bits_per_dim'))} bits/dim"
    return head


def latest_evaluation(run_dir: Path) -> str | None:
    """The run's last saved evaluation in a line (the Runs tab's detail), or None where it has none."""
    import json

    from revstudio.training.evaluation import evaluations

    for path in reversed(evaluations(str(run_dir))):
        try:
            result = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # (a damaged file: an older one may still say something)
        if isinstance(result, dict) and result.get("task"):
            return f"evaluated: {summary_text(result)} on {result.get('samples')} {result.get('split')} samples " \
                   f"({Path(path).name})"
    return None


class EvaluationDialog(QDialog):
    """Evaluate a run: the child's progress and Cancel while it runs, then its figures."""

    def __init__(self, run_dir: Path, parent: QWidget | None = None, extra: list[str] | None = None) -> None:
        super().__init__(parent)
        self.run_dir = Path(run_dir).absolute()  # (the child runs in a folder of its own)
        self.setWindowTitle(f"Evaluation of {self.run_dir.name}")
        self.setObjectName("evaluationDialog")
        self.figures: dict[str, Any] | None = None
        self.extra = list(extra or [])
        self.weights = QComboBox()  # last / best, where the run kept both
        self.weights.setObjectName("evaluationWeights")
        self.weights.setAccessibleName("Weights to score")
        self.weights.addItem("Last checkpoint (the run's last step)", "last")
        if (self.run_dir / "checkpoints" / "best.pt").is_file() and \
                (self.run_dir / "checkpoints" / "last.pt").is_file():
            self.weights.addItem("Best checkpoint (its lowest val_loss)", "best")
        self.weights.currentIndexChanged.connect(self._rescore)
        self.query = self._query()
        self.status = QLabel(self._scoring())
        self.status.setWordWrap(True)
        self.status.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.busy = QProgressBar()
        self.busy.setRange(0, 0)
        self.headline = QLabel("")
        self.headline.setObjectName("evaluationHeadline")
        bold = QFont(self.headline.font())
        bold.setBold(True)
        bold.setPointSizeF(bold.pointSizeF() * 1.2)
        self.headline.setFont(bold)
        self.headline.hide()
        self.heatmap: ConfusionHeatmap | None = None
        self.text = QPlainTextEdit()
        self.text.setReadOnly(True)
        self.text.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.text.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.text.hide()
        self.body = QSplitter(Qt.Orientation.Horizontal)
        self.body.addWidget(self.text)
        self.body.hide()
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(self.cancel)
        self.close_button = QPushButton("Close")
        self.close_button.clicked.connect(self.close)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.cancel_button)
        buttons.addWidget(self.close_button)
        self.weights_row = QWidget()  # "Weights: [Last checkpoint v]", where there is a choice
        row = QHBoxLayout(self.weights_row)
        row.setContentsMargins(0, 0, 0, 0)
        caption = QLabel("&Weights:")
        caption.setBuddy(self.weights)
        row.addWidget(caption)
        row.addWidget(self.weights)
        row.addStretch(1)
        self.weights_row.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        self.weights_row.setVisible(self.weights.count() > 1)
        layout = QVBoxLayout(self)
        layout.addWidget(self.weights_row)
        layout.addWidget(self.status)
        layout.addWidget(self.busy)
        layout.addWidget(self.headline)
        layout.addWidget(self.body, 1)
        layout.addLayout(buttons)
        self.resize(900, 560)

    def _query(self) -> ChildQuery:
        which = self.weights.currentData()
        query = ChildQuery("revstudio", ["evaluate", str(self.run_dir), "--json", *self.extra,
                                         *(["--checkpoint", which] if which != "last" else [])], parent=self)
        query.answered.connect(self._answered)
        return query

    def _scoring(self) -> str:
        return f"Scoring {self.run_dir.name}'s {self.weights.currentData()} checkpoint on the samples it held out …"

    def start(self) -> EvaluationDialog:
        self.query.start()
        return self

    def _rescore(self) -> None:
        """The other weights chosen: the figures shown go, the command runs again on them."""
        self.cancel()
        self.figures = None
        if self.heatmap is not None:
            self.heatmap.setParent(None)
            self.heatmap.deleteLater()
            self.heatmap = None
        for part in (self.headline, self.text, self.body):
            part.hide()
        self.status.setProperty("tone", None)
        self.status.setStyleSheet("")
        self.status.setText(self._scoring())
        self.busy.show()
        self.cancel_button.setEnabled(True)
        self.query = self._query()
        self.query.start()

    @property
    def running(self) -> bool:
        return self.query.running and self.figures is None

    def cancel(self) -> None:
        """Stop the child (its answer, if one still comes, is not shown)."""
        if self.running:
            self.query.answered.disconnect(self._answered)
            self.query.kill()
            self._stopped("Evaluation cancelled.")

    def _stopped(self, words: str) -> None:
        self.busy.hide()
        self.cancel_button.setEnabled(False)
        self.status.setText(words)

    def closeEvent(self, event: Any) -> None:
        self.cancel()
        super().closeEvent(event)

    def _answered(self, result: dict[str, Any]) -> None:
        self.figures = result
        if "error" in result or result.get("exit_code", 0) != 0:
            self._stopped(f"Cannot evaluate {self.run_dir.name}: {result.get('error')}")
            self.status.setProperty("tone", "error")
            self.status.setStyleSheet(f"color: {theme.colors().error};")
            return
        from revstudio.clicmd.evaluate import text_lines

        step = f" at step {result['step']}" if result.get("step") is not None else ""
        where = {"validation": "the samples it held out", "test": "the test samples"}.get(result.get("split", ""),
                                                                                            "the data given")
        self._stopped(f"{self.run_dir.name}{step}, on {where} ({result.get('samples')} samples): "
                      f"{result.get('data')}")
        self.headline.setText(summary_text(result))
        self.headline.show()
        lines = text_lines(result, matrix=False)
        self.text.setPlainText("\n".join(lines[3:]))  # (the first three are the status line's and the headline's)
        self.text.show()
        if result.get("confusion"):
            self.heatmap = ConfusionHeatmap(result["confusion"])
            self.body.insertWidget(0, self.heatmap)
            self.body.setStretchFactor(0, 3)
            self.body.setStretchFactor(1, 2)
        self.body.show()
