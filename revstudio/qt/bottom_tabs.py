"""The main window's bottom-dock tabs that need more than a panel: Code and Memory.

:class:`BottomTabsMixin` is mixed into ``MainWindow``: it adds the live Code view (linked to the
canvas selection both ways) and the Memory tab (measured beside estimated memory), and grows a
short Output panel when one of the tabs that needs room is shown.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QScrollArea, QWidget

from revstudio.core.graph import Graph


class BottomTabsMixin:
    """The Code and Memory tabs of ``MainWindow``'s bottom dock (``self.bottom``)."""

    if TYPE_CHECKING:  # provided by MainWindow (a QMainWindow)
        document: Any
        bottom: Any
        bottom_dock: Any
        tabs: Any

        def select_node(self, node_id: str) -> None: ...
        def select_group_node(self, group: str, node_id: str) -> None: ...
        def height(self) -> int: ...
        def resizeDocks(self, docks: Any, sizes: Any, orientation: Any) -> None: ...  # noqa: N802 - Qt API

    def _add_code_tab(self) -> None:
        """The code-export engineer's live code view, when it is installed."""
        try:
            from revstudio.qt.code_view import CodeView
        except ImportError:
            return
        self.code_view = CodeView(self.document)
        self.add_bottom_tab(self.code_view, "Code")
        # code <-> canvas: a node's layer line is highlighted, a click on one selects the node
        self.code_view.nodeClicked.connect(self.select_node)
        self.code_view.groupNodeClicked.connect(self.select_group_node)
        self.tabs.selectionChanged.connect(self._code_follows_selection)
        self.bottom.currentChanged.connect(self._room_for_code)

    def _code_follows_selection(self, graph: Graph, ids: list) -> None:
        if len(ids) != 1:
            return
        if graph is self.document.graph:
            self.code_view.show_node(ids[0])
        else:  # a node in a group's tab: its line in that body's class
            name = next((n for n, body in self.document.graph.groups.items() if body is graph), "")
            self.code_view.show_node(ids[0], group=name)

    def _room_for_code(self, index: int) -> None:
        """Code needs more than a few lines, Memory and Plots their charts: showing one of these tabs
        grows a short Output panel."""
        roomy = (getattr(self, "code_view", None), getattr(self, "memory_tab", None), self.bottom.tab("Plots"))
        if index < 0 or self.bottom.widget(index) not in roomy or self.bottom_dock.isFloating():
            return
        want = min(380, int(self.height() * 0.45))
        page = self.bottom.widget(index)
        needs = getattr(page, "content_height", None)  # the plots drawn whole, where the window has room
        if needs is not None and needs() and page.height() > 0:
            want = max(want, min(self.bottom_dock.height() - page.height() + needs(), int(self.height() * 0.5)))
        if self.bottom_dock.height() < want:
            self.resizeDocks([self.bottom_dock], [want], Qt.Orientation.Vertical)
            keeper = getattr(self, "dock_sizes", None)
            if keeper is not None:
                keeper.preferred[self.bottom_dock] = want

    def _add_memory_tab(self) -> None:
        """Measured beside estimated memory, and the largest batch that fits a device."""
        from revstudio.qt.memory_panel import MemoryPanel

        self.memory_panel = MemoryPanel(self.document)
        # in a small window it scrolls rather than squeezing its buttons and laying rows over the chart
        self.memory_tab = QScrollArea()
        self.memory_tab.setObjectName("memoryTab")
        self.memory_tab.setWidgetResizable(True)
        self.memory_tab.setFrameShape(QFrame.Shape.NoFrame)
        self.memory_tab.setWidget(self.memory_panel)
        self.add_bottom_tab(self.memory_tab, "Memory")

    def measure_memory(self) -> None:
        """Tools > Measure Memory in Memory Tab: show the Memory tab and start a measurement."""
        self.bottom_dock.show()
        self.bottom.setCurrentWidget(self.memory_tab)
        self.memory_panel.measure()

    def memory_depth(self) -> None:
        """Run > Memory vs Depth in Memory Tab: show the Memory tab and start a depth sweep."""
        self.bottom_dock.show()
        self.bottom.setCurrentWidget(self.memory_tab)
        self.memory_panel.depth_sweep.run()

    def add_bottom_tab(self, widget: QWidget, title: str) -> int:
        """Add (or replace) a tab of the bottom dock; other parts use this for their panels."""
        return self.bottom.add_tab(widget, title)

    # ---- state shown ----------------------------------------------------
