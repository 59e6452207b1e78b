"""The layers of Group, Repeat and coupling nodes as units of the peak walk.

In standard mode (and in checkpoint mode's recomputes) the runtime runs a Group's body, each
copy of a Repeat's, an AdditiveCoupling's F and G and an AffineCoupling's net layer by layer
(``peak_couplings``), freeing each value after its last reader, and their backward frees what
each layer kept as it goes. Walked as one step, such a node held all its insides and its
inputs' gradients at once (up to 17 % above the measured peak; an AffineCoupling priced by a
rule up to 37 % below it); here each body layer is a unit of its own, under a global name:
``Inline`` maps the names of every copy's layers to the body's walker, resolves values, bytes
and gradients across the scopes, and fuses the Concat/Split pairs the runtime fuses within a
region. In checkpoint mode a body run as its own module checkpoints its own runs of layers
(``peak_recompute`` walks those). Torch-free.
"""
from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from .axis_order import copies_input
from .estimate_walk import _params, group_ports
from .peak import Unit, Value, Walk, simulate
from .peak_couplings import COUPLINGS
from .peak_units import UnitBuilder
from .save_rules import makes_view

_GROUPS = frozenset({"Group", "Repeat"})


@dataclass
class _Scope:
    """One copy of a body: its builder, the prefix of its layers' global names, and the global
    values feeding its group inputs (by port)."""

    b: UnitBuilder
    prefix: str
    feeds: dict[str, Value]
    active: frozenset[str]
    region: str | None = None  # the region a spliced body runs in (the top scope: per node)
    # whether the caller hands its outputs' gradients on as views (an add, a Concat) rather than
    # making them (an AffineCoupling's net): a view outlives the body's backward
    shares: bool = True


# the layers whose outputs are views of their input, stepped through one at a time
_STEPPED = frozenset({"Flatten", "Reshape", "Split"})


