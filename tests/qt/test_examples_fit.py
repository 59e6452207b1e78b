"""Every shipped example, opened from File > New from Example in a small window, shows its
whole graph (a visual probe once saw an example show only its Input node)."""
from __future__ import annotations

from pathlib import Path

from revstudio.qt.canvas.node_item import NodeItem

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "resources" / "examples").glob("*.revs"))


def test_each_example_opens_with_every_node_in_view(make_window, qtbot):
    window = make_window()
    window.resize(900, 600)
    qtbot.wait(300)
    assert EXAMPLES
    for path in EXAMPLES:
        assert window.files.open_example(path)
        qtbot.wait(150)  # the fit waits for the tab's size
        view = window.current_view()
        shown = view.mapToScene(view.viewport().rect()).boundingRect()
        nodes = [item for item in view.scene().items() if isinstance(item, NodeItem)]
        outside = [item.node_id for item in nodes if not shown.contains(item.sceneBoundingRect())]
        assert nodes and not outside, (path.name, outside, view.zoom())
