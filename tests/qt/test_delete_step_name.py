"""Edit > Delete's step is named as the menu item: deleting one node read "Remove f" in History and
Edit > Undo ("Undo Remove f") while two nodes and a wire read "Delete 2 nodes and 1 wire" and the status
bar said "Deleted 1 node": three words for one key."""
from __future__ import annotations

from typing import Any

import pytest


@pytest.mark.parametrize(("ids", "step"), [(["f"], "Delete f"), (["f", "m"], "Delete 2 nodes")])
def test_a_delete_is_named_delete_in_history_and_undo(make_window: Any, revnet: Any, ids: list[str],
                                                     step: str) -> None:
    window = make_window(revnet)
    view = window.current_view()
    view.select_nodes(ids)
    window.actions_by_name["delete"].trigger()
    assert not set(ids) & set(revnet.nodes)
    stack = window.document.undo_stack
    assert stack.text(stack.index() - 1) == step
    assert window.actions_by_name["undo"].text().replace("&", "") == f"Undo {step}"
    window.actions_by_name["undo"].trigger()
    assert set(ids) <= set(revnet.nodes)
