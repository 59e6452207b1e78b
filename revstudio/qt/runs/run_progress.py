"""The live run's progress: a bar with step/total, elapsed, ETA and samples/s (the status bar and the Runs tab)."""
from __future__ import annotations

from PySide6.QtWidgets import QHBoxLayout, QProgressBar, QWidget

from revstudio.qt.memory_figures import ElidedLabel
from revstudio.qt.plots.rows import RunData, human_duration


def progress_text(run: RunData | None, elapsed_s: float) -> str:
    """'step 120 / 500 · 12 s elapsed · ETA 38 s · 850 samples/s' for a run (live or last)."""
    if run is None:
        return "No run training: Train (F5) starts one"  # (past runs, if any, are listed below)
    total = f" / {run.total_steps}" if run.total_steps else ""
    parts = [f"{run.name}: {run.early if run.ended and run.early else run.status}", f"step {run.step}{total}", f"{human_duration(elapsed_s)} elapsed"]
    eta = run.eta_seconds()
    if eta is not None:
        parts.append(f"ETA {human_duration(eta)}")
    if run.samples_per_s:
        parts.append(f"{run.samples_per_s:,.0f} samples/s")
    return " · ".join(parts)



class RunProgress(QWidget):
    """A progress bar with step/total, elapsed, ETA and samples/s (status bar and Runs tab)."""

    def __init__(self, compact: bool = False, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.bar = QProgressBar()
        self.bar.setRange(0, 1000)
        self.bar.setTextVisible(True)
        self.bar.setFormat("%p %")
        # ends in "…" where it does not fit (whole in its tooltip): a plain label's least width was
        # the whole text, which widened the window past a 1280-point screen once a run started
        self.label = ElidedLabel()
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        if compact:
            self.bar.setMaximumWidth(140)
            self.bar.setMaximumHeight(14)
        layout.addWidget(self.bar)
        layout.addWidget(self.label, 1)

    def show_run(self, run: RunData | None, elapsed_s: float) -> None:
        fraction = run.fraction() if run is not None else None
        if run is None:
            self.bar.setRange(0, 1000)
            self.bar.reset()  # empty, not the last run's 100 %
        elif fraction is None:
            self.bar.setRange(0, 0 if run is not None and not run.ended else 1000)  # busy while it starts
        else:
            self.bar.setRange(0, 1000)
            self.bar.setValue(int(fraction * 1000))
        self.label.setText(progress_text(run, elapsed_s))