class Inline:
    """The units of a graph's layers with the bodies of its Groups, Repeats and coupling nodes
    walked layer by layer, and the value namespace ``simulate`` walks them with."""

    def __init__(self, root: UnitBuilder, checkpoint: bool = False) -> None:
        self.root = root
        # checkpoint mode: a body run as its own module checkpoints its runs of layers itself
        self.checkpoint = checkpoint
        self.top = _Scope(root, "", {}, root.active)
        self.scopes: dict[str, tuple[_Scope, str]] = {}  # global node id -> (its scope, local id)
        self.views: dict[Value, Value] = {}  # a value that is another one (a body's output)
        # values the coupling layout makes: bytes, the value viewed (None: new storage), needs grad
        self.made: dict[Value, tuple[int, Value | None, bool]] = {}
        self._units: dict[str, list[Unit]] = {}
        self._builders: dict[tuple[str, tuple[bool, ...], bool], UnitBuilder | None] = {}
        self._base: dict[Value, Value | None] = {}
        self._bytes: dict[Value, int] = {}
        self._grads: dict[Value, bool] = {}
        # a project Repeat's units per copy, with the values each copy hands the next
        self._copies: dict[str, list[tuple[list[Unit], list[Value]]]] = {}
        # joined values a Split may undo without a copy: (their parts, the parts' channels, region)
        self._joins: dict[Value, tuple[list[Value], tuple[int, ...], str]] = {}
        # joined values handed on unjoined, and their parts (shared by the namespaces of one
        # estimate: the names are the same in each, and the standard one finds them all first)
        self.unjoined: dict[Value, list[Value]] = {}

    # -- the namespace --------------------------------------------------------
    def names_of(self, other: Inline) -> None:
        """Resolve names as ``other`` does (before either has units): checkpoint mode's segments
        read and make the values standard mode's layers make, under the same global names, and
        hand on the parts of a joined value where standard mode finds them unjoined."""
        self.scopes, self.views, self.made = other.scopes, other.views, other.made
        self._joins, self.unjoined = other._joins, other.unjoined

    def base(self, v: Value) -> Value | None:
        if v in self._base:
            return self._base[v]
        found = self._base[v] = self._resolve(v)
        return found

    def _resolve(self, v: Value) -> Value | None:
        for _ in range(10_000):
            if v in self.views:
                v = self.views[v]
                continue
            made = self.made.get(v)
            if made is not None:
                if made[1] is None:
                    return v
                v = made[1]
                continue
            scoped = self.scopes.get(v[0])
            if scoped is None:
                stepped = self._root_step(v)
                if stepped is not None:  # a view of the project's graph: resolve what it views
                    v = stepped
                    continue
                found = self.root.w.base(v)
            else:
                scope, local = scoped
                lb = scope.b.w.base((local, v[1]))
                if lb is None:
                    return None
                if lb[0] == "":  # a group input: the value feeding it
                    feed = scope.feeds.get(lb[1])
                    if feed is None:
                        return None
                    v = feed
                    continue
                found = (scope.prefix + lb[0], lb[1])
            if found is None or found not in self.views:
                return found
            v = found
        return None  # pragma: no cover - a cycle; the check reports it

    def _root_step(self, v: Value) -> Value | None:
        """The value ``v`` (of the project's graph) views where it is a Flatten's, Reshape's or
        (unfused) Split's output, else None. Stepped through one at a time, a view of a part
        this namespace names resolves to that part: a Flatten of a Split's part a coupling node
        hands on unjoined is a view of the part, not of the joined output the runtime never
        makes (``_Walker.base`` resolves it so: a multi-scale flow's checkpoint mode kept 25 %
        less after forward than the walk said)."""
        w = self.root.w
        info = w.report.nodes.get(v[0])
        if info is None or not (info.type in _STEPPED or makes_view(info.type, _params(w.graph, v[0])
                                                                    if info.type == "Permute" else {})):
            return None
        if copies_input(w, v[0], _params):  # a reshape of a view out of axis order: memory of its own
            return None
        src = w.source.get((v[0], "in"))
        if src is None or (info.type == "Split" and w._fused_split(v[0], v[1]) is not None):
            return None
        return src.node, src.port

    def nbytes(self, v: Value) -> int:
        found = self._bytes.get(v)
        if found is None:
            made, b, local = self._owner(v)
            found = self._bytes[v] = made[0] if made is not None else int(b.w.nbytes(local))
        return found

    def resize(self, v: Value, nbytes: int) -> None:
        """Count ``v`` at ``nbytes`` in this namespace's walk (the storages it holds alive)."""
        self._bytes[v] = max(0, int(nbytes))

    def needs_grad(self, v: Value) -> bool:
        found = self._grads.get(v)
        if found is None:
            made, b, local = self._owner(v)
            found = self._grads[v] = made[2] if made is not None else bool(b.needs_grad(local))
        return found

    def _owner(self, v: Value) -> tuple[tuple[int, Value | None, bool] | None, UnitBuilder, Value]:
        """What answers for ``v`` (through the views): the coupling layout's entry for a value it
        makes, else the builder of the graph ``v`` is a value of and its name there."""
        while v in self.views:
            v = self.views[v]
        made = self.made.get(v)
        scoped = self.scopes.get(v[0])
        if made is not None or scoped is None:
            return made, self.root, v
        scope, local = scoped
        return None, scope.b, (local, v[1])

    def walk(self, units: list[Unit]) -> Walk:
        """``simulate`` over ``units``; those made elsewhere (a region, a segment) see the bodies'
        outputs as the values they are."""
        own = {id(u) for found in self._units.values() for u in found}
        ready = [u if id(u) in own or not self.views else self._adopt(u) for u in units]
        return simulate(ready, self.nbytes, self.base, self.needs_grad, self.root.held)

    def recompute(self, name: str, units: list[Unit], reads: list[Value], makes: list[Value],
                  shared: AbstractSet[Value], saved: AbstractSet[Value], extra: int, params: int,
                  grad: bool, seed_bytes: Mapping[Value, int] | None = None, top: bool = False) -> Unit:
        """The unit of a checkpointed run of ``units`` in this namespace (``late``: its backward
        recomputes it): ``peak_recompute.recompute_walk`` prices that recompute alone; what its
        layers hold to the end of the step, and the buffers its inputs' gradients are, go with it.
        ``seed_bytes``: its outputs whose gradients are larger buffers (``Unit.seed_bytes``);
        ``top``: a segment of the step's own walk (``recompute_walk``'s)."""
        from .peak_recompute import recompute_walk

        seeds = {v: n for v, n in (seed_bytes or {}).items() if v in makes}
        if not any(u.grad and (u.saved or u.extra) for u in units):
            # torch's checkpoint holds its inputs through what its layers save: where none saves
            # anything (an add), it keeps nothing (random skip network 7's one-add region, whose
            # input the walk kept through the next region's backward: 7 % over)
            saved = frozenset()
        peak, forward, grads, nested, joins, (held, released) = recompute_walk(self, units, reads, makes, shared,
                                                                               seeds, top)
        # inputs whose gradients its backward makes one buffer (an add reading two of them hands
        # each the same): the step's walk makes one too (a skip Merge after a reversible region,
        # in its own segment, was counted a buffer per input: 17 % over in checkpoint mode)
        joined = (frozenset(joins[0][0]), joins[0][1]) if joins else None
        return Unit(name, reads, makes, saved, extra, params, True, forward, peak - params, grad, late=True,
                    extra_held=sum(u.extra_held for u in units), grad_bytes=grads or None,
                    seed_bytes=seeds or None, work_nested=None if nested is None else nested - params,
                    joined=joined, work_held=held - params,
                    work_released=None if released is None else released - params)

    def _adopt(self, u: Unit) -> Unit:
        saved = {self.base(s) for s in u.saved}
        return _copy(u, saved=frozenset(s for s in saved if s is not None))

    # -- the units ------------------------------------------------------------
    def units(self, nid: str) -> list[Unit]:
        """The units of the project's node ``nid``: its body's layers where it runs one."""
        found = self._units.get(nid)
        if found is None:
            found = self._units[nid] = self._of(self.top, nid)
        return found

    def _of(self, scope: _Scope, nid: str) -> list[Unit]:
        b = scope.b
        view = b.w.views.get(nid)
        if view is not None and nid not in b.w.untracked:
            if view.type in _GROUPS:
                found = self._group(scope, nid, view)
                if found is not None:
                    return found
            elif view.type in COUPLINGS:
                found = COUPLINGS[view.type](self, scope, nid, view)
                if found is not None:
                    return found
        unit = self._node(scope, nid)
        info = b.w.report.nodes[nid]
        region = self._region(scope, nid)
        if region is not None and info.type == "Concat":
            parts = [b.w.source.get((nid, p)) for p in info.inputs]
            if all(p is not None for p in parts):
                self._joins[self._global(scope, (nid, next(iter(info.outputs), "out")))] = (
                    [self._global(scope, (p.node, p.port)) for p in parts if p is not None],
                    _channels(info.inputs.values()), region)
        elif region is not None and info.type == "Split":
            src = b.w.source.get((nid, "in"))
            parts_of = self._unjoined(scope, nid, (src.node, src.port), _channels(info.outputs.values())) \
                if src is not None else None
            for part, port in zip(parts_of or (), info.outputs):
                self.views[self._global(scope, (nid, port))] = part
            if parts_of:  # no copy: each output's gradient is its part's
                unit = _copy(unit, reads=list(parts_of), fresh=False)
        return [unit]

    def _region(self, scope: _Scope, nid: str) -> str | None:
        return scope.b.w.region_of.get(nid) if scope is self.top else scope.region

    def _unjoined(self, scope: _Scope, reader: str, value: Value, sizes: tuple[int, ...]) -> list[Value] | None:
        """Where the runtime hands the parts of a joined value on unjoined (``fuse_cat_slice``):
        ``value`` (of ``scope``), read by ``reader`` alone, which splits it into ``sizes``
        channels, is a value a Concat (or a coupling node) joined in the same region and nothing
        else read, through a group's input or output; its parts, else None."""
        region = self._region(scope, reader)
        v = self._global(scope, value)
        for _ in range(10_000):
            if region is None or not self._single(v):
                return None
            joined = self._joins.get(v)
            if joined is not None:
                parts, channels, where = joined
                if where != region or channels != sizes:
                    return None
                self.unjoined[v] = parts
                return parts
            if v in self.views:
                v = self.views[v]
                continue
            scoped = self.scopes.get(v[0])
            if scoped is None:
                return None
            inner, local = scoped
            if inner.b.w.report.nodes[local].type != "GroupInput":
                return None
            port = str(_params(inner.b.w.graph, local).get("port", "in"))
            if port not in inner.feeds:
                return None
            v = inner.feeds[port]
        return None  # pragma: no cover

    def _single(self, v: Value) -> bool:
        """Whether one reader alone reads ``v`` and no region keeps it."""
        scoped = self.scopes.get(v[0])
        if scoped is None:
            w = self.top.b.w
            return w.readers.get(v, 0) == 1 and v not in w.region_kept
        inner, local = scoped
        if inner.b.w.report.nodes[local].type == "GroupOutput":  # between two copies of a Repeat
            return True
        return int(inner.b.w.readers.get((local, v[1]), 0)) == 1

    def _global(self, scope: _Scope, v: Value) -> Value:
        return v if not scope.prefix else (scope.prefix + v[0], v[1])

    def _node(self, scope: _Scope, nid: str, reads: list[Value] | None = None,
              makes: list[Value] | None = None) -> Unit:
        """Node ``nid`` of ``scope`` as a unit under global names, what it keeps resolved here
        (from the values it reads and makes, so a view of a body's output is the value it views)."""
        prefix, b = scope.prefix, scope.b
        w = b.w
        saves = w.saves.get(nid)
        view = w.views.get(nid)
        raw: list[Value]
        if saves is not None and view is not None and view.type not in _GROUPS:
            source = w.source
            raw = [(src.node, src.port) for src in (source.get((nid, port)) for port in saves.inputs)
                   if src is not None]
            raw += [(nid, port) for port in saves.outputs]
            if prefix:
                raw = [(prefix + v[0], v[1]) for v in raw]
            extra = w.extra_bytes(nid)
        else:  # a Group run whole: the values it keeps as the walker found them
            kept, extra = b.saved_by(nid)
            raw = [scope.feeds[s[1]] if s[0] == "" and s[1] in scope.feeds else self._global(scope, s)
                   for s in kept if s[0] != "" or s[1] in scope.feeds]
        base = self.base
        saved = frozenset(v for v in (base(r) for r in raw) if v is not None)
        if not prefix:
            return b.unit(nid, saved, extra, reads=reads, makes=makes)
        return b.unit(nid, saved, extra, prefix + nid,
                      [(prefix + v[0], v[1]) for v in b.reads(nid)] if reads is None else reads,
                      [(prefix + v[0], v[1]) for v in b.makes(nid)] if makes is None else makes)

    def _body(self, scope: _Scope, name: str, grads: tuple[bool, ...], spliced: bool) -> UnitBuilder | None:
        """A builder over group body ``name`` whose inputs (in order) need ``grads``; ``spliced``:
        as a region runs it, its steps among the region's (a Concat the next Split undoes fused)."""
        key = (name, grads, spliced)
        if key not in self._builders:
            self._builders[key] = scope.b.sub_builder(name, grads, spliced)
        return self._builders[key]

    def _run_body(self, scope: _Scope, name: str, prefix: str, feeds: list[Value],
                  outs: list[Value] | None, out: list[Unit], region: str | None,
                  shares: bool = True) -> list[Value] | None:
        """Appends the units of one copy of body ``name`` read from ``feeds`` (in port order) to
        ``out``; its outputs become ``outs`` (or values of the copy's own). Returns its outputs.
        ``region``: the region it runs spliced into (None: the body's module runs it);
        ``shares``: whether its outputs' gradients are views its caller hands on (``_Scope``)."""
        if name in scope.active:
            return None
        grads = tuple(self.needs_grad(v) for v in feeds)
        body = self._body(scope, name, grads, region is not None)
        if body is None:
            return None
        graph = body.w.graph
        in_ports = group_ports(graph, "GroupInput", "in")
        out_nodes = [n for n in graph.nodes if graph.nodes[n].type == "GroupOutput"]
        if len(in_ports) != len(feeds) or (outs is not None and len(outs) != len(out_nodes)):
            return None
        inner = _Scope(body, prefix, dict(zip(in_ports, feeds)), scope.active | {name}, region, shares)
        for nid in graph.nodes:
            self.scopes[prefix + nid] = (inner, nid)
        made: dict[int, Value] = {}
        runs = self._runs(name, body) if self.checkpoint and region is None else {}
        for nid in body.order:
            if nid in runs:  # a checkpointed run of layers, as one unit
                if runs[nid]:
                    out.append(self._segment(inner, runs[nid]))
                continue
            kind = body.w.report.nodes[nid].type
            if kind == "GroupInput":
                port = str(_params(graph, nid).get("port", "in"))
                feed = inner.feeds[port]
                out.append(self._node(inner, nid, reads=[feed]))
            elif kind == "GroupOutput":
                src = body.w.source.get((nid, "in"))
                if src is None:
                    return None
                value = self._global(inner, (src.node, src.port))
                i = out_nodes.index(nid)
                target = outs[i] if outs is not None else (prefix + nid, "out")
                self.views[target] = value
                made[i] = target
                u = self._node(inner, nid, makes=[target])
                u.grad = self.needs_grad(value)
                out.append(u)
            else:
                out.extend(self._of(inner, nid))
        return [made[i] for i in range(len(out_nodes)) if i in made]

    def _runs(self, name: str, body: UnitBuilder) -> dict[str, list[str]]:
        """Checkpoint mode: the runs of two or more layers body ``name`` checkpoints when its
        module runs (``assembly.plan_segments``), by node: the run at its first node, [] at the
        others. A region of the body's own (a Reshape ending a Linear F) ends a run, its layers
        walked one by one (networks 4 and 15 were up to 14 % over with a Linear and an
        Activation before such a region walked as layers, whose recompute is a run's)."""
        found = self.root.w.bodies.regions(name)
        if found is None:
            return {}
        inside = {n for region in found[0] for n in getattr(region, "nodes", ())}
        out: dict[str, list[str]] = {}
        run: list[str] = []
        for nid in [*body.order, None]:
            kind = body.w.report.nodes[nid].type if nid is not None else None
            if kind is not None and kind not in ("GroupInput", "GroupOutput") and nid not in inside:
                run.append(nid)  # type: ignore[arg-type]
                continue
            if len(run) >= 2:
                out.update((n, []) for n in run)
                out[run[0]] = run
            run = []
        return out

    def _segment(self, scope: _Scope, run: list[str]) -> Unit:
        """A run of layers of ``scope`` checkpointed (``peak_segments.segment``): it keeps its
        inputs; its backward recomputes it, walked alone here, layer by layer."""
        b = scope.b
        reads, makes = b.outside(set(run))
        reads = [self._global(scope, v) for v in reads]
        makes = [self._global(scope, v) for v in makes]
        layers = [u for n in run for u in self._of(scope, n)]
        params = sum(u.params for u in layers)
        saved = frozenset(v for v in (self.base(r) for r in reads) if v is not None)
        outs = b.outside(set(run))[1]
        from .peak_recompute import shared_outputs

        shared = {self._global(scope, v) for v in shared_outputs(b, outs, scope.shares, end=b.position[run[-1]])}
        return self.recompute(f"{scope.prefix}segment {run[0]}..{run[-1]}", layers, reads, makes, shared, saved,
                              0, params, any(self.needs_grad(v) for v in makes))

    def _group(self, scope: _Scope, nid: str, view: Any) -> list[Unit] | None:
        name = view.params.get("group")
        if not isinstance(name, str) or name in scope.active:
            return None
        b = scope.b
        graph = b.w.bodies.graph.groups.get(name)
        if graph is None:
            return None
        feeds = []
        for port in group_ports(graph, "GroupInput", "in"):
            src = b.w.source.get((nid, port))
            if src is None:
                return None
            feeds.append(self._global(scope, (src.node, src.port)))
        outs = [self._global(scope, (nid, p)) for p in group_ports(graph, "GroupOutput", "out")]
        times = max(1, int(view.params.get("times", 1) or 1)) if view.type == "Repeat" else 1
        units: list[Unit] = []
        values: list[Value] = feeds
        starts = []
        ends = []
        for k in range(times):
            starts.append(len(units))
            prefix = f"{scope.prefix}{nid}#{k}/" if view.type == "Repeat" else f"{scope.prefix}{nid}/"
            made = self._run_body(scope, name, prefix, values, outs if k == times - 1 else None, units,
                                  self._region(scope, nid))
            if made is None:
                return None
            values = made
            ends.append(made)
        if scope is self.top:
            self._copies[nid] = [(units[a:z], out) for a, z, out in zip(starts, [*starts[1:], len(units)], ends)]
        return units

    def piece_units(self, members: list[tuple[str, int, int, int]]) -> tuple[list[Unit], list[Value]] | None:
        """The units of a checkpoint segment of a region whose cuts fall between the copies of a
        Repeat (``peak_segments.pieces``: node, first copy, end copy, copies), and the values the
        last copy it runs of a Repeat it ends inside hands the next copy; None where a Repeat is
        not walked as its copies."""
        out: list[Unit] = []
        ends: list[Value] = []
        for nid, lo, hi, n in members:
            units = self.units(nid)
            if (lo, hi) == (0, n) or n <= 1:
                out += units
                continue
            copies = self._copies.get(nid)
            if copies is None or len(copies) != n:
                return None
            out += [u for copy, _ in copies[lo:hi] for u in copy]
            if hi < n:
                ends += copies[hi - 1][1]
        return out, ends


