"""Three-way merge of project files: what ``revstudio merge`` does as git's merge driver.

Git merges a ``.revs`` file line by line, and two branches that each add a node append a line
at the same place (the end of ``nodes`` and of ``edges``): a conflict every time. Here a project
is merged by meaning instead: nodes by id (their type, each param and the position on their
own), edges as a set, groups by name, run settings, view, ``renamed`` and ``plugins`` by key.
Where both sides changed the same thing differently, or the merge would feed one input twice or
wire a node one side deleted, the merge reports a conflict naming it and nothing is decided.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .card import WIDTH, card_sizes
from .project import loads
from .project_write import dumps

_ABSENT: Any = object()  # a key or node one side does not have
# The room kept around a card when the other branch's new nodes are set clear of this one's; a
# card's own size is the canvas's (core.card: its height grows with its ports and lines).
_MARGIN = 16.0
_UNMEASURED = 120.0  # the height taken for a card that could not be measured (a common one's)
_STEP = 170.0  # how far down a node moves per try (generate.ROW: the layout's row pitch)


@dataclass
class MergeResult:
    """``text``: the merged project (canonical, as a Save writes it) when ``conflicts`` is empty."""

    text: str = ""
    conflicts: list[str] = field(default_factory=list)
    # what the merge decided that a user should know: a node both branches added under one id
    notes: list[str] = field(default_factory=list)


def _canonical(text: str, source: str, base: bool = False) -> dict[str, Any]:
    """The project as its canonical dump reads (versions migrated, defaults as a Save writes them);
    an empty base (git's, for a file both branches added) is a project with nothing in it."""
    if base and not text.strip():
        return {}
    doc: dict[str, Any] = json.loads(dumps(loads(text, source)))
    return doc


def _show(value: Any, limit: int = 60) -> str:
    text = "absent" if value is _ABSENT else json.dumps(value, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _rename_in(doc: dict[str, Any], old: str, new: str) -> None:
    """Give the node ``old`` of ``doc`` (a project or a body) the id ``new``, with its wires."""
    for node in doc.get("nodes", []):
        if node["id"] == old:
            node["id"] = new

    def port(ref: str) -> str:
        node_id, _, name = ref.partition(".")
        return f"{new}.{name}" if node_id == old else ref

    doc["edges"] = [[port(src), port(dst)] for src, dst in doc.get("edges", [])]
    renamed = doc.get("renamed", {})
    for key, value in renamed.items():
        if value == old:
            renamed[key] = new


def _wires(doc: dict[str, Any], node_id: str) -> set[tuple[str, str]]:
    return {(src, dst) for src, dst in doc.get("edges", []) if node_id in (src.split(".")[0], dst.split(".")[0])}


def _free(name: str, taken: set[str]) -> str:
    """``name`` with the first number that makes it free ("dropout" -> "dropout1", "group1" -> "group2")."""
    stem = re.sub(r"\d+$", "", name) or name
    return next(f"{stem}{i}" for i in range(1, len(taken) + 2) if f"{stem}{i}" not in taken)


def _rename_group(doc: dict[str, Any], old: str, new: str) -> None:
    """Give the group ``old`` of the project ``doc`` the name ``new``, with every node that runs it."""
    from .spec import registry
    from .validate import group_refs

    groups = doc.get("groups", {})
    groups[new] = groups.pop(old)
    for part in (doc, *groups.values()):
        for node in part.get("nodes", []):
            spec = registry.find(node["type"]) if isinstance(node.get("type"), str) else None
            params = node.get("params", {})
            if spec is not None and isinstance(params, dict):
                for param, name in group_refs(spec, params):
                    if name == old:
                        params[param] = new


Box = tuple[float, float, float, float]  # a card's x, y (top-left), width and height


def _overlap(a: Box, b: Box) -> bool:
    """Whether two cards, each with its margin, lie on one another."""
    ax, ay, aw, ah = a
    bx, by, bw, bh = b
    return ax < bx + bw + _MARGIN and bx < ax + aw + _MARGIN and ay < by + bh + _MARGIN and by < ay + ah + _MARGIN


def _sizes(whole: dict[str, Any], level: dict[str, Any]) -> dict[str, tuple[float, float]]:
    """The card sizes of the nodes of ``level`` (the project or one of its group bodies) in the
    project ``whole``, as the canvas draws them, parameter counts included (core.check, no torch).
    A side that cannot be checked (a body's nodes read as a project of their own may fail) gives
    the cards it can measure: no parameter count, or the size of a card without lines."""
    from .check import check

    doc = {**whole, "nodes": level.get("nodes", []), "edges": level.get("edges", [])}
    try:
        graph = loads(json.dumps(doc), "merge")
    except Exception:  # (the two sides were read before: a body alone may still be refused)
        return {}
    try:
        report = check(graph)
    except Exception:
        report = None
    return card_sizes(graph, report)


def _pos(node: Any) -> list[float] | None:
    pos = node.get("pos") if isinstance(node, dict) else None
    if isinstance(pos, list) and len(pos) == 2 and all(isinstance(v, (int, float)) for v in pos):
        return [float(pos[0]), float(pos[1])]
    return None


class _Merger:
    def __init__(self, ours: dict[str, Any] | None = None, theirs: dict[str, Any] | None = None) -> None:
        self.conflicts: list[str] = []
        self.notes: list[str] = []
        self.whole = (ours or {}, theirs or {})  # the two projects, for the sizes of their cards

    def separate_groups(self, base: dict[str, Any], ours: dict[str, Any], theirs: dict[str, Any]) -> None:
        """Both branches made a group under the same name (Ctrl+G names the first "group1" on each):
        the other branch's takes a free name, and its Group and Repeat nodes follow."""
        names = [set(doc.get("groups", {})) for doc in (base, ours, theirs)]
        taken = set().union(*names)
        for old in sorted(names[2] & names[1] - names[0]):
            if ours["groups"][old] == theirs["groups"][old]:
                continue
            new = _free(old, taken)
            taken.add(new)
            _rename_group(theirs, old, new)
            self.notes.append(f"group {old!r} was made on both branches: the other branch's is now {new!r}")

    def separate(self, base: dict[str, Any], ours: dict[str, Any], theirs: dict[str, Any], prefix: str) -> None:
        """Both branches added a node under the same id (the editor names a new Dropout "dropout" on
        each): the other branch's takes a free id, so both are kept."""
        ids = [{n["id"] for n in doc.get("nodes", [])} for doc in (base, ours, theirs)]
        taken = set().union(*ids)
        mine = {n["id"]: n for n in ours.get("nodes", [])}
        for node in list(theirs.get("nodes", [])):
            old = node["id"]
            if old in ids[0] or old not in mine or (mine[old] == node and _wires(ours, old) == _wires(theirs, old)):
                continue  # (the same node, wired alike: one node)
            new = _free(old, taken)
            taken.add(new)
            _rename_in(theirs, old, new)
            self.notes.append(f"{prefix}node {old!r} was added on both branches: the other branch's is now {new!r}")

    def value(self, base: Any, ours: Any, theirs: Any, where: str, quiet: bool = False) -> Any:
        if ours == theirs or theirs == base:
            return ours
        if ours == base:
            return theirs
        if not quiet:
            self.conflicts.append(f"{where}: {_show(ours)} here, {_show(theirs)} in the other branch "
                                  f"(was {_show(base)})")
        return ours

    def mapping(self, base: dict[str, Any], ours: dict[str, Any], theirs: dict[str, Any], where: str,
                each: Callable[[Any, Any, Any, str], Any] | None = None, quiet: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key in sorted({*base, *ours, *theirs}):
            b, o, t = (d.get(key, _ABSENT) for d in (base, ours, theirs))
            if each is not None and all(isinstance(v, dict) for v in (b, o, t)):
                merged = each(b, o, t, f"{where} {key!r}")
            else:
                merged = self.value(b, o, t, f"{where} {key!r}", quiet)
            if merged is not _ABSENT:
                out[key] = merged
        return out

    def node(self, base: dict[str, Any], ours: dict[str, Any], theirs: dict[str, Any], where: str) -> dict[str, Any]:
        out = {"id": ours["id"], "type": self.value(base["type"], ours["type"], theirs["type"], f"{where} type")}
        params = self.mapping(base.get("params", {}), ours.get("params", {}), theirs.get("params", {}),
                              f"{where} param")
        out["params"] = params
        pos = self.value(base.get("pos", _ABSENT), ours.get("pos", _ABSENT), theirs.get("pos", _ABSENT),
                         f"{where} position")
        if pos is not _ABSENT:
            out["pos"] = pos
        return out

    def graph(self, base: dict[str, Any], ours: dict[str, Any], theirs: dict[str, Any], prefix: str) -> dict[str, Any]:
        """``nodes``, ``edges`` and ``renamed`` of a project or a group body."""
        self.separate(base, ours, theirs, prefix)
        by_id = [{n["id"]: n for n in doc.get("nodes", [])} for doc in (base, ours, theirs)]
        b_nodes, o_nodes, t_nodes = by_id
        order = list(o_nodes) + [i for i in t_nodes if i not in o_nodes]
        nodes = []
        for node_id in order:
            b, o, t = (d.get(node_id, _ABSENT) for d in by_id)
            where = f"{prefix}node {node_id!r}"
            if _ABSENT not in (b, o, t) and o != t:
                nodes.append(self.node(b, o, t, where))
                continue
            if o is _ABSENT and t is not _ABSENT and b is not _ABSENT and t != b:
                self.conflicts.append(f"{where}: deleted here, changed in the other branch")
            elif t is _ABSENT and o is not _ABSENT and b is not _ABSENT and o != b:
                self.conflicts.append(f"{where}: changed here, deleted in the other branch")
            merged = self.value(b, o, t, where, quiet=True)
            if merged is not _ABSENT:
                nodes.append(merged)
        self.place(nodes, by_id, prefix, (ours, theirs))
        edges = self.edges(base, ours, theirs, {n["id"] for n in nodes}, prefix)
        renamed = self.mapping(base.get("renamed", {}), ours.get("renamed", {}), theirs.get("renamed", {}),
                               f"{prefix}renamed")
        out: dict[str, Any] = {"nodes": nodes, "edges": edges}
        if renamed:
            out["renamed"] = renamed
        return out

    def place(self, nodes: list[dict[str, Any]], by_id: list[dict[str, Any]], prefix: str,
              levels: tuple[dict[str, Any], dict[str, Any]]) -> None:
        """A node only the other branch added was put in free space on that branch's canvas; where
        this branch put something there since (a node it added, or one it moved), the two would lie
        on one another: the other branch's moves down, row by row, to the first place clear of
        every node (the nodes added on both branches then read side by side, one above the other).
        Each card is as large as the canvas draws it (a card with many ports or params is tall)."""
        base_ids, o_nodes, t_nodes = by_id
        added = {n["id"] for n in nodes if n["id"] not in base_ids and n["id"] not in o_nodes}
        if not added:
            return
        at = {n["id"]: p for n in nodes if (p := _pos(n)) is not None}
        # what the other branch did not see where it is now: this branch's new and moved nodes
        intruders = [i for i in at if i not in added and _pos(t_nodes.get(i)) != at[i]]
        mine, theirs = (_sizes(whole, level) for whole, level in zip(self.whole, levels))

        def box(node_id: str) -> Box:
            w, h = (theirs if node_id in added else mine).get(node_id) or mine.get(node_id) or (WIDTH, _UNMEASURED)
            return (at[node_id][0], at[node_id][1], w, h)

        for k, node in enumerate(nodes):
            node_id = node["id"]
            if node_id not in added or node_id not in at or not any(_overlap(box(node_id), box(i)) for i in intruders):
                continue
            others = [i for i in at if i != node_id]
            while any(_overlap(box(node_id), box(i)) for i in others):
                at[node_id] = [at[node_id][0], at[node_id][1] + _STEP]
            new = at[node_id]
            intruders.append(node_id)
            nodes[k] = {**node, "pos": [int(v) if v == int(v) else v for v in new]}
            self.notes.append(f"{prefix}node {node_id!r} was added where this branch put another node: "
                              f"placed below, at {new[0]:g}, {new[1]:g}")

    def edges(self, base: dict[str, Any], ours: dict[str, Any], theirs: dict[str, Any], nodes: set[str],
              prefix: str) -> list[list[str]]:
        b, o, t = ([tuple(e) for e in doc.get("edges", [])] for doc in (base, ours, theirs))
        bs, os_, ts = set(b), set(o), set(t)
        kept = [e for e in o if e in ts or e not in bs] + [e for e in t if e not in os_ and e not in bs]
        fed: dict[str, str] = {}
        for src, dst in kept:
            if dst in fed:
                self.conflicts.append(f"{prefix}input {dst!r}: fed by {fed[dst]!r} here and by {src!r} in the other "
                                      "branch (an input takes one wire)")
            fed.setdefault(dst, src)
            for port in (src, dst):
                if port.split(".", 1)[0] not in nodes:
                    self.conflicts.append(f"{prefix}wire {src} -> {dst}: its node {port.split('.', 1)[0]!r} was "
                                          "deleted in one branch and wired in the other")
        return [list(e) for e in kept]

    def body(self, base: dict[str, Any], ours: dict[str, Any], theirs: dict[str, Any], where: str) -> dict[str, Any]:
        return self.graph(base, ours, theirs, f"{where}: ")


def merge_projects(base: str, ours: str, theirs: str, names: tuple[str, str, str] = ("base", "ours", "theirs")
                   ) -> MergeResult:
    """Merge the texts of three versions of a project; raises ``ProjectError`` for one that cannot
    be read (naming it by ``names``)."""
    b, o, t = (_canonical(text, name, i == 0) for i, (text, name) in enumerate(zip((base, ours, theirs), names)))
    m = _Merger(o, t)
    # (format, version and made_by are this revstudio's: both sides were read up to its version)
    doc: dict[str, Any] = {"format": o["format"], "version": o["version"]}
    doc["name"] = m.value(b.get("name", _ABSENT), o.get("name", _ABSENT), t.get("name", _ABSENT), "project name")
    m.separate_groups(b, o, t)
    doc.update(m.graph(b, o, t, ""))
    doc["groups"] = m.mapping(b.get("groups", {}), o.get("groups", {}), t.get("groups", {}), "group", m.body)
    doc["plugins"] = m.mapping(b.get("plugins", {}), o.get("plugins", {}), t.get("plugins", {}), "plugin")
    doc["training"] = m.mapping(b.get("training", {}), o.get("training", {}), t.get("training", {}), "run setting")
    # the canvas's zoom and centre are each person's: where both moved it, this branch's view stays
    doc["view"] = m.mapping(b.get("view", {}), o.get("view", {}), t.get("view", {}), "view", quiet=True)
    if doc["name"] is _ABSENT:
        del doc["name"]
    if m.conflicts:
        return MergeResult("", m.conflicts, m.notes)
    return MergeResult(dumps(loads(json.dumps(doc), names[1])), [], m.notes)


__all__ = ["MergeResult", "merge_projects"]
