"""Structural validation: node types, parameters, ports, edges, cycles and group references.

The first half of the check pass. It resolves every node against the registry
once, indexes the edges once and finds every problem that needs no shapes; the
shape walk (``shapes.py``) then runs over what this pass left usable.
"""
from __future__ import annotations

import difflib
import functools
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .diagnostics import Diagnostic, error, warning
from .graph import Edge, Graph, Node, PortRef, reachable
from .params import validate_all
from .plugins import bad_port_names, install_advice, spec_bug, spec_failed, why_missing
from .spec import NodeSpec, Registry

if TYPE_CHECKING:
    from .incremental import NodeCache

GROUP_INPUT = "GroupInput"
GROUP_OUTPUT = "GroupOutput"


@dataclass
class NodeState:
    """One node as the checker sees it: its spec, validated params and ports."""

    node: Node
    spec: NodeSpec | None
    params: dict[str, Any] = field(default_factory=dict)
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    # Ports are only trusted when the type is known and the params are valid;
    # otherwise edge/port checks would pile noise on a node that is already red.
    ports_known: bool = False
    failed: bool = False  # has an error of its own: no shape is inferred for it

    @property
    def type_id(self) -> str:
        return self.spec.type_id if self.spec is not None else str(self.node.type)


# An input port fed by a source whose port does not exist: connected, shapeless.
BROKEN = PortRef("", "")


@dataclass
class Structure:
    """What the structural pass found: usable nodes, one source per input, order."""

    states: dict[str, NodeState]
    sources: dict[str, dict[str, PortRef]]  # node -> input port -> the one source
    used: dict[str, set[str]]               # node -> output ports read by someone
    order: list[str]                        # topological, cycle members omitted
    cycle_members: set[str]
    diagnostics: list[Diagnostic]


def _suggest(name: str, known: Iterable[str]) -> str:
    """' (did you mean Conv?)' for near misses, case-insensitively."""
    return _suggest_cached(name, tuple(known))


@functools.lru_cache(maxsize=256)
def _suggest_cached(name: str, known: tuple[str, ...]) -> str:
    # Cached: a file with thousands of nodes of one misspelt type asks the same question.
    by_lower = {k.lower(): k for k in known}
    close = difflib.get_close_matches(name.lower(), list(by_lower), n=3, cutoff=0.6)
    if not close:
        return ""
    return " (did you mean " + " or ".join(by_lower[c] for c in close) + "?)"