def _copy(u: Unit, **changes: Any) -> Unit:
    """``u`` with ``changes``, its resolved storages forgotten (another namespace resolves them);
    ``dataclasses.replace`` without its per-call field introspection (thousands per estimate)."""
    return Unit(changes.get("name", u.name), changes.get("reads", u.reads), changes.get("makes", u.makes),
                changes.get("saved", u.saved), u.extra, u.params, changes.get("fresh", u.fresh), u.work_fwd,
                changes.get("work_bwd", u.work_bwd),
                changes.get("grad", u.grad), u.late, u.work_spent, u.work_after, u.extra_fwd, u.extra_held,
                u.grad_bytes, work_shared=u.work_shared, joined=u.joined, seed_bytes=u.seed_bytes,
                guard_bytes=u.guard_bytes, output_last=u.output_last, work_stop=u.work_stop,
                params_last=u.params_last, grads_viewed=u.grads_viewed, work_held=u.work_held,
                zero_grads=u.zero_grads,
                work_released=None if "work_bwd" in changes else u.work_released,
                work_outs=None if "work_bwd" in changes else u.work_outs,
                work_freed=None if "work_bwd" in changes else u.work_freed)


def _channels(shapes: Any) -> tuple[int, ...]:
    return tuple(int(s[0]) if s else 0 for s in shapes)
