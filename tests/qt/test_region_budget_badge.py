"""Region badges say which regions the project's memory budget keeps (training.memory_budget)."""
from __future__ import annotations

from revstudio.core.commands import SetTraining
from revstudio.core.generate import revnet_chain
from revstudio.qt.canvas import GraphView
from revstudio.qt.document import Document


def _view(qtbot, graph):
    doc = Document(graph)
    view = GraphView(doc)
    qtbot.addWidget(view)
    return doc, view


def test_badge_names_what_the_budget_keeps(qtbot):
    graph = revnet_chain(4, channels=4, size=8)
    doc, view = _view(qtbot, graph)
    scene = view.scene()
    assert scene.region_items and all("budget" not in r.label for r in scene.region_items)
    doc.push(SetTraining(graph, {"version": 1, "memory_budget": "1GiB", "batch_size": 8}))
    doc.current_report()
    # kept whole, a region runs as standard mode does: its badge no longer claims a saving
    assert all(r.label == "kept whole by budget · runs as standard" for r in scene.region_items)
    assert "memory budget keeps all of its activations" in scene.region_items[0].toolTip()
    assert not any(r.saves for r in scene.region_items)
    doc.push(SetTraining(graph, {"version": 1, "memory_budget": 0, "batch_size": 8}))
    doc.current_report()
    assert all("budget" not in r.label for r in scene.region_items)
    # only reversible mode uses a budget: in the others the badges say nothing of it
    for mode in ("checkpoint", "standard"):
        doc.push(SetTraining(graph, {"version": 1, "memory_budget": "1GiB", "batch_size": 8, "mode": mode}))
        doc.current_report()
        assert all("budget" not in r.label and "budget" not in r.toolTip() for r in scene.region_items)
    # a budget whose kept steps, alive while the rest rebuilds, lift the peak above standard
    # mode's says so: standard mode would be smaller and faster (the run settings' hint agrees)
    doc.push(SetTraining(graph, {"version": 1, "memory_budget": 36864, "batch_size": 8}))
    doc.current_report()
    (item,) = scene.region_items
    assert item.label.endswith("steps kept, peak above standard's"), item.label
    assert "standard mode would be both smaller and faster" in item.toolTip()
    doc.push(SetTraining(graph, {"version": 1, "memory_budget": 30944, "batch_size": 8}))
    doc.current_report()
    assert scene.region_items[0].label.endswith("steps kept")
    # the saving the label gives is reversible mode's: the tooltip says the kept steps take from it
    assert "so it saves less than reversible mode's figures above" in scene.region_items[0].toolTip()
    view.close()
    doc.undo_stack.clear()
