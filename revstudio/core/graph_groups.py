"""A project's group bodies: one namespace of named sub-graphs, shared by every level.

``Graph`` takes these mutators from :class:`GroupStore`: adding, replacing, removing
and renaming a body keep the group order (it is saved, and undo restores it) and
hand every body the project's own ``groups`` dict, so a ``Group`` node inside a
body finds its body too. Each emits ``group_changed`` (a rename ``group_renamed``
first), then ``changed``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .graph_parts import GraphError, valid_id

if TYPE_CHECKING:
    from .events import Event
    from .graph import Graph


class GroupStore:
    """The group mutators of :class:`~revstudio.core.graph.Graph` (which sets these attributes)."""

    groups: dict[str, Graph]
    group_changed: Event
    group_renamed: Event
    changed: Event

    def set_group(self, name: str, body: Graph | None, index: int | None = None) -> Graph | None:
        """Add, replace or (with None) remove a group body. Returns the old one.

        A new name goes at the end of the group order, or at ``index``. The body
        shares this project's ``groups`` dict from then on.
        """
        old = self.groups.get(name)
        if body is None:
            self.groups.pop(name, None)
        else:
            if body is self:
                raise GraphError(f"group {name!r} cannot be the project graph itself")
            if body.groups is not self.groups:
                if body.groups:
                    raise GraphError(
                        f"group {name!r} has groups of its own; group names are project-wide, "
                        "add them to the project instead"
                    )
                body.groups = self.groups
            if name in self.groups or index is None or index >= len(self.groups):
                self.groups[name] = body
            else:
                items = list(self.groups.items())
                items.insert(max(index, 0), (name, body))
                self.groups.clear()
                self.groups.update(items)
        self.group_changed.emit(name, old, body)
        self.changed.emit()
        return old

    def rename_group(self, old: str, new: str) -> None:
        """Give group body ``old`` the name ``new``, keeping its place in the group order and the
        body itself (references to it are params: the caller changes those). Observers see
        ``group_renamed`` and then the body go under the old name and come under the new one."""
        if new == old:
            return
        if old not in self.groups:
            raise GraphError(f"there is no group {old!r} to rename")
        if not valid_id(new):
            raise GraphError(f"group name {new!r} is not allowed: use 1-64 characters without spaces or dots")
        if new in self.groups:
            raise GraphError(f"there is already a group {new!r}; pick another name")
        body = self.groups[old]
        items = [(new if k == old else k, b) for k, b in self.groups.items()]
        self.groups.clear()  # the same dict: every body shares it
        self.groups.update(items)
        self.group_renamed.emit(old, new)
        self.group_changed.emit(old, body, None)
        self.group_changed.emit(new, None, body)
        self.changed.emit()

    def is_body(self) -> bool:
        """Whether this graph is a group body (it appears in its own shared ``groups``)."""
        return any(body is self for body in self.groups.values())
