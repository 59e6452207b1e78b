"""A run's settings side by side with the current project's, differences first and marked."""
from __future__ import annotations

from typing import Any

from PySide6.QtGui import QBrush, QColor, QFont
from PySide6.QtWidgets import (
    QDialog,
    QHeaderView,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from revstudio.qt.fit_scroll import resize_within_screen
from revstudio.qt.runs.compare_runs import setting_text


def differing(run: dict[str, Any], current: dict[str, Any]) -> list[str]:
    return sorted(k for k in set(run) | set(current) if run.get(k) != current.get(k))


class CompareDialog(QDialog):
    def __init__(self, run_name: str, run: dict[str, Any], current: dict[str, Any],
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(f"Settings of {run_name} and of the project")
        self.setObjectName("compareDialog")
        self.changed = differing(run, current)
        keys = self.changed + sorted(k for k in set(run) | set(current) if k not in self.changed)
        self.table = QTableWidget(len(keys), 3)
        self.table.setHorizontalHeaderLabels(["setting", run_name, "current project"])
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        bold = QFont()
        bold.setBold(True)
        for i, key in enumerate(keys):
            cells = [key, setting_text(key, run.get(key)), setting_text(key, current.get(key))]
            for j, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if key in self.changed:
                    item.setFont(bold)
                    item.setBackground(QBrush(QColor(237, 201, 72, 60)))
                self.table.setItem(i, j, item)
        many = len(self.changed) != 1
        summary = (f"{len(self.changed)} setting{'s' * many} differ{'s' * (not many)}: {', '.join(self.changed)}"
                   if self.changed else "The run used the project's current settings.")
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel(summary))
        layout.addWidget(self.table)
        resize_within_screen(self, 640, 560)  # a 1366x768 laptop at 150 % has 910x512 points
