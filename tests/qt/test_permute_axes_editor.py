"""The editor offers the axis reorder: the palette and quick add find it by "transpose", the
inspector edits its kind and dims, and the wires show the reordered shapes at once."""
from __future__ import annotations

from revstudio.core.graph import Graph
from revstudio.qt.canvas import GraphView
from revstudio.qt.canvas.quick_add import QuickAddPopup, candidate_specs
from revstudio.qt.document import Document
from revstudio.qt.inspector import Inspector
from revstudio.qt.palette import PaletteWidget


def _tokens() -> Graph:
    g = Graph("tokens")
    g.add_node("Input", "x", {"shape": [32, 12]}, (0, 0))
    g.add_node("Permute", "t", {}, (250, 0))
    g.add_node("Conv", "c", {"out_channels": 8, "kernel_size": 3, "padding": "same"}, (500, 0))
    g.add_node("Output", "y", {}, (750, 0))
    for a, b in [("x.out", "t.in"), ("t.out", "c.in"), ("c.out", "y.in")]:
        g.connect(a, b)
    return g


def test_palette_and_quick_add_find_it_as_a_transpose(qtbot) -> None:
    palette = PaletteWidget()
    qtbot.addWidget(palette)
    palette.search.setText("transpose")
    assert "Permute" in palette.visible_type_ids()
    popup = QuickAddPopup(candidate_specs(needs="in"))
    qtbot.addWidget(popup)
    popup.filter("transpose")
    assert popup.visible_types()[:1] == ["Permute"]


def test_the_inspector_turns_a_permute_into_an_axis_reorder_and_the_wires_follow(qtbot, settle) -> None:
    graph = _tokens()
    doc = Document(graph)
    view = GraphView(doc)
    qtbot.addWidget(view)
    inspector = Inspector(doc)
    qtbot.addWidget(inspector)
    inspector.show()
    inspector.set_selection(graph, ["t"])
    settle()
    wires = {str(e.src): view.scene().wire_items[e] for e in doc.graph.edges}
    assert wires["t.out"].label == "32x12" and wires["c.out"].label == "8x12"
    assert "dims" in inspector.editors and "kind" in inspector.editors
    inspector.editors["kind"].choose("axes")
    settle()
    assert doc.graph.node("t").params["kind"] == "axes"
    assert wires["t.out"].label == "12x32" and wires["c.out"].label == "8x32"  # dims [1, 0] by default
    editor = inspector.editors["dims"]
    editor.finished.emit()
    editor.set_text("0, 0")
    settle()
    assert doc.report.shape("t.out") is None
    problems = " ".join(d.message for d in doc.report.for_node("t"))
    assert "dims [0, 0] must be a permutation of 0..1" in problems, problems
    editor.set_text("1, 0")
    settle()
    assert wires["t.out"].label == "12x32" and doc.report.valid
    doc.undo_stack.undo()
    doc.undo_stack.undo()
    settle()
    assert "kind" not in doc.graph.node("t").params and wires["t.out"].label == "32x12"
    doc.undo_stack.clear()
