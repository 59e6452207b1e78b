"""Shape inference: walk the nodes in topological order calling each spec's ``infer``.

The second half of the check pass (FrEIA ``output_dims``, torch.fx ``ShapeProp``
style). A node whose inputs are unknown because something upstream failed gets
no shape and no diagnostic of its own, so one mistake is reported once while
every unrelated node still gets its shapes. Group bodies are inferred through
:class:`GroupInferer`, memoised on (group, input shapes).
"""
from __future__ import annotations

import functools
import numbers
import reprlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from .diagnostics import Diagnostic, error, warning
from .graph import Graph, PortRef
from .incremental import Inferred
from .plugins import spec_bug, spec_failed
from .spec import GroupShapes, InferContext, NodeSpec, Registry, ShapeError, ShapeT
from .validate import (
    BROKEN,
    GROUP_INPUT,
    GROUP_OUTPUT,
    NodeState,
    analyse_structure,
    group_refs,
    path_text,
    recursion_text,
    recursive_groups,
)

if TYPE_CHECKING:
    from .incremental import IncrementalCheck

MAX_GROUP_DEPTH = 32  # deeper nesting is a mistake, and it keeps recursion bounded

# ``provided`` for a body no node uses yet: its inputs have no shape, quietly,
# but its structural problems are still found for the group's canvas tab.
UNUSED_BODY: Mapping[str, ShapeT] = MappingProxyType({})


@dataclass
class NodeInfo:
    """What the check found out about one node."""

    type: str
    inputs: dict[str, ShapeT | None] = field(default_factory=dict)
    outputs: dict[str, ShapeT] = field(default_factory=dict)
    parameters: int = 0
    ok: bool = False  # shapes and parameters were inferred


@dataclass
class Analysis:
    """Shapes and diagnostics of one graph (the project or a group body)."""

    nodes: dict[str, NodeInfo]
    diagnostics: list[Diagnostic]
    order: list[str]
    parameters: int
    group_outputs: dict[str, ShapeT] = field(default_factory=dict)


def fmt_shape(shape: ShapeT | None) -> str:
    """8x16x16, or ? when unknown."""
    if shape is None:
        return "?"
    return "x".join(str(d) for d in shape) if shape else "scalar"


def _shape_key(shapes: Mapping[str, Any]) -> tuple[tuple[str, ShapeT | None], ...]:
    return tuple(sorted((str(k), None if v is None else tuple(v)) for k, v in shapes.items()))


class GroupInferer:
    """``InferContext.infer_group``: infers group bodies, memoised, refusing recursion."""

    def __init__(self, groups: Mapping[str, Graph], registry: Registry,
                 plugins: Mapping[str, Any] | None = None, incremental: IncrementalCheck | None = None) -> None:
        self.groups = groups
        self.incremental = incremental  # keeps per-node results between checks (incremental.py)
        self.registry = registry
        self.plugins = plugins or {}  # the project's record of plugin node types
        self.recursive = recursive_groups(groups, registry)
        self.active: list[str] = []
        self._cache: dict[Any, GroupShapes | ShapeError] = {}
        self.bodies: dict[str, Analysis] = {}  # first analysis of each body, for group tabs

    def __call__(self, name: str, shapes: Mapping[str, ShapeT]) -> GroupShapes:
        if name not in self.groups:
            known = ", ".join(sorted(self.groups)) or "none"
            raise ShapeError(f"there is no group {name!r} (groups: {known}); pick an existing group")
        if name in self.recursive or name in self.active:
            path = path_text(self.recursive.get(name) or [*self.active, name])
            raise ShapeError(
                f"group {name!r} contains itself ({path}); a group cannot use the group it is "
                f"inside: open group {name!r} and change what in its body uses it"
            )
        if len(self.active) >= MAX_GROUP_DEPTH:
            raise ShapeError(f"groups are nested more than {MAX_GROUP_DEPTH} deep; flatten some of them")
        key = (name, _shape_key(shapes))
        cached = self._cache.get(key)
        if cached is None:
            self.active.append(name)
            try:
                body = analyse_graph(self.groups[name], self, provided=dict(shapes))
            finally:
                self.active.pop()
            self.bodies.setdefault(name, body)
            cached = _group_result(name, body)
            self._cache[key] = cached
        if isinstance(cached, ShapeError):
            raise ShapeError(cached.message, cached.port)
        return GroupShapes(dict(cached.outputs), cached.parameters)


def _group_result(name: str, body: Analysis) -> GroupShapes | ShapeError:
    errors = [d for d in body.diagnostics if d.severity == "error"]
    if not errors:
        return GroupShapes(dict(body.group_outputs), body.parameters)
    return ShapeError(f"group {name!r} has errors: {body_errors_text(errors)}{OPEN_GROUP}")


