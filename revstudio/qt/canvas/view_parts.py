"""What the :class:`GraphView` mixins (editing, renaming) read from the view, declared once."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from PySide6.QtCore import SignalInstance

    from revstudio.core.graph import Graph

    from .scene import GraphScene


class ViewParts:
    """A base for GraphView's mixins: the view's document, graph, scene and message signal."""

    if TYPE_CHECKING:  # provided by GraphView
        document: Any

        @property
        def graph(self) -> Graph: ...

        _scene: GraphScene
        message: SignalInstance
