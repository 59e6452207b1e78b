"""Files dropped on the window from a file manager: a project opens, anything else gets a message.

A dropped picture or data file was refused without a word, and a project named
``MODEL.REVS`` (as some file systems and archives spell it) was refused too.
"""
from __future__ import annotations

from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QApplication

from revstudio.core.project import save


def _drop(window, path) -> bool:
    data = QMimeData()
    data.setUrls([QUrl.fromLocalFile(str(path))])
    at = QPoint(20, 20)
    enter = QDragEnterEvent(at, Qt.DropAction.CopyAction, data, Qt.MouseButton.LeftButton,
                            Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(window, enter)
    if not enter.isAccepted():
        return False
    QApplication.sendEvent(window, QDropEvent(QPointF(at), Qt.DropAction.CopyAction, data,
                                              Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier))
    QApplication.processEvents()
    return True


def test_a_project_with_an_upper_case_suffix_opens(make_window, revnet, tmp_path):
    path = tmp_path / "MODEL.REVS"
    save(revnet, str(path))
    window = make_window()
    assert _drop(window, path)
    assert window.document.path == str(path) and "f" in window.document.graph.nodes


def test_a_dropped_file_that_is_no_project_is_named_in_a_message(make_window, revnet, tmp_path):
    picture = tmp_path / "diagram.png"
    picture.write_bytes(b"\x89PNG\r\n")
    window = make_window(revnet)
    assert _drop(window, picture)
    message = window.statusBar().currentMessage()
    assert "diagram.png" in message and ".revs" in message
    assert window.document.graph is revnet  # nothing opened, nothing lost
