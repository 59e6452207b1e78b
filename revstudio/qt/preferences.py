"""The Preferences dialog: theme, text size, autosave interval and what opens at start.

Values live in :class:`~revstudio.qt.settings.Settings`; the dialog writes them
on OK and the window applies them at once (``applied``), so nothing needs a
restart.
"""
from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QCheckBox, QComboBox, QDialog, QDialogButtonBox, QFormLayout, QSpinBox, QWidget

from revstudio.qt import theme as themes
from revstudio.qt.settings import Settings


class PreferencesDialog(QDialog):
    """Edits the persisted preferences."""

    applied = Signal()

    def __init__(self, settings: Settings, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Preferences")
        self.setObjectName("preferencesDialog")
        self.settings = settings
        self.theme = QComboBox(self)
        self.theme.addItem("Dark", "dark")
        self.theme.addItem("Light", "light")
        self.theme.setCurrentIndex(max(0, self.theme.findData(settings.theme)))
        self.text_size = QComboBox(self)
        for percent in themes.TEXT_SCALES:
            self.text_size.addItem(f"{percent} %", percent)
        self.text_size.setCurrentIndex(max(0, self.text_size.findData(settings.text_scale)))
        self.text_size.setToolTip("The size of the menus', panels' and dialogs' text, in % of the system's font; "
                                  "the canvas zooms with Ctrl++ and Ctrl+-")
        self.autosave = QSpinBox(self)
        self.autosave.setRange(5, 3600)
        self.autosave.setSuffix(" s")
        self.autosave.setValue(settings.autosave_seconds)
        self.autosave.setToolTip("Unsaved edits are copied to a recovery file 2 s after you stop editing, "
                                 "and at least this often while you keep editing")
        self.reopen = QCheckBox("Reopen the last project when revstudio starts", self)
        self.reopen.setChecked(settings.reopen_last)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel, self)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form = QFormLayout(self)
        form.addRow("Theme", self.theme)
        form.addRow("Text size", self.text_size)
        form.addRow("Autosave at least every", self.autosave)
        form.addRow("", self.reopen)
        form.addRow(buttons)

    def accept(self) -> None:
        self.settings.theme = str(self.theme.currentData())
        self.settings.text_scale = int(self.text_size.currentData())
        self.settings.autosave_seconds = self.autosave.value()
        self.settings.reopen_last = self.reopen.isChecked()
        self.settings.sync()
        self.applied.emit()
        super().accept()
