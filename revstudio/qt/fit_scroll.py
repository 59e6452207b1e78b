"""A scroll area as big as its content, up to the screen: dialogs that fit a small screen.

A plain ``QScrollArea`` asks for a fixed, smallish size, so a dialog built on one opens
cramped on a big screen; a dialog without one cannot be made smaller than its form, so on a
1366x768 laptop at 150 % (910x512 points) its buttons lie past the screen's bottom edge.
"""
from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QRect, QSize, Qt, QTimer
from PySide6.QtGui import QGuiApplication, QScreen, QShowEvent
from PySide6.QtWidgets import QFrame, QScrollArea, QStyle, QWidget

# Room for a window manager's frame and title bar, which Qt does not know before the first show.
FRAME = QSize(16, 40)
# What a dialog needs around its scroll area (title bar, frame, margins, the button row).
DIALOG_ROOM = QSize(48, 140)


def screen_of(widget: QWidget) -> QScreen | None:
    """The screen ``widget`` is on (the primary one before it is shown).

    Not ``widget.screen()``: PySide makes the QScreen it returns the widget's child, so deleting
    the widget (a closed dialog) left every Python reference to that screen dead ("Internal C++
    object (QScreen) already deleted")."""
    if widget.isVisible():
        found = QGuiApplication.screenAt(widget.mapToGlobal(widget.rect().center()))
        if found is not None:
            return found
    return QGuiApplication.primaryScreen()


class FitScrollArea(QScrollArea):
    """Shows ``content`` whole when the screen has room for it, and scrolls when it does not."""

    def __init__(self, content: QWidget, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("fitScrollArea")
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.setWidget(content)
        content.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt API
        if watched is self.widget() and event.type() == QEvent.Type.LayoutRequest:
            QTimer.singleShot(0, self, self.grow_window)  # once the content's new size is known
        return super().eventFilter(watched, event)

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 - Qt API
        super().showEvent(event)
        QTimer.singleShot(0, self, self.grow_window)

    def grow_window(self) -> None:
        """Make the window big enough to show the content whole, as far as the screen allows.

        A dialog opens at its size hint capped by Qt to two thirds of the screen (512 of 768
        pixels), and a line of text added later (a data preview) needs more: without this the
        form scrolled on a screen with room to spare."""
        inner = self.widget()
        if inner is None or not self.isVisible():
            return
        window = self.window()
        screen = screen_of(window)
        if screen is None:
            return
        area = screen.availableGeometry()
        need = inner.sizeHint() - self.viewport().size()
        if need.width() > 0 or need.height() > 0:
            room = area.size() - FRAME
            width = min(window.width() + max(need.width(), 0), max(room.width(), window.width()))
            height = min(window.height() + max(need.height(), 0), max(room.height(), window.height()))
            if (width, height) != (window.width(), window.height()):
                window.resize(width, height)
        keep_on_screen(window, area)  # centred on its parent, its right edge was past a small screen's

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt API
        inner = self.widget()
        content = inner.sizeHint() if inner is not None else QSize(0, 0)
        bar = self.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent)
        screen = screen_of(self)
        if screen is None:
            return content
        room = screen.availableGeometry().size() - DIALOG_ROOM
        width = content.width() if content.width() <= room.width() else room.width()
        height = content.height() if content.height() <= room.height() else room.height()
        # a bar along one side takes room from the other
        if height < content.height():
            width = min(width + bar, room.width())
        if width < content.width():
            height = min(height + bar, room.height())
        return QSize(max(width, 0), max(height, 0))

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt API
        return QSize(160, 120)


def keep_on_screen(window: QWidget, area: QRect) -> None:
    """Move ``window`` (no larger than ``area`` less FRAME) so that it lies inside ``area``."""
    x = min(max(window.x(), area.x()), area.x() + area.width() - window.width() - FRAME.width())
    y = min(max(window.y(), area.y()), area.y() + area.height() - window.height() - FRAME.height())
    if (x, y) != (window.x(), window.y()):
        window.move(max(x, area.x()), max(y, area.y()))


def resize_within_screen(widget: QWidget, width: int, height: int) -> None:
    """``widget.resize(width, height)``, no bigger than its screen's free area less a title bar."""
    screen = screen_of(widget)
    if screen is not None:
        room = screen.availableGeometry().size() - FRAME
        width, height = min(width, room.width()), min(height, room.height())
    widget.resize(width, height)
