"""Every question the window asks the user, in one replaceable object.

Modal dialogs block an offscreen test, so the window asks through a
:class:`Dialogs` instance; tests swap in one with scripted answers.
"""
from __future__ import annotations

from PySide6.QtWidgets import QFileDialog, QInputDialog, QMessageBox, QWidget

FILE_FILTER = "revstudio projects (*.revs);;All files (*)"
WEIGHTS_FILTER = "Weights (*.pt *.pth *.bin);;All files (*)"


class Dialogs:
    """The real, modal dialogs."""

    def ask_unsaved(self, parent: QWidget, name: str) -> str:
        """'save', 'discard' or 'cancel' for a document with unsaved changes."""
        box = QMessageBox(QMessageBox.Icon.Warning, "Unsaved changes",
                          f"'{name}' has changes that are not saved.", parent=parent)
        box.setInformativeText("Save them before continuing?")
        box.setStandardButtons(QMessageBox.StandardButton.Save | QMessageBox.StandardButton.Discard
                               | QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(QMessageBox.StandardButton.Save)
        answer = box.exec()
        if answer == QMessageBox.StandardButton.Save:
            return "save"
        if answer == QMessageBox.StandardButton.Discard:
            return "discard"
        return "cancel"

    def error(self, parent: QWidget, title: str, text: str) -> None:
        QMessageBox.critical(parent, title, text)

    def info(self, parent: QWidget, title: str, text: str) -> None:
        from revstudio.qt.info_dialog import InfoDialog

        InfoDialog(parent, title, text).exec()  # (scrolls where QMessageBox ran past a small screen)

    def confirm(self, parent: QWidget, title: str, text: str) -> bool:
        """Yes/No for a destructive step (deleting runs); No is the default."""
        answer = QMessageBox.question(parent, title, text, QMessageBox.StandardButton.Yes
                                      | QMessageBox.StandardButton.No, QMessageBox.StandardButton.No)
        return answer == QMessageBox.StandardButton.Yes

    def ask_text(self, parent: QWidget, title: str, label: str, text: str) -> str | None:
        """A line of text (a new name), or None when cancelled."""
        answer, ok = QInputDialog.getText(parent, title, label, text=text)
        return answer if ok else None

    def ask_stop_run(self, parent: QWidget, detail: str) -> bool:
        """True to stop the training run and quit; Cancel (the default) keeps both."""
        box = QMessageBox(QMessageBox.Icon.Question, "Quit", "A run is training: stop it and quit?", parent=parent)
        box.setInformativeText(detail)
        stop = box.addButton("Stop and Quit", QMessageBox.ButtonRole.DestructiveRole)
        cancel = box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(cancel)
        box.exec()
        return box.clickedButton() is stop

    def open_path(self, parent: QWidget, start: str) -> str | None:
        path, _ = QFileDialog.getOpenFileName(parent, "Open project", start, FILE_FILTER)
        return path or None

    def weights_path(self, parent: QWidget, start: str) -> str | None:
        """A file of weights a run starts from (a state_dict or a checkpoint); a run folder's
        ``checkpoints/last.pt`` is picked inside it."""
        path, _ = QFileDialog.getOpenFileName(parent, "Train from weights", start, WEIGHTS_FILTER)
        return path or None

    def save_path(self, parent: QWidget, start: str) -> str | None:
        path, _ = QFileDialog.getSaveFileName(parent, "Save project as", start, FILE_FILTER)
        if path and not path.endswith(".revs") and "." not in path.rsplit("/", 1)[-1]:
            path += ".revs"
        return path or None

    def ask_overwrite(self, parent: QWidget, path: str) -> str:
        """'overwrite', 'save_as' or 'cancel' (the default) for a file another program changed."""
        box = QMessageBox(QMessageBox.Icon.Warning, "File changed on disk",
                          f"{path} was changed by another program since you opened or saved it.",
                          parent=parent)
        box.setInformativeText("Overwrite it with your version, or save yours under another name?")
        overwrite = box.addButton("Overwrite", QMessageBox.ButtonRole.DestructiveRole)
        save_as = box.addButton("Save As…", QMessageBox.ButtonRole.AcceptRole)
        cancel = box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(cancel)
        box.exec()
        clicked = box.clickedButton()
        if clicked is overwrite:
            return "overwrite"
        return "save_as" if clicked is save_as else "cancel"

    def ask_restore(self, parent: QWidget, description: str) -> str:
        """'restore', 'discard' or 'later' for one recovery file."""
        box = QMessageBox(QMessageBox.Icon.Question, "Recover unsaved work",
                          # (not "did not close cleanly last time": a logout's SIGTERM keeps the copy on
                          # purpose, and File > Open offers one whenever the file is opened)
                          "A revstudio window ended without closing normally (a crash, a kill, a logout "
                          "or a shutdown) and left unsaved edits.", parent=parent)
        box.setInformativeText(f"Restore the autosaved copy of {description}?")
        restore = box.addButton("Restore", QMessageBox.ButtonRole.AcceptRole)
        discard = box.addButton("Discard", QMessageBox.ButtonRole.DestructiveRole)
        box.addButton("Ask later", QMessageBox.ButtonRole.RejectRole)
        box.setDefaultButton(restore)
        box.exec()
        clicked = box.clickedButton()
        if clicked is restore:
            return "restore"
        if clicked is discard:
            return "discard"
        return "later"