def group_refs(spec: NodeSpec, values: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(param name, group name) for each group a node refers to."""
    refs = []
    for name, param in spec.params.items():
        if param.kind == "group":
            value = values.get(name, param.default)
            if isinstance(value, str) and value:
                refs.append((name, value))
    return refs


def missing_type_text(type_id: str, record: Mapping[str, Any] | None, registry: Registry) -> str | None:
    """Why a node type the file says a plugin provides is not available here, and what to do:
    install the plugin, fix it, or (it is installed and loads, but no longer declares the type)
    rename the node's type or give the plugin ``legacy_ids``. None: the file has no record."""
    if not isinstance(record, Mapping) or not isinstance(record.get("distribution"), str):
        return None
    dist = record["distribution"]
    version = record.get("version")
    made = f" (the file was saved with {dist} {version})" if isinstance(version, str) else ""
    installed, types = registry.installed(dist)  # loads the plugins first, so their problems are known
    broken = why_missing(dist, type_id)
    if broken is not None:  # installed, but its import failed or it skipped the type: "install it" misleads
        return (f"node type {type_id!r} comes from the plugin {dist}{made}, which is installed but {broken}; "
                "fix or update the plugin and reopen the file")
    if installed is not None:  # it loads, but declares no such type (renamed without legacy_ids?)
        here = f"{dist} {installed.version}" if installed.version else dist
        close = _suggest(type_id, types)
        has = f"; it provides {', '.join(types)}" if types and not close else ""
        return (f"node type {type_id!r} comes from the plugin {dist}{made}; {here} is installed but does not "
                f"provide that type{close}{has}. If the plugin renamed it, change this node's type to the new "
                f"name in the file, or ask the plugin's authors to list {type_id!r} in the new type's legacy_ids")
    return (f"node type {type_id!r} comes from the plugin {dist}, which is not installed{made}; "
            f"{install_advice(dist)}, and reopen the file")


def other_provider(registry: Registry, type_id: str, record: Any) -> str:
    """Where another package provides ``type_id`` than the plugin the file was saved with (two
    packages declare it, and the other one won, or revstudio now has a built-in type of that
    name): a warning saying so, since the layer may differ; else empty."""
    provider = registry.provider(type_id)
    if not isinstance(record, Mapping) or not isinstance(record.get("distribution"), str) or provider is None:
        return ""
    dist = record["distribution"]
    if dist == provider.distribution:
        return ""
    saved = f"{dist} {record['version']}" if isinstance(record.get("version"), str) else dist
    here = ("revstudio's built-in catalog" if provider.builtin else
            f"{provider.distribution or provider.label} {provider.version or ''}".rstrip())
    return (f"node type {type_id!r} was saved with the plugin {saved}, but here {here} provides it "
            "(both declare that type id); check that it is the layer you meant, or uninstall one of them")


def _plugin_changed(registry: Registry, type_id: str, plugins: Mapping[str, Any] | None) -> str:
    """Where the file was saved with another version of the plugin that provides ``type_id``
    than the one installed: a note saying so (a parameter it no longer takes is then no typo),
    else empty."""
    record = (plugins or {}).get(type_id)
    provider = registry.provider(type_id)
    if not isinstance(record, Mapping) or provider is None or provider.builtin:
        return ""
    saved, dist = record.get("version"), record.get("distribution")
    if not saved or not provider.version or dist != provider.distribution or saved == provider.version:
        return ""
    return (f" (the file was saved with {dist} {saved}; {dist} {provider.version} is installed, "
            "whose parameters may differ)")


def resolve_node(
    node: Node, registry: Registry, groups: Mapping[str, Graph], diags: list[Diagnostic],
    plugins: Mapping[str, Any] | None = None,
) -> NodeState:
    """Look up the spec, validate params and group references, compute ports.

    ``plugins``: the project's record of which package provides each plugin type,
    so a node whose plugin is not installed names the package to install.
    """
    spec = registry.find(node.type) if isinstance(node.type, str) else None
    if spec is None:
        hint = missing_type_text(str(node.type), (plugins or {}).get(str(node.type)), registry)
        if hint is None:
            types = tuple(s.type_id for s in registry)
            hint = (f"unknown node type {node.type!r}{_suggest(str(node.type), types)}; change the type or "
                    "delete the node (or install the plugin that provides it)")
        diags.append(error(node.id, hint))
        return NodeState(node, None, failed=True)
    state = NodeState(node, spec)
    swapped = other_provider(registry, spec.type_id, (plugins or {}).get(spec.type_id))
    if swapped:
        diags.append(warning(node.id, swapped))
    raw = node.params if isinstance(node.params, dict) else {}
    if not isinstance(node.params, dict):
        diags.append(error(node.id, "params must be an object of name: value; fix the file"))
        state.failed = True
    values, problems = validate_all(dict(spec.params), raw)
    changed = _plugin_changed(registry, spec.type_id, plugins) if problems else ""
    for name, message in problems.items():
        if name not in spec.params:
            known = ", ".join(sorted(spec.params)) or "none"
            message = (f"{spec.type_id} has no parameter {name!r}{_suggest(name, spec.params)} "
                       f"(it has: {known}); remove it or rename it")
        diags.append(error(node.id, f"parameter {name!r}: {message}{changed}"))
        state.failed = True
    state.params = values
    for pname, gname in group_refs(spec, values):
        if gname not in groups:
            known = ", ".join(sorted(groups)) or "none yet"
            diags.append(error(
                node.id,
                f"parameter {pname!r}: there is no group {gname!r}{_suggest(gname, groups)} "
                f"(groups: {known}); pick an existing group or create it",
            ))
            state.failed = True
    try:
        full = {**spec.defaults(), **values}
        state.inputs = spec.input_ports(full, groups)
        state.outputs = spec.output_ports(full, groups)
        provider = registry.provider(spec.type_id) if callable(spec.inputs) or callable(spec.outputs) else None
        wrong = (bad_port_names("inputs", list(state.inputs)) or bad_port_names("outputs", list(state.outputs))
                 if provider is not None and not provider.builtin else None)
        if wrong:  # a plugin's port rule's names (a declared tuple's are checked when the plugin loads)
            diags.append(error(node.id, spec_bug(registry, spec.type_id, f"{spec.type_id}: {wrong}")))
            state.failed = True
        state.ports_known = not state.failed
    except Exception as exc:  # a spec's port rule choked on odd params: report, don't crash
        text = spec_failed(registry, spec.type_id, exc, "its inputs/outputs rule", "work out this node's ports")
        diags.append(error(node.id, text or f"cannot work out this node's ports ({exc}); check its parameters"))
        state.failed = True
    return state


def _resolve_into(node: Node, registry: Registry, groups: Mapping[str, Graph], plugins: Mapping[str, Any] | None,
                  diags: list[Diagnostic]) -> NodeState:
    return resolve_node(node, registry, groups, diags, plugins)


def recursive_groups(groups: Mapping[str, Graph], registry: Registry) -> dict[str, list[str]]:
    """Groups that contain themselves, directly or not: name -> cycle path."""
    succ: dict[str, list[str]] = {}
    for name, body in groups.items():
        refs: list[str] = []
        for node in body.nodes.values():
            spec = registry.find(node.type) if isinstance(node.type, str) else None
            if spec is not None and isinstance(node.params, dict):
                refs += [g for _, g in group_refs(spec, node.params) if g in groups]
        succ[name] = refs
    out: dict[str, list[str]] = {}
    for comp in strongly_connected(list(groups), succ):
        if len(comp) > 1 or comp[0] in succ.get(comp[0], ()):
            members = set(comp)
            for name in comp:
                out[name] = cycle_path(name, succ, members)
    return out


def groups_containing(groups: Mapping[str, Graph], registry: Registry, name: str) -> set[str]:
    """``name`` and every group whose body uses it, directly or through other groups: the groups
    a node in ``name``'s body cannot use without a group containing itself."""
    users: dict[str, set[str]] = {}
    for owner, body in groups.items():
        for node in body.nodes.values():
            spec = registry.find(node.type) if isinstance(node.type, str) else None
            if spec is not None and isinstance(node.params, dict):
                for _, used in group_refs(spec, node.params):
                    users.setdefault(used, set()).add(owner)
    return reachable([name], users)


def recursion_text(groups: Mapping[str, Graph], registry: Registry, cycle: list[str], pname: str, gname: str,
                   node_id: str, node_type: str, owner: str | None) -> str:
    """Why parameter ``pname`` of node ``node_id`` (in the body of group ``owner``, None at the top)
    cannot name the recursive group ``gname`` (``cycle`` starts and ends at it), and what to change:
    the node that closes the cycle is named with its parameter, so the advice fits a coupling's
    function as well as a Group node."""
    path = path_text(cycle)
    if owner is not None and owner in cycle:  # this node closes the cycle: change this parameter
        how = "" if gname == owner else f", which uses {owner!r} ({path})"
        fix = f"pick another group for {pname!r}"
        if pname == "group":  # a Group / Repeat node: the node itself is the mistake
            fix += " or remove this node from the body"
        return (f"parameter {pname!r}: {node_type} {node_id!r} is inside group {owner!r}, so its {pname!r} "
                f"cannot be {gname!r}{how} (a group cannot contain itself); {fix}")
    culprit = _cycle_culprit(groups, registry, cycle)
    text = f"parameter {pname!r}: group {gname!r} contains itself ({path})"
    if culprit is None:
        return text + f"; open group {gname!r} and remove what uses it from its body"
    inner_id, inner_type, inner_param, target = culprit
    fix = f"pick another group for its {inner_param!r}" + (" or remove that node"
                                                           if inner_param == "group" else "")
    return (text + f": {inner_type} {inner_id!r} in group {cycle[0]!r} uses group {target!r} as its "
            f"{inner_param!r}; open group {cycle[0]!r} and {fix}")


def _cycle_culprit(groups: Mapping[str, Graph], registry: Registry,
                   cycle: list[str]) -> tuple[str, str, str, str] | None:
    """(node id, type, parameter, group) of the node in ``cycle[0]``'s body that uses ``cycle[1]``."""
    if len(cycle) < 2 or cycle[0] not in groups:
        return None
    for node in groups[cycle[0]].nodes.values():
        spec = registry.find(node.type) if isinstance(node.type, str) else None
        if spec is None or not isinstance(node.params, dict):
            continue
        for pname, gname in group_refs(spec, node.params):
            if gname == cycle[1]:
                return node.id, str(node.type), pname, gname
    return None


def strongly_connected(nodes: list[str], succ: Mapping[str, list[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative so hostile files cannot exhaust the stack."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    comps: list[list[str]] = []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(succ.get(root, ())))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(succ.get(w, ()))))
                    advanced = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                comps.append(comp)
    return comps


def cycle_path(start: str, succ: Mapping[str, list[str]], members: set[str]) -> list[str]:
    """A shortest cycle start -> ... -> start inside one strongly connected component."""
    parent: dict[str, str] = {}
    queue = deque([start])
    while queue:
        v = queue.popleft()
        for w in succ.get(v, ()):
            if w == start:
                path = [v]
                while path[-1] != start:
                    path.append(parent[path[-1]])
                return list(reversed(path)) + [start]
            if w in members and w not in parent:
                parent[w] = v
                queue.append(w)
    return [start, start]


def _topological(ids: list[str], succ: Mapping[str, list[str]], skip: set[str]) -> list[str]:
    """Kahn's algorithm in node order, so the result reads like the file."""
    indeg = dict.fromkeys(ids, 0)
    for v in ids:
        if v in skip:
            continue
        for w in succ.get(v, ()):
            if w in indeg:
                indeg[w] += 1
    queue = deque(v for v in ids if indeg[v] == 0 and v not in skip)
    order: list[str] = []
    while queue:
        v = queue.popleft()
        order.append(v)
        for w in succ.get(v, ()):
            if w in skip:
                continue
            indeg[w] -= 1
            if indeg[w] == 0:
                queue.append(w)
    return order


def analyse_structure(graph: Graph, groups: Mapping[str, Graph], registry: Registry,
                      plugins: Mapping[str, Any] | None = None, cache: NodeCache | None = None) -> Structure:
    """Resolve nodes, index edges once, detect cycles; linear in nodes + edges.

    ``cache``: the last check's resolved nodes (``incremental.py``), reused where a node's type
    and params are unchanged."""
    diags: list[Diagnostic] = []
    if cache is None:
        states = {nid: resolve_node(node, registry, groups, diags, plugins) for nid, node in graph.nodes.items()}
    else:
        states = {nid: cache.resolve(node, diags, functools.partial(_resolve_into, node, registry, groups, plugins))
                  for nid, node in graph.nodes.items()}

    incoming: dict[str, dict[str, list[Edge]]] = {}
    broken: dict[str, set[str]] = {}
    used: dict[str, set[str]] = {}
    succ: dict[str, list[str]] = {}
    for edge in graph.edges:
        src, dst = states.get(edge.src.node), states.get(edge.dst.node)
        if src is None or dst is None:
            missing = edge.src.node if src is None else edge.dst.node
            where = dst if src is None else src
            diags.append(error(
                where.node.id if where is not None else None,
                f"edge {edge} names a node {missing!r} that does not exist; remove the edge",
            ))
            continue
        succ.setdefault(edge.src.node, []).append(edge.dst.node)
        src_ok = not src.ports_known or edge.src.port in src.outputs
        dst_ok = not dst.ports_known or edge.dst.port in dst.inputs
        if not src_ok:
            diags.append(error(
                src.node.id,
                f"edge {edge}: {src.type_id} node {src.node.id!r} has no output port "
                f"{edge.src.port!r} (it has {_names(src.outputs)}); reconnect or remove the edge",
                port=edge.src.port,
            ))
        if not dst_ok:
            diags.append(error(
                dst.node.id,
                f"edge {edge}: {dst.type_id} node {dst.node.id!r} has no input port "
                f"{edge.dst.port!r} (it has {_names(dst.inputs)}); reconnect or remove the edge",
                port=edge.dst.port,
            ))
            continue
        used.setdefault(edge.src.node, set()).add(edge.src.port)
        incoming.setdefault(edge.dst.node, {}).setdefault(edge.dst.port, []).append(edge)
        if not src_ok:
            broken.setdefault(edge.dst.node, set()).add(edge.dst.port)

    sources: dict[str, dict[str, PortRef]] = {}
    for nid, ports in incoming.items():
        for port, edges in ports.items():
            if len(edges) > 1:
                froms = ", ".join(str(e.src) for e in edges)
                diags.append(error(
                    nid,
                    f"input {port!r} has {len(edges)} edges (from {froms}) but an input takes one; "
                    "remove all but one, or add a Merge/Concat to combine them",
                    port=port,
                ))
                states[nid].failed = True
                continue
            bad = port in broken.get(nid, ())
            sources.setdefault(nid, {})[port] = BROKEN if bad else edges[0].src

    ids = list(graph.nodes)
    order = _topological(ids, succ, set())
    cycle_members: set[str] = set()
    if len(order) < len(ids):
        placed = set(order)
        rest = [v for v in ids if v not in placed]
        rest_set = set(rest)
        position = {v: i for i, v in enumerate(ids)}
        rest_succ = {v: [w for w in succ.get(v, ()) if w in rest_set] for v in rest}
        for comp in strongly_connected(rest, rest_succ):
            if len(comp) == 1 and comp[0] not in rest_succ[comp[0]]:
                continue
            members = set(comp)
            first = min(comp, key=position.__getitem__)
            path = path_text(cycle_path(first, rest_succ, members))
            for nid in sorted(members, key=position.__getitem__):
                diags.append(error(
                    nid,
                    f"node {nid!r} is part of a cycle ({path}); data must flow one way: "
                    "remove one of these edges",
                ))
            cycle_members |= members
        order = _topological(ids, succ, cycle_members)
    return Structure(states, sources, used, order, cycle_members, diags)


def path_text(path: list[str], limit: int = 8) -> str:
    """'a -> b -> a', shortened in the middle for long cycles (every member repeats it)."""
    if len(path) <= limit:
        return " -> ".join(path)
    return " -> ".join(path[: limit - 2]) + f" -> ... ({len(path) - limit} more) -> " + " -> ".join(path[-2:])


def _names(ports: Iterable[str]) -> str:
    names = [repr(p) for p in ports]
    return ", ".join(names) if names else "no such ports"
