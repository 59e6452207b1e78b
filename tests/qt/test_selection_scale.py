"""Big selections are announced once: a select-all, a paste or a delete of hundreds of nodes
refreshes the inspector a bounded number of times, not once per node (which made each of
these take seconds to tens of seconds at 1,000 nodes: every refresh walked the whole selection).
"""
from __future__ import annotations

from typing import Any

from revstudio.core.generate import large_graph

N = 120  # enough nodes that "once per node" and "once" cannot be confused


def _count(monkeypatch: Any, obj: Any, name: str) -> list[int]:
    calls = [0]
    original = getattr(obj, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(obj, name, counted)
    return calls


def test_select_all_announces_the_selection_once(make_window, settle, monkeypatch):
    w = make_window(large_graph(N))
    view = w.current_view()
    announced: list[list[str]] = []
    view.selectionChangedIds.connect(announced.append)
    view.select_all()
    settle()
    assert len(announced) == 1
    assert len(announced[0]) == len(w.document.graph.nodes) == len(w.inspector.selection)


def test_paste_undo_redo_and_delete_refresh_the_inspector_a_bounded_number_of_times(make_window, settle,
                                                                                    monkeypatch):
    w = make_window(large_graph(N))
    view, stack = w.current_view(), w.document.undo_stack
    view.select_all()
    settle()
    assert view.copy()
    refreshes = _count(monkeypatch, w.inspector, "refresh_facts")
    pasted = view.paste()
    settle()
    assert len(pasted) == len(w.document.graph.nodes) // 2 and sorted(w.inspector.selection) == sorted(pasted)
    for step in (stack.undo, stack.redo, stack.undo):
        step()
        settle()
    ids = list(w.document.graph.nodes)[:100]
    view.select_nodes(ids)
    settle()
    view.delete_selection()
    settle()
    assert w.inspector.selection == [] and not any(i in w.document.graph.nodes for i in ids)
    stack.undo()  # the deleted nodes come back selected
    settle()
    assert sorted(w.inspector.selection) == sorted(ids)
    # seven user actions, each a few refreshes (selection, analysis); once per node was > 500
    assert refreshes[0] <= 30, refreshes[0]
