"""Renaming a group renames its body and every reference in one undo step; an unused group can be
deleted; both refuse bad requests with a message that says what to do."""
from __future__ import annotations

from pathlib import Path

import pytest

from revstudio.core.check import check
from revstudio.core.commands import UndoStack
from revstudio.core.graph import GraphError
from revstudio.core.group_edits import delete_group, rename_group
from revstudio.core.project import dumps, load

EXAMPLE = Path(__file__).resolve().parents[2] / "resources" / "examples" / "revnet_coupling.revs"


def _errors(graph) -> list[str]:
    return [d.message for d in check(graph).diagnostics if d.severity == "error"]


def test_renaming_a_nested_coupling_body_renames_every_reference_and_undoes_in_one_step() -> None:
    g = load(EXAMPLE)  # blocks: Repeat(group=block); block: AdditiveCoupling(f=f, g=g)
    before = dumps(g)
    stack = UndoStack()
    stack.push(rename_group(g, "f", "residual"))
    assert list(g.groups) == ["block", "residual", "g"]  # its place in the order kept
    assert g.groups["block"].nodes["coupling"].params["f"] == "residual"
    assert g.groups["residual"].groups is g.groups  # the same body, still sharing the project's groups
    assert not _errors(g)
    stack.undo()
    assert dumps(g) == before
    stack.redo()
    assert "residual" in dumps(g) and g.groups["block"].nodes["coupling"].params["f"] == "residual"


def test_renaming_a_repeat_body_renames_the_top_level_reference() -> None:
    g = load(EXAMPLE)
    UndoStack().push(rename_group(g, "block", "stage"))
    assert g.nodes["blocks"].params["group"] == "stage" and "block" not in g.groups
    assert not _errors(g)


@pytest.mark.parametrize(("old", "new", "says"), [
    ("f", "g", "already a group 'g'"),
    ("f", "two words", "not allowed"),
    ("f", "", "not allowed"),
    ("f", "f", "already called 'f'"),
    ("nope", "x", "no group 'nope'"),
])
def test_renaming_refuses_names_in_use_or_invalid(old: str, new: str, says: str) -> None:
    g = load(EXAMPLE)
    before = dumps(g)
    with pytest.raises(GraphError, match=says):
        rename_group(g, old, new)
    assert dumps(g) == before


def test_an_unused_group_can_be_deleted_and_a_used_one_cannot() -> None:
    g = load(EXAMPLE)
    with pytest.raises(GraphError, match="used by block/coupling"):
        delete_group(g, "f")
    g.groups["block"].set_param("coupling", "g", None)  # g is now unused
    stack = UndoStack()
    stack.push(delete_group(g, "g"))
    assert list(g.groups) == ["block", "f"]
    stack.undo()
    assert list(g.groups) == ["block", "f", "g"]
