"""The editor re-checks an edit incrementally: it re-infers the nodes the edit can affect (counted,
not timed), and the canvas, the Problems tab and the figures show the same as a full check."""
from __future__ import annotations

from revstudio.core.commands import Move, RenameNode, SetParam
from revstudio.core.generate import large_graph
from revstudio.diagnostics.check import full_check


def test_an_edit_in_the_editor_re_infers_only_what_it_affects(make_window, settle):
    w = make_window(large_graph(300))
    doc = w.document
    g = doc.graph
    assert doc.incremental.inferred > 250  # the first check infers everything
    doc.push(SetParam(g, "l0b0_f_relu", "fn", "tanh"))
    doc.current_report()  # a param edit on a big graph waits for a pause in the typing
    settle()
    assert (doc.incremental.inferred, doc.incremental.resolved) == (1, 1)
    assert doc.report.to_json() == full_check(g).to_json()

    doc.push(SetParam(g, "l0b0_f_conv2", "out_channels", 3))  # breaks the merge that reads it
    doc.current_report()
    settle()
    assert doc.incremental.inferred == 2
    assert doc.report.to_json() == full_check(g).to_json() and not doc.report.valid
    merge = w.current_view().scene().node_items["l0b0_add1"]
    assert merge.errors  # the canvas outlines the merge
    problems = w.diagnostics.tree
    texts = [problems.topLevelItem(i).text(1) for i in range(problems.topLevelItemCount())]
    assert any(t.startswith("l0b0_add1") for t in texts), texts

    doc.undo_stack.undo()
    settle()
    assert doc.report.valid and doc.incremental.inferred == 2
    assert doc.report.to_json() == full_check(g).to_json()
    assert not merge.errors


def test_a_rename_re_infers_nothing_and_a_new_project_starts_afresh(make_window, settle):
    w = make_window(large_graph(120))
    doc = w.document
    g = doc.graph
    doc.push(RenameNode(g, "l0b0_f_conv1", "first_conv"))
    settle()
    assert (doc.incremental.inferred, doc.incremental.resolved) == (0, 0)
    assert doc.report.to_json() == full_check(g).to_json()
    doc.push(Move(g, {"first_conv": (5.0, 5.0)}))  # a move skips the re-check altogether
    settle()
    other = large_graph(100)
    doc.replace_graph(other)
    settle()
    assert doc.incremental.inferred > 90 and doc.report.to_json() == full_check(other).to_json()


def test_a_re_check_redraws_only_the_cards_whose_facts_changed(make_window, settle, monkeypatch):
    import revstudio.qt.canvas.scene as scene_module
    from revstudio.qt.canvas.display import node_display

    w = make_window(large_graph(300))
    doc, g = w.document, w.document.graph
    cards = w.current_view().scene().node_items
    drawn: list[str] = []

    def counted(graph, node_id, report, in_region):
        drawn.append(node_id)
        return node_display(graph, node_id, report, in_region)

    monkeypatch.setattr(scene_module, "node_display", counted)
    doc.push(SetParam(g, "l0b0_f_relu", "fn", "tanh"))
    doc.current_report()
    settle()
    assert set(drawn) == {"l0b0_f_relu"} and len(drawn) <= 2  # was every node of the graph
    assert "fn: tanh" in cards["l0b0_f_relu"].display.lines

    drawn.clear()
    before = cards["l0b0_f_conv2"].display.footer
    doc.push(SetParam(g, "l0b0_f_conv1", "out_channels", 3))  # conv2 now reads 3 channels: fewer weights
    doc.current_report()
    settle()
    # conv1 is drawn anew (its params changed); conv2, whose params did not, gets its new count alone
    assert set(drawn) == {"l0b0_f_conv1"}
    assert cards["l0b0_f_conv2"].display.footer != before
    assert cards["l0b0_f_conv2"].display == node_display(g, "l0b0_f_conv2", doc.report, True)
    doc.undo_stack.undo()
    doc.current_report()
    settle()
    assert cards["l0b0_f_conv2"].display.footer == before
