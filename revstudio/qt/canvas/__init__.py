"""The node canvas: a QGraphicsScene that observes the document's graph, and its view.

``GraphView(document, graph=None)`` is what the main window embeds (one per
graph tab); ``GraphScene`` holds the items. Palette drags carry only a node
type id under :data:`NODE_MIME`; copied selections travel as project JSON
under :data:`CLIPBOARD_MIME`.
"""
from .clipboard import MIME as CLIPBOARD_MIME
from .scene import GraphScene
from .theme import Theme, theme_for
from .view import NODE_MIME, GraphView

__all__ = ["CLIPBOARD_MIME", "NODE_MIME", "GraphScene", "GraphView", "Theme", "theme_for"]
