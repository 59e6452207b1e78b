"""Editing a project's groups by name: rename one, delete an unused one.

A group body is named in ``project.groups`` and referred to by params of kind
``group`` (a Group or Repeat node's ``group``, a coupling's ``f``/``g``/``net``)
in the project and in every body. :func:`rename_group` renames the body and
every reference in one undoable step; :func:`delete_group` removes a body that
nothing refers to. Both refuse, with a message that says what to do, otherwise.
"""
from __future__ import annotations

from .commands import Command, Macro, SetGroup, SetParam
from .graph import Graph, GraphError, valid_id
from .grouping import group_users


class _RenameBody(Command):
    """The body itself: ``project.rename_group`` keeps it and its place in the order."""

    def __init__(self, project: Graph, old: str, new: str) -> None:
        self.project, self.old, self.new = project, old, new
        self.text = f"Rename group {old} to {new}"

    def do(self) -> None:
        self.project.rename_group(self.old, self.new)

    def undo(self) -> None:
        self.project.rename_group(self.new, self.old)


def group_references(project: Graph, name: str) -> list[tuple[Graph, str, str]]:
    """(graph, node id, param name) of every param naming group ``name``, in the project and its bodies."""
    from .spec import registry

    out: list[tuple[Graph, str, str]] = []
    for graph in (project, *(b for b in project.groups.values() if b is not project)):
        for node in graph.nodes.values():
            spec = registry.find(node.type)
            if spec is None:  # unknown type (a missing plugin): any param naming it counts, as group_users does
                out += [(graph, node.id, pname) for pname, v in node.params.items() if v == name]
                continue
            out += [(graph, node.id, pname) for pname, p in spec.params.items()
                    if p.kind == "group" and node.params.get(pname, p.default) == name]
    return out


def rename_group(project: Graph, old: str, new: str) -> Macro:
    """One command renaming group ``old`` to ``new`` and every param that names it."""
    new = new.strip() if isinstance(new, str) else new
    if old not in project.groups:
        raise GraphError(f"there is no group {old!r} in this project to rename")
    if new == old:
        raise GraphError(f"the group is already called {old!r}; type a different name")
    if not valid_id(new):
        raise GraphError(f"group name {new!r} is not allowed: use 1-64 characters without spaces or dots")
    if new in project.groups:
        raise GraphError(f"there is already a group {new!r}; pick another name")
    refs = group_references(project, old)
    return Macro(f"Rename group {old} to {new}",
                 [_RenameBody(project, old, new), *(SetParam(g, nid, p, new) for g, nid, p in refs)])


def delete_group(project: Graph, name: str) -> Command:
    """One command removing group ``name``, which no node may use any more."""
    if name not in project.groups:
        raise GraphError(f"there is no group {name!r} in this project to delete")
    users = group_users(project, name)
    if users:
        shown = ", ".join(users[:3]) + (f" and {len(users) - 3} more" if len(users) > 3 else "")
        raise GraphError(f"group {name!r} is used by {shown}; delete or ungroup those nodes first")
    cmd = SetGroup(project, name, None)
    cmd.text = f"Delete group {name}"
    return cmd


__all__ = ["delete_group", "group_references", "rename_group"]
