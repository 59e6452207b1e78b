"""Names a screen reader reads for the window's parts that show no text of their own.

Qt names a button or a tab by its text; a list, a tree, a field or a painted canvas
has none, so Orca or NVDA announced them only by their role ("tree", "edit"). Each
gets the name of the panel or the value it holds.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from revstudio.qt.main_window import MainWindow


def name_parts(window: MainWindow) -> None:
    parts = (
        (window.node_palette.search, "Search node types", "Type part of a name; Enter adds the best match"),
        (window.node_palette.tree, "Node types", "Enter adds the type beside the selection"),
        (window.inspector.title, "Node id", "Type a new id and press Enter to rename the node"),
        (window.inspector, "Inspector", "The selected node's parameters and facts"),
        (window.inspector.scroller, "Inspector", "Up and Down, Page Up and Page Down scroll the node's facts"),
        (window.inspector.batch_field, "Batch size", "The batch of the memory figures and of training"),
        (window.history, "History", "Every edit; choosing a row goes back to that point"),
        (window.bottom.tabBar(), "Output tabs", "Problems, Plots, Runs, Code, Memory and Log"),
        (window.diagnostics.tree, "Problems", "Enter selects the node a problem is about"),
        (window.tabs.tabBar(), "Canvas tabs", "The project and the groups open for editing"),
        (window.status_batch, "Batch size", "The batch of the memory figures and of training"),
    )
    for widget, name, description in parts:
        widget.setAccessibleName(name)
        widget.setAccessibleDescription(description)
