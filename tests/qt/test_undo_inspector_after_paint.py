"""An undo of a delete selects the node it brings back. The Inspector built that node's form (and
its facts, from the report before the re-check) inside the undo, and the window painted that form
before the canvas showed the edit checked: ~7 ms of a 1,007-node project's first paint went to a
panel the check then refreshed anyway. The form and facts now follow the edit's first paint."""
from __future__ import annotations

from revstudio.core.commands import remove_nodes
from revstudio.core.generate import large_graph


def test_the_form_of_the_node_an_undo_brings_back_follows_the_checked_canvas(make_window, settle):
    w = make_window(large_graph(100))
    doc, view, inspector = w.document, w.current_view(), w.inspector
    relu = next(k for k, v in doc.graph.nodes.items() if v.type == "Activation")
    conv = next(k for k, v in doc.graph.nodes.items() if v.type == "Conv")
    view.select_nodes([conv])
    settle()
    assert inspector.title.text() == conv
    doc.push(remove_nodes(doc.graph, [relu]))
    settle()
    built: list[str] = []
    rebuild = inspector._rebuild

    def counted() -> None:
        built.append(inspector.title.text())
        rebuild()

    inspector._rebuild = counted
    at_analysis: list[int] = []
    doc.analysisChanged.connect(lambda: at_analysis.append(len(built)))
    doc.undo_stack.undo()
    assert view.selected_node_ids() == [relu]  # the canvas selects what came back at once
    settle()
    assert at_analysis == [0]  # nothing built before the edit was checked (and painted)
    assert len(built) == 1  # then once, for the node that came back
    assert inspector.title.text() == relu and inspector.node_id == relu
    assert "fn" in inspector.editors and "out_channels" not in inspector.editors  # an Activation's form
    assert "Output" in inspector.facts.text() or "output" in inspector.facts.text()
    # a selection made by hand (no edit pending) is shown at once, as before
    view.select_nodes([conv])
    assert inspector.title.text() == conv and "out_channels" in inspector.editors


def test_an_edits_own_selection_is_shown_at_once_and_forces_no_figures(make_window, settle):
    # a rename selects the node under its new id: a first version built that form after the check
    # too, and its facts forced the figures, walked in the background, to be made at once on the GUI
    # thread before the canvas was painted (a 1,007-node rename's canvas 85 -> 116 ms)
    from revstudio.core.commands import RenameNode

    w = make_window(large_graph(100))
    doc, view, inspector = w.document, w.current_view(), w.inspector
    relu = next(k for k, v in doc.graph.nodes.items() if v.type == "Activation")
    view.select_nodes([relu])
    settle()
    forced: list[bool] = []
    finish = doc.finish_estimate
    doc.finish_estimate = lambda: (forced.append(True), finish())[1]
    at_analysis: list[str] = []
    doc.analysisChanged.connect(lambda: at_analysis.append(inspector.title.text()))
    doc.push(RenameNode(doc.graph, relu, f"{relu}_r"))
    settle()
    assert forced == []
    assert at_analysis == [f"{relu}_r"]  # the renamed node's form, before its check, as before
    assert inspector.title.text() == f"{relu}_r" and "fn" in inspector.editors
