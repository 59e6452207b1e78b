"""The peak of one training step, from shapes alone: a walk over forward and backward.

The step is a sequence of *units* (an ordinary layer; in reversible mode a whole
region; in checkpoint mode a checkpointed segment). Forward allocates each
unit's outputs, keeps what the unit saves for backward and frees a value when
its last reader ran and nothing keeps it. Backward walks the units in reverse:
each allocates the gradients of what it read (a view or an add passes its
gradient on instead), its parameters' gradients, and its own transient work
(a region rebuilding one step at a time, a segment recomputing itself); then
it frees what it kept and the gradients of its outputs. The peak is the most
bytes alive at any unit. Bytes exclude the weights and the input batch, as
``revstudio memory`` measures them. Torch-free; linear in the graph's size.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

Value = tuple[str, str]

# Layers whose backward hands the output's gradient on unchanged (or as a view of it)
PASS_THROUGH = frozenset({"Concat", "Flatten", "Reshape", "Permute", "Output", "GroupOutput", "GroupInput"})
STRUCTURAL = frozenset({"Split", "Concat", "Flatten", "Reshape", "Permute", "Squeeze"})
# invertible layers whose inverse and gradient the runtime computes in the wide stream dtype
WIDE_BACKWARD = frozenset({"AffineCoupling", "ActNorm", "InvConv1x1"})
# the rounding-error samples a region keeps per rebuilt input (runtime_streams.sample: 256 float64)
SAMPLE_BYTES = 256 * 8


@dataclass
class Unit:
    """One thing forward runs and backward undoes."""

    name: str
    reads: list[Value]               # values read from before the unit (raw, not resolved views)
    makes: list[Value]               # values it produces
    saved: set[Value] = field(default_factory=set)  # storages (resolved) it keeps for backward
    extra: int = 0                   # bytes of internal tensors it keeps for backward
    params: int = 0                  # parameter bytes: their gradients appear in its backward
    fresh: bool = True               # backward allocates its inputs' gradients (not a pass-through)
    work_fwd: int = 0                # transient bytes while it runs forward
    work_bwd: int = 0                # transient bytes while it runs backward
    grad: bool = True                # its outputs need gradients (its backward runs)


@dataclass
class Walk:
    """What the simulation found: the peak, where, and what was alive after forward."""

    peak: int
    kept: int
    phase: str
    at: str


def simulate(units: list[Unit], nbytes: Callable[[Value], int], base: Callable[[Value], Value | None],
             needs_grad: Callable[[Value], bool], held: Iterable[Value] = ()) -> Walk:
    """Forward then backward over ``units`` (in execution order)."""
    held_set = {b for b in (base(v) for v in held) if b is not None}
    readers: dict[Value, int] = {}
    for u in units:
        for v in u.reads:
            b = base(v)
            if b is not None:
                readers[b] = readers.get(b, 0) + 1
    live: dict[Value, int] = {}
    keepers: dict[Value, int] = {}
    total = 0
    peak, phase, at = 0, "forward", ""
    for u in units:
        for v in u.makes:
            b = base(v)
            if b is not None and b not in live:
                live[b] = nbytes(b)
                total += live[b]
        if total + u.work_fwd > peak:
            peak, phase, at = total + u.work_fwd, "forward", u.name
        if u.grad:
            for b in u.saved:
                keepers[b] = keepers.get(b, 0) + 1
            total += u.extra
        for v in [*u.reads, *u.makes]:
            b = base(v)
            if b is None or b not in live:
                continue
            if v in u.reads:
                readers[b] -= 1
            if readers.get(b, 0) <= 0 and not keepers.get(b) and b not in held_set:
                total -= live.pop(b)
    kept = total
    grads: dict[Value, int] = {}
    gtotal = 0
    pgrads = 0
    for u in reversed(units):
        if not u.grad:
            continue
        accumulate = 0
        passed = sum(grads.pop(m, 0) for m in u.makes)
        gtotal -= passed
        for v in u.reads:
            if not needs_grad(v):
                continue
            size = nbytes(v) if u.fresh else passed
            passed = 0 if not u.fresh else passed
            if v in grads:
                accumulate = max(accumulate, size)  # summed into the buffer already there
                continue
            grads[v] = size
            gtotal += size
        pgrads += u.params
        now = total + gtotal + pgrads + u.work_bwd + accumulate + (passed if u.fresh else 0)
        if now > peak:
            peak, phase, at = now, "backward", u.name
        for b in u.saved:
            keepers[b] = keepers.get(b, 0) - 1
            if keepers[b] <= 0 and b in live and readers.get(b, 0) <= 0 and b not in held_set:
                total -= live.pop(b)
        total -= u.extra
    return Walk(peak=max(peak, kept), kept=kept, phase=phase, at=at)


# ---- units from the estimate's walker (estimate_walk._Walker) ------------------------------


class UnitBuilder:
    """Turns the nodes of a checked graph into units, per mode (``walker``: the estimate's)."""

    def __init__(self, walker: Any, order: list[str], stream_bytes: int) -> None:
        self.w: Any = walker
        self.order = [n for n in order if n in self.w.views and self.w.report.nodes[n].type != "Input"]
        self.stream_bytes = stream_bytes
        self.elem = self.w.elem
        self._reads: dict[str, list[Value]] = {}
        self._units: dict[str, Unit] = {}
        self._makes: dict[str, list[Value]] = {}
        self._saved: dict[str, tuple[set[Value], int]] = {}
        self.rg: dict[Value, bool] = {}
        for nid in self.order:
            info = self.w.report.nodes[nid]
            flag = int(info.parameters) > 0 or any(self.needs_grad(v) for v in self.reads(nid))
            for port in info.outputs:
                self.rg[(nid, port)] = flag
        self.held = [v for nid in self.order if self.w.report.nodes[nid].type == "Output" for v in self.reads(nid)]
        self.position = {n: i for i, n in enumerate(self.order)}
        self.readers: dict[Value, list[str]] = {}
        for nid in self.order:
            for v in self.reads(nid):
                self.readers.setdefault(v, []).append(nid)

    def needs_grad(self, v: Value) -> bool:
        return self.rg.get(v, False)

    def reads(self, nid: str) -> list[Value]:
        cached = self._reads.get(nid)
        if cached is None:
            cached = []
            for port in self.w.report.nodes[nid].inputs:
                src = self.w.source.get((nid, port))
                if src is not None:
                    cached.append((src.node, src.port))
            self._reads[nid] = cached
        return cached

    def makes(self, nid: str) -> list[Value]:
        cached = self._makes.get(nid)
        if cached is None:
            cached = self._makes[nid] = [(nid, port) for port in self.w.report.nodes[nid].outputs]
        return cached

    def saved_by(self, nid: str) -> tuple[set[Value], int]:
        found = self._saved.get(nid)
        if found is None:
            found = self._saved[nid] = self._saved_by(nid)
        return found

    def _saved_by(self, nid: str) -> tuple[set[Value], int]:
        saves = self.w.saves.get(nid)
        if saves is None:
            return set(), 0
        vals = {self.w.input_value(nid, p) for p in saves.inputs} | {self.w.base((nid, p)) for p in saves.outputs}
        return {v for v in vals if v is not None}, int(saves.extra_bytes)

    def node(self, nid: str) -> Unit:
        unit = self._units.get(nid)
        if unit is None:
            unit = self._units[nid] = self._node(nid)
        return unit

    def _node(self, nid: str) -> Unit:
        info = self.w.report.nodes[nid]
        saved, extra = self.saved_by(nid)
        mode = str(self.w.views[nid].params.get("mode", "add")) if info.type == "Merge" else ""
        fresh = info.type not in PASS_THROUGH and mode != "add"
        work = self._node_work(nid)
        return Unit(nid, self.reads(nid), self.makes(nid), saved, extra, int(info.parameters) * self.elem,
                    fresh, 0, work, any(self.needs_grad(v) for v in self.makes(nid)))

    def _node_work(self, nid: str) -> int:
        """Transient bytes of a layer's own backward beyond its inputs' gradients."""
        info = self.w.report.nodes[nid]
        work = 0
        if info.type in WIDE_BACKWARD:  # scale/shift/log-det gradients: two outputs' worth (measured)
            work = 2 * self._act([nid])
        elif info.type == "BiRNN":  # the fused kernel's backward builds its gate gradients at once
            from .save_rules import RNN_BACKWARD, rnn_elements

            work = rnn_elements(RNN_BACKWARD, self.w.views[nid]) * self.elem
        return work

    def _outside(self, nodes: set[str]) -> tuple[list[Value], list[Value]]:
        """(values the nodes read from outside, values they make that outside nodes read)."""
        ordered = [n for n in nodes if n in self.position]  # order does not matter: deduplicated
        reads: dict[Value, None] = {}
        makes: dict[Value, None] = {}
        for nid in ordered:
            for v in self.reads(nid):
                if v[0] not in nodes:
                    reads[v] = None
            for v in self.makes(nid):
                if any(r not in nodes for r in self.readers.get(v, ())):
                    makes[v] = None
        return list(reads), list(makes)

    def _act(self, nodes: Iterable[str]) -> int:
        return max((self.w.nbytes(v) for n in nodes for v in self.makes(n)), default=0)

    def _recompute(self, nodes: Iterable[str], exclude: set[Value]) -> int:
        vals: set[Value] = set()
        extra = 0
        for n in nodes:
            s, e = self.saved_by(n)
            vals |= s
            extra += e
        return sum(self.w.nbytes(v) for v in vals - exclude) + extra

    def _parts(self, nid: str) -> int:
        view = self.w.views.get(nid)
        if view is None:
            return 1
        parts = int(view.params.get("times", 1) or 1) if view.type == "Repeat" else 1
        groups = getattr(self.w.graph, "groups", {})
        name = view.params.get("group") if view.type in ("Repeat", "Group") else None
        body = groups.get(name) if isinstance(name, str) else None
        kinds = [n.type for n in body] if body is not None else [view.type]
        if "AdditiveCoupling" in kinds:
            parts *= 2  # F and G are separate steps
        return max(1, parts)

    def region(self, region: Any) -> Unit:
        """Reversible mode: the region keeps its outputs (wide) and side inputs; backward
        holds the streams' gradients and one step's recomputation at a time."""
        nodes = set(getattr(region, "nodes", ()))
        reads, makes = self._outside(nodes)
        from .estimate_walk import _values_of

        outs = [v for v in _values_of(self.w, getattr(region, "outputs", ())) if v is not None]
        side = [v for v in _values_of(self.w, getattr(region, "side", ()) or ()) if v is not None]
        stream = sum(self.w.nbytes(v) for v in outs)
        wide = stream * max(0, self.stream_bytes - self.elem) // self.elem
        rebuilt = len([v for v in reads if v not in side])
        extra = wide + (SAMPLE_BYTES * rebuilt if self.stream_bytes > self.elem else 0)
        step = act = 0
        couplings = getattr(region, "couplings", {}) or {}
        for sid in getattr(region, "steps", ()):
            view = self.w.views.get(sid)
            if view is None or view.type in STRUCTURAL:  # slicing and concatenating streams is cheap
                continue
            body = [sid, *getattr(couplings.get(sid), "body", ())]
            ins = {self.w.base(v) for v in self._outside(set(body))[0]}
            parts = self._parts(sid)  # a Repeat or coupling node runs as several runtime steps
            act = max(act, self._act(body) // parts)
            cost = self._recompute(body, {v for v in ins if v is not None} | set(outs)) + 2 * self._act(body)
            if view.type in WIDE_BACKWARD:
                # rebuilt in the stream's wide arithmetic: the inverse's temporaries and their
                # float64 copies (measured: about seven outputs' worth on top, torch 2.13 CPU)
                cost += 7 * self._act([sid])
            step = max(step, cost // parts)
        params = sum(int(self.w.report.nodes[n].parameters) for n in nodes if n in self.w.report.nodes)
        return Unit(str(getattr(region, "id", "")), reads, makes, set(outs) | set(side), extra,
                    # the gradients of the streams being rebuilt become the inputs' gradients
                    params * self.elem, True, stream + wide + 2 * act, step,
                    any(self.needs_grad(v) for v in makes))

    def segment(self, name: str, nodes: list[str]) -> Unit:
        """Checkpoint mode: a segment keeps its inputs; backward recomputes all of it."""
        members = set(nodes)
        reads, makes = self._outside(members)
        saved = {b for b in (self.w.base(v) for v in reads) if b is not None}
        params = sum(int(self.w.report.nodes[n].parameters) for n in nodes)
        act = self._act(nodes)
        return Unit(name, reads, makes, saved, 0, params * self.elem, True, 2 * act,
                    # torch.utils.checkpoint frees each recomputed tensor once backward has used
                    # it: about three quarters of the segment is alive at once (measured)
                    3 * self._recompute(nodes, saved) // 4 + act + max(self._node_work(n) for n in nodes),
                    any(self.needs_grad(v) for v in makes))

    def walk(self, units: list[Unit]) -> Walk:
        return simulate(units, self.w.nbytes, self.w.base, self.needs_grad, self.held)
