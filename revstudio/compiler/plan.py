"""The lowered plan: a checked graph as a closed set of ops in execution order.

Both the compiler (``revstudio.compiler.module``) and the code exporter consume
it, so the in-app module and the exported file cannot drift apart. Torch-free.

Format (all frozen dataclasses; ``kind`` tells them apart):

* ``InputOp(node, index, name, output, shape, dtype)``: forward argument ``index``
  (Input nodes in document order; in a group body, GroupInput nodes with
  ``name`` = their port) becomes the value ``output``.
* ``NodeOp(node, type, module, params, inputs, outputs, in_shapes, out_shapes,
  bodies)``: call the module built by ``spec.build`` (attribute ``module`` of the
  model; ``state_dict`` prefix ``module + "."``) on ``inputs``, unpack the tuple
  into ``outputs``. ``params`` are validated with defaults filled; ``bodies``
  maps each group param (e.g. ``"f"``) to the key of its body plan in
  ``Plan.groups``: ``ctx.build_group(name)`` for that node builds that plan.
* ``CouplingOp(node, a, b, f, sign, body, output)``: a wired coupling at Merge
  ``node``: ``output = a + sign * f`` where ``f`` is computed from values ``b`` by
  the NodeOps in ``body`` (F; their modules are ordinary model attributes).
* ``RegionOp(id, nodes, steps, inputs, outputs, side, free)``: a reversible
  region; ``steps`` (NodeOps of invertible nodes and CouplingOps) run in order
  on ``inputs`` and keep only ``outputs``. ``side`` are inputs a coupling's F
  reads that backward cannot rebuild in time (kept as they are); ``free`` are inputs nothing else reads,
  made by a layer that does not keep its own output (``NodeSpec.releasable_output``): the
  runtime may release their memory after the forward pass and refill it in backward.
  Never a forward argument: tensors the caller owns are never released.
* ``OutputOp(node, index, name, input)``: result ``index`` is value ``input``.

Value names (``Plan.values``: ``"node.port" -> identifier``) and module names
(``Plan.modules``: node id -> identifier) are legal Python identifiers, never a
keyword, builtin or ``nn.Module`` attribute. A module name depends only on its
own node id (``module_name``), so editing one node never renames another's weights.
"""
from __future__ import annotations

import builtins
import hashlib
import heapq
import keyword
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Union

from revstudio.core.graph import Graph
from revstudio.core.params import validate_all
from revstudio.core.spec import InferContext, ShapeT, registry

from .regions import RegionAnalysis, _with_groups, analyze


class CompileError(ValueError):
    """The graph cannot be compiled; the message names the node and what to do."""


# Public attributes of torch.nn.Module and of the compiled/exported model: a
# node named like one of them must not shadow it.
MODULE_ATTRS = frozenset("""
T_destination add_module apply bfloat16 buffers call_super_init children compile cpu cuda double
dump_patches eval extra_repr float forward get_buffer get_extra_state get_parameter get_submodule
half ipu load_state_dict modules mtia named_buffers named_children named_modules named_parameters
parameters register_backward_hook register_buffer register_forward_hook register_forward_pre_hook
register_full_backward_hook register_full_backward_pre_hook register_load_state_dict_post_hook
register_load_state_dict_pre_hook register_module register_parameter register_state_dict_post_hook
register_state_dict_pre_hook requires_grad_ set_extra_state set_submodule share_memory state_dict
to to_empty train training type xpu zero_grad
mode modes plan regions inversion_errors initialize graph device dtype self torch nn math
logdet flow stream_dtype memory_format measure_inversion inverse memory_budget track_inversion with_logdet
""".split())
RESERVED = frozenset(keyword.kwlist) | frozenset(keyword.softkwlist) | frozenset(dir(builtins)) | MODULE_ATTRS
_IDENT = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


