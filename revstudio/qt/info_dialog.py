"""A message that fits the screen: a long text (Help > Keyboard Shortcuts) scrolls instead.

``QMessageBox`` is as tall as its text: the shortcuts list was 613 points tall on a 1280x800 screen at
150 % (533 points), 849 at a text size of 150 %, its OK button below the screen's edge where a
keyboard user could press Enter but never see it.
"""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QVBoxLayout, QWidget

from revstudio.qt.fit_scroll import FitScrollArea


class InfoDialog(QDialog):
    """``text`` (rich text allowed) under ``title``, scrolled where the screen is too small, and OK."""

    def __init__(self, parent: QWidget | None, title: str, text: str) -> None:
        super().__init__(parent)
        self.setWindowTitle(title)
        self.setObjectName("infoDialog")
        self.label = QLabel(text)
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.label.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.label.setContentsMargins(8, 8, 8, 8)
        self.label.setAccessibleName(title)
        self.area = FitScrollArea(self.label)
        self.area.setAccessibleName(title)
        self.area.setFocusPolicy(Qt.FocusPolicy.StrongFocus)  # Tab reaches it: arrows and Page Down scroll
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok, self)
        self.buttons.accepted.connect(self.accept)
        layout = QVBoxLayout(self)
        layout.addWidget(self.area, 1)
        layout.addWidget(self.buttons)
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setDefault(True)
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setFocus()
