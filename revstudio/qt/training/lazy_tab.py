"""A bottom tab whose content is built the first time it is shown (the Plots tab: pyqtgraph costs
the editor's start-up a second)."""
from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QFrame, QScrollArea, QVBoxLayout, QWidget


class LazyTab(QWidget):
    """A tab whose content is built the first time it is needed.

    With ``scroll``, content taller than the tab scrolls: a squeezed Plots grid laid its
    plots' axes (and the x axis's title) under the tab's edge instead."""

    def __init__(self, build: Any, parent: QWidget | None = None, scroll: bool = False) -> None:
        super().__init__(parent)
        self._build = build
        self._scroll = scroll
        self.content: Any = None
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)

    def ensure(self) -> Any:
        if self.content is None:
            self.content = self._build()
            if self._scroll:
                area = QScrollArea()
                area.setObjectName("plotsScroll")
                area.setWidgetResizable(True)
                area.setFrameShape(QFrame.Shape.NoFrame)
                area.setWidget(self.content)
                self._layout.addWidget(area)
            else:
                self._layout.addWidget(self.content)
        return self.content

    def content_height(self) -> int:
        """The height the content needs to be drawn whole (0 before it is built)."""
        return self.content.minimumSizeHint().height() if self.content is not None else 0

    def showEvent(self, event: Any) -> None:  # noqa: N802 - Qt API
        self.ensure()
        super().showEvent(event)