OPEN_GROUP = "; open the group to fix it"
# An empty project: a warning (a new project is a blank page, not a mistake), which
# ``rs.compile`` and ``revstudio train`` still refuse; the editor leaves it to its blank-canvas hint.
EMPTY_GRAPH = "the graph is empty: add an Input and an Output node"


def body_errors_text(errors: Sequence[Diagnostic]) -> str:
    """"node 'c' port 'in': <the first error> (and 2 more)": a body's errors, told from outside it.
    A nested body's error already ends with :data:`OPEN_GROUP`; it is left off, so the advice is
    said once however deep the nesting."""
    first = errors[0]
    where = f"node {first.node!r}" if first.node else "the body"
    if first.port:
        where += f" port {first.port!r}"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{where}: {first.message.removesuffix(OPEN_GROUP)}{more}"


def _check_outputs(state: NodeState, result: Any, registry: Registry) -> dict[str, ShapeT]:
    """Normalise what ``infer`` returned and make sure it is a shape per output port."""
    if not isinstance(result, Mapping):
        raise ShapeError(spec_bug(registry, state.type_id,
                                  f"infer returned {reprlib.repr(result)} instead of shapes by port, e.g. {{'out': (4, 8)}}"))
    out: dict[str, ShapeT] = {}
    for port in state.outputs:
        shape = result.get(port)
        if shape is None:
            got = ", ".join(map(repr, result)) or "nothing"
            raise ShapeError(spec_bug(registry, state.type_id,
                                      f"infer returned shapes for {got} but no shape for output {port!r} "
                                      f"(the outputs are {', '.join(map(repr, state.outputs))})"), port)
        dims = tuple(shape)
        if not all(isinstance(d, int) and not isinstance(d, bool) for d in dims):
            raise ShapeError(spec_bug(registry, state.type_id,
                                      f"output {port!r} got a non-integer shape {dims!r}"), port)
        if any(d <= 0 for d in dims):
            raise ShapeError(
                f"output {port!r} would be {fmt_shape(dims)}, which is empty: the input is too small for "
                "these parameters; use a larger input or smaller kernel/stride",
                port,
            )
        out[port] = dims
    return out


def _gather_inputs(
    state: NodeState, sources: Mapping[str, PortRef], infos: Mapping[str, NodeInfo]
) -> tuple[dict[str, ShapeT | None], list[str], bool]:
    """Input shapes by port, the unconnected ports, and whether an upstream shape is missing.

    A node of unknown type has no declared ports: its connected ports are shown.
    """
    ins: dict[str, ShapeT | None] = {}
    missing: list[str] = []
    blocked = False
    for port in state.inputs if state.ports_known or state.inputs else tuple(sources):
        src = sources.get(port)
        if src is None:
            missing.append(port)
            ins[port] = None
        elif src is BROKEN:
            blocked = True
            ins[port] = None
        else:
            shape = infos[src.node].outputs.get(src.port)
            ins[port] = shape
            blocked = blocked or shape is None
    return ins, missing, blocked