def module_name(node_id: str) -> str:
    """The attribute (and ``state_dict`` prefix) of a node's module: stable, legal, unique.

    An id that already is a plain identifier keeps its name; anything else is
    made legal and gets a short hash of the original id, so two ids never
    collide and the result never depends on the other nodes.
    """
    if _IDENT.match(node_id) and node_id not in RESERVED and not _looks_hashed(node_id):
        return node_id
    base = re.sub(r"[^A-Za-z0-9_]", "_", node_id).strip("_")[:40] or "node"
    if not base[0].isalpha():
        base = "n_" + base
    digest = hashlib.sha1(node_id.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{base}_{digest}"


def _looks_hashed(name: str) -> bool:
    # A user id shaped like a sanitised one could collide with it; hash it too.
    return re.search(r"_[0-9a-f]{8}$", name) is not None


class Namespace:
    """Legal, unique identifiers for local values (torch.fx ``_Namespace`` style)."""

    def __init__(self, taken: set[str] | None = None) -> None:
        self.taken = set(taken or ())

    def create(self, candidate: str) -> str:
        base = re.sub(r"[^A-Za-z0-9_]", "_", candidate).strip("_") or "v"
        if not base[0].isalpha():
            base = "v_" + base
        if base in RESERVED:
            base += "_"
        name, i = base, 1
        while name in self.taken:
            name = f"{base}_{i}"
            i += 1
        self.taken.add(name)
        return name


@dataclass(frozen=True)
class InputOp:
    node: str
    index: int
    name: str
    output: str
    shape: ShapeT
    dtype: str = "float32"
    kind: str = "input"


@dataclass(frozen=True)
class NodeOp:
    node: str
    type: str
    module: str
    params: Mapping[str, Any]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    in_shapes: tuple[ShapeT, ...]
    out_shapes: tuple[ShapeT, ...]
    bodies: Mapping[str, str] = field(default_factory=dict)  # group param -> Plan.groups key
    kind: str = "node"


@dataclass(frozen=True)
class CouplingOp:
    node: str
    a: str
    b: tuple[str, ...]
    f: str
    sign: int
    body: tuple[NodeOp, ...]
    output: str
    kind: str = "coupling"


@dataclass(frozen=True)
class RegionOp:
    id: str
    nodes: tuple[str, ...]
    steps: tuple[Union[NodeOp, CouplingOp], ...]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    side: tuple[str, ...] = ()
    free: tuple[str, ...] = ()
    kind: str = "region"


@dataclass(frozen=True)
class OutputOp:
    node: str
    index: int
    name: str
    input: str
    kind: str = "output"


Op = Union[InputOp, NodeOp, CouplingOp, RegionOp, OutputOp]


@dataclass
class Plan:
    """A lowered graph (or group body): ops in execution order plus naming tables."""

    name: str
    ops: list[Op]
    modules: dict[str, str]                 # node id -> module attribute
    values: dict[str, str]                  # "node.port" -> value identifier
    groups: dict[str, Plan]               # body key -> body plan (shared by all plans of a compile)
    regions: RegionAnalysis
    invertible: bool = False                # (bodies) one region maps all inputs to all outputs

    def __repr__(self) -> str:
        # ``model.plan`` in a notebook: counts, not every op (a 1,000-node plan's fields ran to 370 KB)
        regions = sum(isinstance(op, RegionOp) for op in self.ops)
        return (f"<Plan {self.name!r}: {len(self.ops)} ops ({len(self.inputs)} inputs, {len(self.outputs)} outputs, "
                f"{regions} regions), {len(self.modules)} layers, {len(self.groups)} group bodies>")

    @property
    def inputs(self) -> list[InputOp]:
        return [op for op in self.ops if isinstance(op, InputOp)]

    @property
    def outputs(self) -> list[OutputOp]:
        return [op for op in self.ops if isinstance(op, OutputOp)]

    def node_ops(self) -> list[NodeOp]:
        """Every NodeOp, including those inside regions and coupling bodies, in order."""
        out: list[NodeOp] = []

        def visit(op: Any) -> None:
            if isinstance(op, NodeOp):
                out.append(op)
            elif isinstance(op, CouplingOp):
                out.extend(op.body)
            elif isinstance(op, RegionOp):
                for step in op.steps:
                    visit(step)

        for op in self.ops:
            visit(op)
        return out


def lower(graph: Graph, report: Any = None) -> Plan:
    """Lower a checked graph to a :class:`Plan`; raises :class:`CompileError` if it does not check clean."""
    if report is None:
        from revstudio.core.check import check

        report = check(graph)
    if not report.valid:
        errors = [str(d) for d in report.diagnostics if d.severity == "error"]
        raise CompileError(
            f"{graph.name}: cannot compile a graph with errors; fix these first: " + "; ".join(errors[:5])
            + (f" (and {len(errors) - 5} more)" if len(errors) > 5 else "")
        )
    return _Lowering(graph.groups, {}, getattr(report, "groups", None) or {}).lower(graph, report, graph.name)


class _Lowering:
    def __init__(self, groups: Mapping[str, Graph], bodies: dict[str, Plan],
                 group_reports: Mapping[str, Any] | None = None) -> None:
        self.groups = groups
        self.bodies = bodies
        # the check's body reports by group name: whether a Group/Repeat nested in a body is
        # invertible is decided as the check decides it (``regions.analyze``)
        self.group_reports: Mapping[str, Any] = group_reports or {}

    def lower(self, graph: Graph, report: Any, name: str, body: bool = False) -> Plan:
        analysis = analyze(graph, report, keep_trivial=body, group_reports=self.group_reports)
        values: dict[str, str] = {}
        modules: dict[str, str] = {}
        ns = Namespace()
        for nid in analysis.order:
            _, outs = graph.ports(nid)
            for port in outs:
                values[f"{nid}.{port}"] = ns.create(f"{module_name(nid)}_{port}")
        src = {(e.dst.node, e.dst.port): str(e.src) for e in graph.edges}
        infos = report.nodes
        region_of = {n: r for r in analysis.regions for n in r.nodes}
        n_in = n_out = 0
        input_index = {n: i for i, n in enumerate(x for x in graph.nodes if graph.nodes[x].type in ("Input", "GroupInput"))}
        output_index = {n: i for i, n in enumerate(x for x in graph.nodes if graph.nodes[x].type in ("Output", "GroupOutput"))}

        def node_op(nid: str) -> NodeOp:
            node = graph.nodes[nid]
            spec = registry.get(node.type)
            params = validate_all(dict(spec.params), dict(node.params))[0]
            ins, outs = graph.ports(nid)
            info = infos[nid]
            modules[nid] = module_name(nid)
            in_shapes = tuple(tuple(info.inputs[p]) for p in ins)
            bodies = self.body_keys(nid, spec, params, dict(zip(ins, in_shapes)))
            return NodeOp(nid, spec.type_id, modules[nid], params,
                          tuple(values[src[(nid, p)]] for p in ins), tuple(values[f"{nid}.{p}"] for p in outs),
                          in_shapes, tuple(tuple(info.outputs[p]) for p in outs), bodies)

        ops: list[Op] = []
        done: set[str] = set()
        for nid in _unit_order(analysis.order, region_of, src):
            if nid in done:
                continue
            node = graph.nodes[nid]
            region = region_of.get(nid)
            if region is not None:
                done.update(region.nodes)
                steps: list[Union[NodeOp, CouplingOp]] = []
                for s in region.steps:
                    c = region.couplings.get(s)
                    if c is None:
                        steps.append(node_op(s))
                    else:
                        steps.append(CouplingOp(s, values[c.a], tuple(values[b] for b in c.b), values[c.f],
                                                c.sign, tuple(node_op(n) for n in c.body), values[f"{s}.out"]))
                free = tuple(values[x] for x in region.inputs
                             if x not in region.side and self.only_read_by(graph, x, set(region.nodes))
                             and self.releasable_producer(graph, x.rpartition(".")[0]))
                ops.append(RegionOp(region.id, tuple(region.nodes), tuple(steps),
                                    tuple(values[x] for x in region.inputs), tuple(values[x] for x in region.outputs),
                                    tuple(values[x] for x in region.side), free))
                continue
            done.add(nid)
            if node.type in ("Input", "GroupInput"):
                shape = tuple(infos[nid].outputs.get("out", ()))
                params = graph.resolved_params(nid)
                label = str(params.get("port", "in")) if node.type == "GroupInput" else nid
                ops.append(InputOp(nid, input_index[nid], label, values[f"{nid}.out"], shape,
                                   str(params.get("dtype", "float32"))))
                n_in += 1
            elif node.type in ("Output", "GroupOutput"):
                params = graph.resolved_params(nid)
                key = "port" if node.type == "GroupOutput" else "name"
                label = str(params.get(key) or nid)
                ops.append(OutputOp(nid, output_index[nid], label, values[src[(nid, "in")]]))
                n_out += 1
            else:
                ops.append(node_op(nid))
        ops.sort(key=lambda op: (0, op.index) if isinstance(op, InputOp) else (1, 0))
        plan = Plan(name, ops, modules, values, self.bodies, analysis)
        plan.invertible = _is_invertible_body(plan)
        return plan

    @staticmethod
    def releasable_producer(graph: Graph, node_id: str) -> bool:
        """Whether autograd never keeps node ``node_id``'s output (``NodeSpec.releasable_output``;
        Inputs belong to the caller, and Dropout in eval mode hands back its very input)."""
        node = graph.nodes[node_id]
        spec = registry.find(node.type)
        return spec is not None and spec.output_releasable(graph.resolved_params(node_id))

    @staticmethod
    def only_read_by(graph: Graph, value: str, nodes: set[str]) -> bool:
        node, _, port = value.rpartition(".")
        return all(e.dst.node in nodes for e in graph.edges if e.src.node == node and e.src.port == port)

    def body_keys(self, nid: str, spec: Any, params: Mapping[str, Any],
                  inputs: Mapping[str, ShapeT]) -> dict[str, str]:
        """Lower every group the node uses, at the shapes the node feeds it."""
        group_params = [(p, params[p]) for p, kind in spec.params.items() if kind.kind == "group" and params.get(p)]
        if not group_params:
            return {}
        from revstudio.core.shapes import GroupInferer, analyse_graph

        inferer = GroupInferer(self.groups, registry)
        seen: list[tuple[str, dict[str, ShapeT]]] = []

        def record(name: str, shapes: Mapping[str, ShapeT]) -> Any:
            seen.append((name, dict(shapes)))
            return inferer(name, shapes)

        spec.infer(InferContext(nid, params, inputs, self.groups, record))
        keys: dict[str, str] = {}
        for pname, gname in group_params:
            shapes = next((s for n, s in seen if n == gname), None)
            if shapes is None:
                raise CompileError(f"{nid}: group {gname!r} (parameter {pname!r}) was never used by the shape "
                                   "check; check the node's parameters")
            key = gname + "".join(f"|{p}=" + "x".join(map(str, s)) for p, s in sorted(shapes.items()))
            if key not in self.bodies:
                body = _with_groups(self.groups[gname], self.groups)
                analysis = analyse_graph(body, inferer, provided=shapes)
                if any(d.severity == "error" for d in analysis.diagnostics):
                    first = next(d for d in analysis.diagnostics if d.severity == "error")
                    raise CompileError(f"{nid}: group {gname!r} has errors: {first}")
                self.bodies[key] = self.lower(body, analysis, gname, body=True)
            keys[pname] = key
        return keys


def _unit_order(order: list[str], region_of: Mapping[str, Any], src: Mapping[tuple[str, str], str]) -> list[str]:
    """``order`` rearranged so each region runs as one unit: after everything it reads
    (a region's first node may come before an outside node one of its later steps needs)."""
    index = {n: i for i, n in enumerate(order)}

    def unit(n: str) -> str:
        region = region_of.get(n)
        return region.id if region is not None else n

    members: dict[str, list[str]] = {}
    for n in order:
        members.setdefault(unit(n), []).append(n)
    succ: dict[str, set[str]] = {u: set() for u in members}
    indeg = {u: 0 for u in members}
    for (dst, _port), value in src.items():
        producer = value.rpartition(".")[0]
        if producer not in index or dst not in index:
            continue
        a, b = unit(producer), unit(dst)
        if a != b and b not in succ[a]:
            succ[a].add(b)
            indeg[b] += 1
    heap = [(index[ns[0]], u) for u, ns in members.items() if indeg[u] == 0]
    heapq.heapify(heap)
    out: list[str] = []
    while heap:
        _, u = heapq.heappop(heap)
        out.extend(members[u])
        for v in succ[u]:
            indeg[v] -= 1
            if indeg[v] == 0:
                heapq.heappush(heap, (index[members[v][0]], v))
    if len(out) != len(order):  # regions are convex, so this cannot happen; fail loudly if it does
        raise CompileError("internal error: the reversible regions cannot be ordered; please report this graph")
    return out


def _is_invertible_body(plan: Plan) -> bool:
    regions = [op for op in plan.ops if isinstance(op, RegionOp)]
    rest = [op for op in plan.ops if isinstance(op, (NodeOp, CouplingOp))]
    if len(regions) != 1 or rest or regions[0].side:
        return False
    ins = {op.output for op in plan.inputs}
    outs = {op.input for op in plan.outputs}
    return set(regions[0].inputs) == ins and set(regions[0].outputs) == outs
