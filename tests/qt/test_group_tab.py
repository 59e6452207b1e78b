"""A group's tab opens fitted on its body; generated GroupInput/GroupOutput sit clear of it."""
from __future__ import annotations

from pathlib import Path

from revstudio.core.project import load

EXAMPLE = Path(__file__).resolve().parents[2] / "resources" / "examples" / "revnet_wired.revs"
F = ["block0_f_conv1", "block0_f_relu", "block0_f_conv2"]


def test_group_tab_opens_fitted_with_its_ports_clear_of_the_body(make_window, settle, qtbot):
    window = make_window(load(str(EXAMPLE)))
    window.current_view().select_nodes(F)
    assert window.tabs.group_selection()
    group_node = window.current_view().selected_node_ids()[0]
    assert window.tabs.open_group(group_node)
    settle()
    qtbot.wait(20)
    view = window.current_view()
    body = view.graph
    assert len(body.nodes) == 5
    vp = view.viewport().rect()
    for node_id, item in view.scene().node_items.items():
        centre = view.mapFromScene(item.sceneBoundingRect().center())
        assert vp.contains(centre), f"{node_id} is off screen when the tab opens"
    items = view.scene().node_items
    members = [items[n].sceneBoundingRect() for n in F]
    for n, node in body.nodes.items():
        if node.type in ("GroupInput", "GroupOutput"):
            rect = items[n].sceneBoundingRect().adjusted(-50, 0, 50, 0)  # 50 px of air each side at least
            assert not any(rect.intersects(m) for m in members), f"{n} sits against the body"
    # an F function is no reversible region: its tab draws no backdrop
    assert view.scene().region_items == []


def test_a_reversible_group_body_shows_its_region_on_its_tab(make_window, settle, qtbot):
    """Both blocks grouped: the body's tab draws the region the body runs as (the project's
    report has regions of the top level only), labelled for what it does, not a saving."""
    window = make_window(load(str(EXAMPLE)))
    graph = window.document.graph
    blocks = [n for n in graph.nodes if n.startswith(("block0", "block1"))]
    window.current_view().select_nodes(blocks)
    assert window.tabs.group_selection()
    group_node = window.current_view().selected_node_ids()[0]
    assert window.tabs.open_group(group_node)
    settle()
    scene = window.current_view().scene()
    (region,) = scene.region_items
    assert region.label == "reversible (group body)" and "rebuilt from the outputs" in region.toolTip()
    assert set(region.node_ids) == set(blocks)  # every block node, not the GroupInput/GroupOutput