def analyse_graph(
    graph: Graph, inferer: GroupInferer, provided: Mapping[str, ShapeT] | None = None
) -> Analysis:
    """Check one graph. ``provided`` holds the GroupInput shapes when ``graph`` is a body
    (``UNUSED_BODY`` for a body no node uses); None for the project itself."""
    cache = inferer.incremental.cache_for(graph) if inferer.incremental is not None else None
    st = analyse_structure(graph, inferer.groups, inferer.registry, inferer.plugins, cache)
    owner = next((name for name, body in inferer.groups.items() if body is graph), None)
    diags = st.diagnostics
    infos = {nid: NodeInfo(s.type_id) for nid, s in st.states.items()}
    group_outputs: dict[str, ShapeT] = {}
    total = 0
    for nid, state in st.states.items():
        if state.spec is None or state.failed:
            continue
        for pname, gname in group_refs(state.spec, state.params):
            if gname in inferer.recursive:
                diags.append(error(nid, recursion_text(
                    inferer.groups, inferer.registry, inferer.recursive[gname], pname, gname, nid,
                    state.spec.type_id, owner)))
                state.failed = True
    for nid in st.order:
        state = st.states[nid]
        info = infos[nid]
        ins, missing, blocked = _gather_inputs(state, st.sources.get(nid, {}), infos)
        info.inputs = ins  # shown by the inspector even when the node itself is broken
        if state.failed:
            continue
        spec = state.spec
        assert spec is not None  # resolve_node marks unknown types as failed
        if spec.type_id == GROUP_INPUT:
            port = str(state.params.get("port", "in"))
            if provided is None:
                diags.append(error(nid, "a GroupInput only belongs inside a group body; use an Input node here"))
            elif provided is UNUSED_BODY:
                pass
            elif provided.get(port) is None:
                diags.append(error(nid, f"the Group node passes nothing to group input {port!r}; connect it"))
            else:
                info.outputs = {p: tuple(provided[port]) for p in state.outputs or ("out",)}
                info.ok = True
            continue
        if spec.type_id == GROUP_OUTPUT and provided is None:
            diags.append(error(nid, "a GroupOutput only belongs inside a group body; use an Output node here"))
            continue

        for port in missing:
            diags.append(error(
                nid,
                f"input {port!r} is not connected, so its shape is unknown; connect an output to it",
                port=port,
            ))
        if missing or blocked:
            continue  # upstream already reported why; stay quiet here

        if spec.type_id == GROUP_OUTPUT:
            port = str(state.params.get("port", "out"))
            if port in group_outputs:
                diags.append(error(nid, f"two GroupOutput nodes use port {port!r}; give each a different port"))
                continue
            shape = ins.get("in")
            if shape is not None:
                group_outputs[port] = shape
                info.ok = True
            continue

        if cache is None:
            result = _infer(nid, state, spec, ins, inferer)
        else:
            result = cache.infer(nid, ins, functools.partial(_infer, nid, state, spec, ins, inferer))
        info.outputs = dict(result.outputs)
        info.parameters = result.parameters
        if result.error is not None:
            diags.append(result.error)
            continue
        info.ok = True
        total += info.parameters

    if cache is not None:
        cache.forget_missing(graph)
    diags += _unused_outputs(st.states, st.used, infos)
    if provided is None and not st.states:  # (the editor shows its blank-canvas hint instead)
        diags.append(warning(None, EMPTY_GRAPH))
    elif provided is None:
        types = {s.type_id for s in st.states.values()}
        if "Input" not in types:
            diags.append(warning(None, "the graph has no Input node; add one so shapes can be inferred"))
        if "Output" not in types:
            diags.append(warning(None, "the graph has no Output node; add one to mark what the network returns"))
    return Analysis(infos, diags, st.order, total, group_outputs)


def _infer(nid: str, state: NodeState, spec: NodeSpec, ins: dict[str, ShapeT | None],
           inferer: GroupInferer) -> Inferred:
    """Call the spec's ``infer`` and ``count_params`` for one node; an error becomes its diagnostic."""
    ctx = InferContext(nid, state.params, ins, inferer.groups, infer_group=inferer)
    hook, doing = "infer", "infer shapes"
    try:
        outputs = _check_outputs(state, spec.infer(ctx), inferer.registry)
        hook, doing = "count_params", "count this node's weights"  # what fails next is not infer
        count: Any = spec.count_params(ctx) if spec.count_params else 0
        if isinstance(count, float) and count.is_integer():
            count = int(count)
        if isinstance(count, bool) or not isinstance(count, numbers.Integral) or count < 0:
            # int() truncated 2.5 to 2 and called a None "infer raised TypeError"
            return Inferred({}, 0, error(nid, spec_bug(
                inferer.registry, spec.type_id,
                f"count_params returned {reprlib.repr(count)}, not a number of weights (a whole number, 0 or more)")))
        return Inferred(outputs, int(count), None)
    except ShapeError as exc:
        return Inferred({}, 0, error(nid, exc.message, port=exc.port))
    except RecursionError:
        return Inferred({}, 0, error(nid, "groups nest too deeply to infer; flatten some of them"))
    except Exception as exc:  # a spec bug must not take the whole check down
        # a plugin's bug is reported once, naming the plugin, and only its node fails
        text = spec_failed(inferer.registry, spec.type_id, exc, hook, doing)
        return Inferred({}, 0, error(nid, text or f"could not {doing} ({type(exc).__name__}: {exc}); "
                                                 "check the parameters"))


def _unused_outputs(
    states: Mapping[str, NodeState], used: Mapping[str, set[str]], infos: Mapping[str, NodeInfo]
) -> list[Diagnostic]:
    """Warn about computed values nobody reads (only for nodes that worked: no noise)."""
    out = []
    for nid, state in states.items():
        if not infos[nid].ok or not state.outputs:
            continue
        reads = used.get(nid, set())
        unused = [p for p in state.outputs if p not in reads]
        if not unused:
            continue
        if len(unused) == len(state.outputs):
            out.append(warning(
                nid,
                f"nothing reads the output of {nid!r}; connect it to another node or an Output, or delete it",
                port=unused[0],
            ))
            continue
        for port in unused:
            out.append(warning(
                nid,
                f"output {port!r} is not connected, so its values are thrown away (and the network "
                "cannot be inverted here); connect it, e.g. to a Concat, or change the node",
                port=port,
            ))
    return out
