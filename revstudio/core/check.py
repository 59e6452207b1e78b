"""The check report: shapes, parameter counts and diagnostics derived from a graph.

``check(graph)`` is a pure query: it stores nothing in the graph and is rerun
after every edit. It validates structure and params (``validate.py``), infers
shapes in topological order (``shapes.py``) and returns a :class:`Report`;
``revstudio.diagnostics.check.full_check`` later adds regions and a memory estimate.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .diagnostics import Diagnostic, warning
from .graph import Graph, GraphError, Node, PortRef
from .incremental import IncrementalCheck
from .nogc import without_cyclic_gc
from .notebook_repr import NotebookRepr, short_repr
from .project_format import MADE_BY, made_by_newer
from .shapes import UNUSED_BODY, Analysis, GroupInferer, NodeInfo, analyse_graph, body_errors_text, fmt_shape
from .spec import Registry, ShapeT
from .spec import registry as default_registry
from .validate import group_refs, other_provider

__all__ = ["IncrementalCheck", "NodeInfo", "Report", "check", "fmt_shape"]

# how many diagnostics ``repr(report)`` lists before it says how many more there are
REPR_DIAGNOSTICS = 5


@dataclass
class Report(NotebookRepr):
    """Everything ``rs.check`` found (docs/architecture.md, "The check report").

    ``valid`` (no errors), ``errors``, ``warnings`` and ``diagnostics`` (all of them: each names
    its node and port), ``nodes`` (node id -> NodeInfo: type, inputs, outputs, parameters),
    ``parameters`` (the total), ``shape("node.port")``, ``for_node(id)``, ``regions`` (the
    reversible regions) and ``near_misses`` (why other nodes are not in one), ``estimate``
    (the memory estimate: ``estimate.summary_lines()``), ``to_json()`` (``check --json``'s object).
    """

    diagnostics: list[Diagnostic] = field(default_factory=list)
    nodes: dict[str, NodeInfo] = field(default_factory=dict)
    parameters: int = 0
    order: list[str] = field(default_factory=list)
    regions: list[Any] = field(default_factory=list)       # filled by full_check
    near_misses: list[Diagnostic] = field(default_factory=list)
    estimate: Any = None                                    # filled by full_check
    # Body analyses by group name, so a group's canvas tab can show shapes and
    # errors inside it: shapes from the group's first use; a group no node uses
    # gets its structural diagnostics only. Not part of ``diagnostics``.
    groups: dict[str, Report] = field(default_factory=dict)
    # What full_check saw of the graph (``diagnostics.check_memo.graph_content``): ``compile``
    # refuses a report of a graph edited since, whose shapes would build mismatched layers.
    checked: Any = field(default=None, repr=False, compare=False)

    @property
    def valid(self) -> bool:
        return not any(d.severity == "error" for d in self.diagnostics)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "error"]

    @property
    def warnings(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "warning"]

    def for_node(self, node_id: str) -> list[Diagnostic]:
        """Diagnostics about one node, on it or naming it in ``nodes`` (the canvas outlines it,
        the inspector lists them)."""
        return [d for d in self.diagnostics if d.concerns(node_id)]

    def shape(self, ref: str | PortRef) -> ShapeT | None:
        """The inferred shape at ``"node.port"`` (an output, or a connected input), or None."""
        try:
            port = ref if isinstance(ref, PortRef) else PortRef.parse(ref)
        except GraphError:
            return None
        info = self.nodes.get(port.node)
        if info is None:
            return None
        if port.port in info.outputs:
            return info.outputs[port.port]
        return info.inputs.get(port.port)

    def __str__(self) -> str:
        """What ``print(rs.check(g))`` shows: the totals, each diagnostic and each reversible region
        (``revstudio check`` prints the full table); the dataclass's repr ran to pages."""
        errors, warnings = len(self.errors), len(self.warnings)
        lines = [f"{len(self.nodes)} nodes, {self.parameters:,} parameters, {errors} error{'s' * (errors != 1)}, "
                 f"{warnings} warning{'s' * (warnings != 1)}: {'valid' if self.valid else 'NOT valid'}"]
        for d in self.diagnostics:
            where = (d.node or "graph") + (f".{d.port}" if d.port else "")
            lines.append(f"  {d.severity} {where}: {d.message}")
        for region in self.regions:
            steps = list(getattr(region, "nodes", []))
            lines.append(f"  reversible region {getattr(region, 'id', '?')}: {len(steps)} nodes")
        return "\n".join(lines)

    def __repr__(self) -> str:
        # what a notebook shows for ``report`` in a cell: a summary and the first diagnostics,
        # never every node (a 1,000-node report's fields run to hundreds of kilobytes)
        n_errors, n_warnings = len(self.errors), len(self.warnings)
        parts = [f"{len(self.nodes):,} node{'s' * (len(self.nodes) != 1)}", f"{self.parameters:,} parameters",
                 f"{n_errors} error{'s' * (n_errors != 1)}", f"{n_warnings} warning{'s' * (n_warnings != 1)}"]
        if self.regions or self.estimate is not None:
            parts.append(f"{len(self.regions)} reversible region{'s' * (len(self.regions) != 1)}")
        if self.estimate is not None:
            parts.append(f"estimate at batch {self.estimate.batch}")
        return short_repr(f"<Report {'valid' if self.valid else 'INVALID'}: {', '.join(parts)}>",
                          self.errors + self.warnings, REPR_DIAGNOSTICS, "report.errors / report.warnings")

    def to_json(self) -> dict[str, Any]:
        """The object printed by ``revstudio check --json``."""
        out: dict[str, Any] = {
            "valid": self.valid,
            "diagnostics": [d.to_json() for d in self.diagnostics],
            # a node whose shapes could not be inferred has null outputs and parameters (the
            # text table's "?" and "-"), never an Output's {} or a claim of 0 parameters
            "nodes": {
                nid: {
                    "type": info.type,
                    "outputs": {p: list(s) for p, s in info.outputs.items()} if info.ok else None,
                    "parameters": info.parameters if info.ok else None,
                }
                for nid, info in self.nodes.items()
            },
            "parameters": self.parameters,
        }
        # After a full check (it always sets the estimate) an empty region list
        # is an answer ("nothing here is reversible"), so it is printed too.
        if self.regions or self.estimate is not None:
            out["regions"] = [r.to_json() for r in self.regions]
        if self.estimate is not None:
            out["estimate"] = self.estimate.to_json()
        return out


def _report(analysis: Analysis) -> Report:
    return Report(
        diagnostics=list(analysis.diagnostics),
        nodes=analysis.nodes,
        parameters=analysis.parameters,
        order=analysis.order,
    )


@without_cyclic_gc  # allocation-heavy and cycle-free: see revstudio.core.nogc
def check(graph: Graph, registry: Registry | None = None, incremental: IncrementalCheck | None = None) -> Report:
    """Validate ``graph`` and infer every shape and parameter count it can.

    Never raises on a loaded graph: every problem becomes a diagnostic naming
    the node and port. Linear in nodes + edges (group bodies are memoised on
    their input shapes). ``incremental``: reuse what it kept of the last check of
    these graphs for nodes whose type, params and input shapes are unchanged
    (the report is the same; see ``incremental.py``).
    """
    registry = registry or default_registry
    if incremental is not None:
        incremental.begin(graph, registry)
    try:
        return _check(graph, registry, incremental)
    finally:
        if incremental is not None:
            incremental.end()


def _check(graph: Graph, registry: Registry, incremental: IncrementalCheck | None) -> Report:
    inferer = GroupInferer(graph.groups, registry, getattr(graph, "plugins", None), incremental)
    report = _report(analyse_graph(graph, inferer))
    # Errors first (stable, so each keeps graph order): what blocks a run leads.
    report.diagnostics.sort(key=lambda d: d.severity != "error")
    bodies = dict(inferer.bodies)
    for name, body in graph.groups.items():
        if name not in bodies:  # defined but not used (or not reached): structure only
            bodies[name] = analyse_graph(body, inferer, provided=UNUSED_BODY)
    report.groups = {name: _report(bodies[name]) for name in graph.groups}
    report.diagnostics += _unused_group_errors(graph, report.groups, registry)
    report.diagnostics = _merge_provider_warnings(graph, registry, report.diagnostics,
                                                  _body_provider_uses(graph, registry))
    report.diagnostics += _newer_file(graph, report.diagnostics)
    return report


_UNKNOWN = ("unknown node type", "has no parameter")


def _newer_file(graph: Graph, diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """Where a newer revstudio wrote the file, the node types and parameters unknown here are likely
    that version's: deleting them, as their errors say for a typo, would lose a teammate's work."""
    if not made_by_newer(getattr(graph, "made_by", "")):
        return []
    nodes = list(dict.fromkeys(d.node for d in diagnostics if d.node is not None and d.severity == "error"
                               and any(u in d.message for u in _UNKNOWN)))
    if not nodes:
        return []
    named = ", ".join(repr(n) for n in nodes[:_SHOWN]) + (f" and {len(nodes) - _SHOWN} more" if len(nodes) > _SHOWN else "")
    return [warning(None, f"the file was made by {graph.made_by}, newer than this {MADE_BY}: the node types and "
                          f"parameters it does not know ({named}) are likely that version's; upgrade revstudio "
                          "rather than delete them (a Save keeps them as they are)", also=tuple(nodes))]


def _body_refs(nodes: Iterable[Node], registry: Registry) -> list[str]:
    """The groups ``nodes`` run (Group, Repeat, a coupling's f/g), in order."""
    found = []
    for node in nodes:
        spec = registry.find(node.type) if isinstance(node.type, str) else None
        if spec is not None and isinstance(node.params, dict):
            found += [name for _param, name in group_refs(spec, node.params)]
    return found


def _body_provider_uses(graph: Graph, registry: Registry) -> list[tuple[str, str, str]]:
    """A plugin node inside a group body whose type was saved from one plugin and is provided
    here by another warns on the body's own tab only; the project's list (``check``, the
    Problems tab) showed nothing. Each node of the project that runs such a body, directly or
    through nested groups, is named in the warning, with the body's node: (project node, which
    body node it runs, the warning's text)."""
    plugins = getattr(graph, "plugins", None) or {}
    swaps: dict[str, list[tuple[str, str]]] = {}
    for name, body in graph.groups.items():
        for node in body.nodes.values():
            spec = registry.find(node.type) if isinstance(node.type, str) else None
            text = other_provider(registry, spec.type_id, plugins.get(spec.type_id)) if spec is not None else ""
            if text:
                swaps.setdefault(name, []).append((node.id, text))
    if not swaps:
        return []
    out = []
    for node in graph.nodes.values():
        seen: list[str] = []
        todo = _body_refs([node], registry)
        while todo:  # iterative and cycle-safe: a group that contains itself is an error elsewhere
            name = todo.pop(0)
            if name in seen or name not in graph.groups:
                continue
            seen.append(name)
            todo += _body_refs(graph.groups[name].nodes.values(), registry)
        for name in seen:
            for inner, text in swaps.get(name, ()):
                out.append((node.id, f"node {inner!r} in group {name!r}", text))
    return out


_SHOWN = 6  # nodes a merged warning names before it says "and N more"


def _merge_provider_warnings(graph: Graph, registry: Registry, diagnostics: list[Diagnostic],
                             in_bodies: list[tuple[str, str, str]]) -> list[Diagnostic]:
    """One warning per swapped plugin type instead of one per node: a body run by ten nodes, or
    ten nodes of that type, said the same sentence ten times in ``check`` and the Problems tab.
    The merged warning sits on the first node and names the others; it lists them all in its
    ``nodes`` so each keeps its canvas outline and inspector note (a click selects them all)."""
    plugins = getattr(graph, "plugins", None) or {}
    texts = {}
    for type_id, record in plugins.items():
        text = other_provider(registry, type_id, record) if registry.find(type_id) is not None else ""
        if text:
            texts[text] = type_id
    if not texts and not in_bodies:
        return diagnostics
    users: dict[str, list[tuple[str, str]]] = {}   # text -> (node, how it uses the type)
    kept = []
    for d in diagnostics:
        if d.severity == "warning" and d.node is not None and d.message in texts:
            users.setdefault(d.message, []).append((d.node, ""))
        else:
            kept.append(d)
    for node, where, text in in_bodies:
        users.setdefault(text, []).append((node, where))
    for text, used in users.items():
        # a node that runs the type at two places in its bodies is one node: named once, with both
        wheres: dict[str, list[str]] = {}
        for node, where in used:
            wheres.setdefault(node, [])
            if where and where not in wheres[node]:
                wheres[node].append(where)
        if len(wheres) == 1:
            node, places = next(iter(wheres.items()))
            kept.append(warning(node, f"{', '.join(places)}: {text}" if places else text))
            continue
        names = [f"{node!r}" + (f" (runs {', '.join(places)})" if places else "")
                 for node, places in list(wheres.items())[:_SHOWN]]
        if len(wheres) > _SHOWN:
            names.append(f"and {len(wheres) - _SHOWN} more")
        kept.append(warning(next(iter(wheres)), f"{text}; {len(wheres)} nodes use it: {', '.join(names)}",
                            also=tuple(wheres)))
    return kept


def _unused_group_errors(graph: Graph, groups: dict[str, Report], registry: Registry) -> list[Diagnostic]:
    """A warning for each group the project never runs (no node uses it, directly or through
    other groups) whose body has errors (an unknown param, say): they stop nothing, but a
    check that ends in "valid" must not keep them from a user who never opens the group's tab
    (the command line's)."""
    def refs(part: Graph) -> list[str]:
        found = []
        for node in part.nodes.values():
            spec = registry.find(node.type) if isinstance(node.type, str) else None
            if spec is not None:
                found += [name for _param, name in group_refs(spec, node.params)]
        return found

    used: set[str] = set()
    todo = refs(graph)
    while todo:  # iterative: bodies may refer to each other in cycles (reported elsewhere)
        name = todo.pop()
        if name not in used and name in graph.groups:
            used.add(name)
            todo += refs(graph.groups[name])
    out = []
    for name, body in groups.items():
        errors = body.errors
        if name in used or not errors:
            continue
        out.append(warning(None, f"group {name!r}, which nothing in the project runs, has errors: "
                                 f"{body_errors_text(errors)}; open the group to fix them, or delete it"))
    return out
