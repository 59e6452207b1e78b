"""The units of the peak walk (``peak.simulate``), per mode, from the estimate's walker.

An ordinary layer is one unit in every mode; in reversible mode a whole region is
one (its backward rebuilds one step at a time), in checkpoint mode a checkpointed
segment (recomputed whole when backward reaches it). Torch-free.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any

from . import peak_bare, peak_forward, peak_invconv, peak_layouts, peak_moments, peak_steps, save_rules
from .estimate_walk import _values_of, group_ports
from .peak import Unit, Value
from .peak_bypass import bypass_gone
from .peak_moments import FLOW_WORK
from .peak_outputs import (
    bare_mids_gone,
    cloned_zeros,
    grads_read_on,
    handed_back,
    logdet_bytes,
    made_real,
    mid_corrections,
    mid_outputs_gone,
    not_streams,
    unread_kept,
    unread_outputs,
    zeros_gone,
)
from .peak_sides import side_unmade
from .peak_steps import Moment
from .save_rules import forward_shared_bytes, forward_work_bytes, guard_bytes, held_bytes, output_last

# Layers whose backward hands the output's gradient on unchanged (or as a view of it)
PASS_THROUGH = frozenset({"Concat", "Flatten", "Reshape", "Permute", "Output", "GroupOutput", "GroupInput"})
_NONE = -(1 << 62)  # (no moment priced yet)


class UnitBuilder:
    """Turns the nodes of a checked graph into units, per mode (``walker``: the estimate's)."""

    def __init__(self, walker: Any, order: list[str], stream_bytes: int, device: str = "cpu", *,
                 active: frozenset[str] = frozenset(), inputs_grad: Mapping[str, bool] | None = None) -> None:
        self.w: Any = walker
        self.active = active  # the group bodies this builder is inside (recursion-safe)
        self._bodies: dict[str, tuple[UnitBuilder, Any] | None] = {}
        self._nets: dict[tuple[str, bool], tuple[int, int, int] | None] = {}
        self.order = [n for n in order if n in self.w.views and self.w.report.nodes[n].type != "Input"]
        self.stream_bytes = stream_bytes
        self.channels_last = False  # the streams of the region being priced (``peak_layouts.channels_last``)
        self.region_layouts: dict[str, bool] = {}  # region id -> channels_last (``peak_layouts``)
        self.kept_wide = 0  # and the correction of its outputs it keeps (``peak_bare.corrected``)
        self.mid_wide: list[tuple[int, int]] = []  # of which its outputs' a later step takes (``mid_corrections``)
        self.apart: set[Value] = set()  # and its outputs copied apart (``peak_layouts.apart_parts``)
        self.device = device  # "cpu" or an accelerator's type: how the stream updates are pieced
        self.elem = self.w.elem
        self._reads: dict[str, list[Value]] = {}
        self._makes: dict[str, list[Value]] = {}
        self._saved: dict[str, tuple[AbstractSet[Value], int]] = {}
        self._work: dict[str, int] = {}
        self._largest: dict[str, int] = {}
        self._facts: dict[str, tuple[Any, ...]] = {}  # ``_unit_facts`` per node
        # one pass in execution order: what each node reads and makes, whether its outputs
        # need gradients, who reads each value
        self.rg: dict[Value, bool] = {}
        self.flag: dict[str, bool] = {}
        self.held: list[Value] = []
        # batches from which a region's stream updates work in more pieces (``update_break``)
        self.breaks: set[int] = set()
        self.moment_steps: list[str] = []  # the step each of ``_moments``' last moments is of
        self.readers: dict[Value, list[str]] = {}
        nodes, source, rg, readers = self.w.report.nodes, self.w.source, self.rg, self.readers
        for nid in self.order:
            info = nodes[nid]
            reads = []
            for port in info.inputs:
                src = source.get((nid, port))
                if src is not None:
                    v = (src.node, src.port)
                    reads.append(v)
                    found = readers.get(v)
                    if found is None:
                        readers[v] = [nid]
                    else:
                        found.append(nid)
            self._reads[nid] = reads
            makes = self._makes[nid] = [(nid, port) for port in info.outputs]
            flag = int(info.parameters) > 0 or any(rg.get(v, False) for v in reads)
            if inputs_grad is not None and info.type == "GroupInput":  # a body's: as its caller's
                flag = inputs_grad.get(str(self.w.views[nid].params.get("port", "in")), False)
            self.flag[nid] = flag
            for v in makes:
                rg[v] = flag
            if info.type == "Output":
                self.held += reads
        self.position = {n: i for i, n in enumerate(self.order)}

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

    def saved_by(self, nid: str) -> tuple[AbstractSet[Value], int]:
        found = self._saved.get(nid)
        if found is None:
            found = self._saved[nid] = self._saved_by(nid)
        return found

    def _saved_by(self, nid: str) -> tuple[AbstractSet[Value], int]:
        saves = self.w.saves.get(nid)
        if saves is None:
            return frozenset(), 0
        return self.w.saved_values(nid), self.w.extra_bytes(nid)

    def unit(self, nid: str, saved: AbstractSet[Value], extra: int, name: str | None = None,
             reads: list[Value] | None = None, makes: list[Value] | None = None) -> Unit:
        """A new unit of node ``nid`` keeping ``saved`` and ``extra`` bytes (under ``name``,
        reading ``reads`` and making ``makes``: its own by default)."""
        facts = self._facts.get(nid)
        if facts is None:
            facts = self._facts[nid] = self._unit_facts(nid)
        mean, fresh, params, fwd, work, grad, shared, held, more, guard, last, stop, params_last, viewed, unpack, \
            spent, freed = facts
        # (an add Merge hands each input its output's gradient itself)
        alias = self.w.report.nodes[nid].type == "Merge" and str(self.w.views[nid].params.get("mode", "add")) == "add"
        made = self.makes(nid) if makes is None else makes
        # a mean Merge hands every input one gradient, its output's divided by n, not one each
        # (a mean of two halves was 14 % over, of three 29 %)
        shared_grad = (frozenset(self.reads(nid) if reads is None else reads), self.w.nbytes(made[0])) \
            if mean and made else None
        return Unit(nid if name is None else name, self.reads(nid) if reads is None else reads, made, saved,
                    extra, params, fresh, fwd, work, grad, extra_fwd=extra - shared if shared else None,
                    work_shared=more, guard_bytes=guard, output_last=last, work_stop=stop, extra_held=held,
                    params_last=params_last, grads_viewed=viewed, joined=shared_grad, unpack_bytes=unpack,
                    work_outs=spent, work_freed=freed, aliases=alias)

    def _unit_facts(self, nid: str) -> tuple[Any, ...]:
        """What every unit of node ``nid`` has, whatever it keeps, reads and makes (once per node)."""
        info, view = self.w.report.nodes[nid], self.w.views[nid]
        mode = str(view.params.get("mode", "add")) if info.type == "Merge" else ""
        shared = held = more = 0
        if info.type == "InvConv1x1":  # (the one layer either applies to)
            shared, held = forward_shared_bytes(view), held_bytes(view)
            if shared:
                more = peak_invconv.layer_backward(view, self.elem, False) - self.node_work(nid)
        saves, extra, params = self.w.saves.get(nid), self.w.extra_bytes(nid), int(info.parameters) * self.elem
        work, spent, freed = self.node_work(nid), None, None
        if info.type == "BiRNN":  # a loop of cells: its moments parted (``Unit.work_outs``, ``work_freed``)
            from .rnn_memory import loop_backward_moments, loop_cell

            if loop_cell(view) is not None:
                work, spent, freed = loop_backward_moments(view, int(info.parameters), self.saved_by(nid)[1],
                                                           any(self.needs_grad(v) for v in self.reads(nid)))
        # a dropout's mask exists beside its input and output while it runs (its forward work)
        return (mode == "mean", info.type not in PASS_THROUGH and mode != "add", params,
                forward_work_bytes(view) or save_rules.declared_forward_bytes(saves, extra), work,
                bool(self.makes(nid)) and self.flag.get(nid, False), shared, held, more, guard_bytes(view),
                output_last(view), save_rules.declared_stop_bytes(view, saves, extra),
                params // 2 if info.type == "ActNorm" else 0,
                info.type == "Linear" and len(view.inputs.get("in") or ()) > 1,
                peak_invconv.unpack_bytes(view, self.elem) if info.type == "InvConv1x1" else 0, spent, freed)


    def node_work(self, nid: str) -> int:
        """Transient bytes of a layer's own backward beyond its inputs' gradients."""
        found = self._work.get(nid)
        if found is None:
            found = self._work[nid] = self._find_work(nid)
        return found

    def _find_work(self, nid: str) -> int:
        info = self.w.report.nodes[nid]
        work = 0
        if info.type in FLOW_WORK:  # in outputs' worth, beside its output's and input's gradients
            work = FLOW_WORK[info.type] * self.largest_of([nid])
            if info.type == "ActNorm" and not any(self.needs_grad(v) for v in self.reads(nid)):
                # x + b's gradient, its shift's summed from, is made all the same (Glow's first: 25 % under)
                work += self.largest_of([nid])
            if info.type == "InvConv1x1":
                work = peak_invconv.layer_backward(self.w.views[nid], self.elem)
        elif info.type == "BiRNN":  # the fused kernel's backward builds its gate gradients at once
            from .rnn_memory import birnn_backward_work

            work = birnn_backward_work(self.w.views[nid], int(info.parameters), self.elem, self.saved_by(nid)[1],
                                       any(self.needs_grad(v) for v in self.reads(nid)))
        else:  # as the type declares it (``NodeSpec.saved_for_backward``)
            work = getattr(self.w.saves.get(nid), "work_bytes", 0)
        if info.type == "Split":  # its backward joins the parts' gradients with zeros for the
            # parts nothing read (a Split that drops channels was 20 % under without them)
            work += sum(self.w.nbytes(v) for v in self.makes(nid) if not self.readers.get(v))
        return work

    def outside(self, nodes: set[str]) -> tuple[list[Value], list[Value]]:
        """(values the nodes read from outside, values they make that outside nodes read)."""
        reads: dict[Value, None] = {}
        makes: dict[Value, None] = {}
        position, readers = self.position, self.readers
        read_by, made_by = self._reads, self._makes  # (filled for every node of ``position``)
        for nid in nodes:  # order does not matter: deduplicated
            if nid not in position:
                continue
            for v in read_by[nid]:
                if v[0] not in nodes:
                    reads[v] = None
            for v in made_by[nid]:
                for r in readers.get(v, ()):
                    if r not in nodes:
                        makes[v] = None
                        break
        return list(reads), list(makes)

    def largest_of(self, nodes: Iterable[str]) -> int:
        """The largest output of ``nodes`` (cached per node)."""
        best = 0
        for n in nodes:
            size = self._largest.get(n)
            if size is None:
                size = self._largest[n] = max((self.w.nbytes(v) for v in self.makes(n)), default=0)
            if size > best:
                best = size
        return best

    def _reads_from_outside(self, nodes: list[str]) -> set[Value]:
        """The storages of what ``nodes`` read from nodes not among them."""
        inside = set(nodes)
        out: set[Value] = set()
        for nid in nodes:
            for v in self.reads(nid):
                if v[0] not in inside:
                    b = self.w.base(v)
                    if b is not None:
                        out.add(b)
        return out

    def recompute_bytes(self, nodes: Iterable[str], exclude: set[Value], inverted: str | None = None) -> int:
        """What rebuilding ``nodes`` keeps for their backward, beyond the values in ``exclude``
        (a region's or segment's own reads: its streams, not fused apart). ``inverted``: the
        reversible step rerun on the input its inverse rebuilt, which keeps what its type declares
        for that (``SavedTensors.rerun_values``)."""
        vals: set[Value] = set()
        extra = 0
        for n in nodes:
            saves = self.w.saves.get(n)
            if saves is not None:
                vals |= self.w.saved_values(n, fuse=False)
                rerun = saves.rerun_extra_bytes if n == inverted else None
                extra += int(saves.extra_bytes if rerun is None else rerun)
        return sum(self.w.nbytes(v) for v in vals - exclude) + extra

    def region(self, region: Any) -> Unit:
        """Reversible mode: the region keeps its outputs (wide) and side inputs; backward
        holds the streams' gradients and one step's recomputation at a time."""
        nodes = set(getattr(region, "nodes", ()))
        reads, makes = self.outside(nodes)
        # the outputs as named (a Split's parts, which the region keeps as streams of their own)
        # and as the storages they are, each once (random skip network 4's region ending with a
        # Split of a Squeeze's output was 17 % over, that storage counted once per part)
        named = [v for v in _values_of(self.w, getattr(region, "outputs", ()), raw=True) if v is not None]
        self.channels_last = peak_layouts.channels_last(self, region, reads)  # (before: a Split's parts copied apart)
        # (parts copied apart are storages of their own: not the one they were sliced from)
        self.apart = peak_layouts.apart_parts(self, region, named)
        outs = list(dict.fromkeys(b for b in (self.w.base(v) for v in named if v not in self.apart) if b is not None))
        side = [v for v in _values_of(self.w, getattr(region, "side", ()) or ()) if v is not None]
        stream = sum(self.w.nbytes(v) for v in named)
        wide, grown, rebuild = peak_bare.rebuilt_streams(self, named, region)
        # (side inputs as named too: a Split's part read as one is no storage of its own, and no sample)
        named_side = [v for v in _values_of(self.w, getattr(region, "side", ()) or (), raw=True) if v is not None]
        samples = peak_steps.sample_bytes(self.w, reads, [*side, *named_side], getattr(region, "head", frozenset()))
        # (outputs nothing after the region reads: their gradients of zeros, the storages kept of them)
        zeros = unread_outputs(self, region, named, makes)
        unread = unread_kept(self, nodes, reads, zeros, makes)
        extra = wide + (samples if self.stream_bytes > self.elem else 0) + sum(map(self.w.nbytes, self.apart)) \
            + sum(map(self.w.nbytes, unread)) + logdet_bytes(self, region) \
            + peak_steps.sample_bytes(self.w, handed_back(region, named, reads), (), getattr(region, "head", frozenset()))
        out_set = set(outs)
        # backward copies each output to rebuild the streams in (the caller's tensor is never
        # written over); the copy takes the output's place, unless the caller holds the output
        # (an Output node reads it; a later layer's saved tensors are gone by then)
        copies = sum(self.w.nbytes(v) for v in outs if v in self.held)
        infos = self.w.report.nodes
        self.kept_wide, self.mid_wide = wide, mid_corrections(self, region, named)
        moments, act = self._moments(region, out_set, copies)
        self.mid_wide = []
        unmade, side_grads = side_unmade(self, region, reads, self.moment_steps)
        mids = mid_outputs_gone(self, region, named, self.moment_steps)
        mids = [m + z for m, z in zip(mids, zeros_gone(self, region, zeros, unread, self.moment_steps))]
        unmade = [n + m + k for n, m, k in zip(unmade, mids, bypass_gone(self, region, self.moment_steps))]
        clones = cloned_zeros(self, region, named, self.moment_steps)
        reals = made_real(self, region, self.moment_steps)
        params = sum(int(infos[n].parameters) for n in nodes if n in infos) * self.elem - peak_steps.kept_params(self, region)
        # backward runs the steps last to first, and a step's parameter gradients appear in its
        # own backward: at a step, only the gradients of the steps after it (and of its own
        # copies already done) exist. ``step`` is the backward's peak net of the gradients of
        # all the region's parameters, which the walk counts for the whole unit.
        # The outputs' gradients are released once the last two computing steps have run
        # (``work_spent``); until then a stream an additive step passes its gradient through to
        # holds a view of them, not a gradient of its own, where the walk counts the streams'
        # (the inputs') gradients whole from the start of the unit.
        # The moments price each step's backward, net of what the walk counts at the unit's start
        # (its kept outputs and their corrections, the inputs' gradients, every parameter's); where
        # all of them are below it, the backward never holds that much (random skip network 37's
        # region at batch 1 ends, its peak, with the outputs a later step took gone: 1.1 % over at
        # the floor of 0, 258's 3.7 %). Not where the region has side inputs needing gradients:
        # there the floor stands for a moment no step prices (245's at batch 2, the end of F's
        # backward beside a side input's gradient G's relu made, a view that lives on: 0.43 % under
        # without it).
        step = [0, 0] if side_grads else [_NONE, _NONE]
        later = ran = 0  # parameter bytes and runtime steps after this one (backward has run them)
        # a Squeeze's backward hands the steps before it the streams' gradient as one new tensor
        # (``joined`` bytes), as the region's output gradients are at its start: until two
        # computing steps have turned it into the streams' own, the walk's count of the streams'
        # gradients misses it, less what is still a view of it (``since``: steps run after it)
        joined = since = 0
        # a storage's part no value uses but a view keeps: an affine step's rebuilt x2 is a new
        # pair, x1's view keeps the storage y2 was part of (``first_more``), and the steps
        # backward runs next hold it too (an affine step's rebuild beside its own y2), until the
        # streams are one new tensor again (a Squeeze's inverse, a flow layer's)
        dead = 0
        spent_at = peak_steps.spent_after(self, region)
        moments = peak_moments.first_flow_grads(self, getattr(region, "steps", ()), wide, moments, spent_at)
        twice = peak_steps.one_gradient_bytes(self, region, named)
        summed = peak_steps.summed_into_shared(self, region, named) if twice else 0
        # the gradients of the streams being rebuilt become the inputs' gradients, which the walk
        # counts from the start of the unit; where the inputs need none (an Input's), the
        # streams' gradients still exist while the region runs backward (``handed``: a budget's
        # rest hands kept copies of a Repeat the gradients of what they hand it)
        inputs_grads = sum(self.w.nbytes(v) for v in reads if self.needs_grad(v)) + getattr(region, "handed", 0)
        # (the side inputs' gradients are not the streams': they appear as F's backward makes them)
        # (an output a later step takes as its stream is no stream of its own: ``not_streams``)
        held = max(0, stream - not_streams(self, region, named) - inputs_grads + side_grads)
        # (what the walk counts of the streams' gradients: no more of them is a view of the outputs')
        counted = inputs_grads + held
        # (the real zero corrections of bare outputs a later step takes, which ``held`` stands for, go with them)
        unmade = [n + min(held, k) for n, k in zip(unmade, bare_mids_gone(self, region, named, self.moment_steps))]
        for (own, parts, with_grads, before, passing, first_more), gone, clone, real in zip(
                reversed(moments), reversed(unmade), reversed(clones), reversed(reals)):
            if parts == 0:  # (a Squeeze: ``_moments``)
                joined, since, dead = passing, 0, 0
                if ran >= spent_at:
                    # its inverse makes a new pair from the rebuilt one while both are alive, the
                    # gradients of the steps after it made (the streams' gradient, joined, is the
                    # inputs' where the region starts with it; a budget's rest that starts with the
                    # end of a wired block before it, network 443's at batch 32, was 3.6 % under),
                    # less what the walk counts that is not held yet (``gone``: a side input's
                    # gradient the steps before it make; random skip network 21 was 4.1 % over)
                    step[1] = max(step[1], passing * self.stream_bytes // self.elem - (params - later) - gone)
                continue
            lift = 0
            if joined and since < 2:
                lift = joined - passing if since == 1 else (0 if passing else joined)
            done = own - own // parts  # a Repeat's other copies
            if not passing:  # a flow layer: its inverse reads the streams joined anew
                dead = 0
            beside = first_more or dead  # (an affine step's own x2, or another's dead part)
            if ran == 0 and passing:  # the first: every stream's gradient is still a view of the outputs'
                passing = max(passing, min(stream - twice, counted))
            elif passing:  # (not the stream an output's gradient, the same tensor, was summed into)
                passing = max(0, passing - summed)
            if ran < spent_at:  # its first runtime steps, or all of them, run before the release
                first = own * min(parts, spent_at - ran) // parts  # the gradients of the copies run by then
                step[0] = max(step[0], with_grads + beside - passing - (params - later - first) - gone + clone + real,
                              before + dead - passing - (params - later - (first - own // parts)) - gone + clone + real)
            if ran + parts > spent_at:
                step[1] = max(step[1], with_grads + lift + beside - (params - later - own) - gone + real,
                              before + lift + dead - (params - later - done) - gone + real)
            dead = first_more or dead
            later += own
            ran += parts
            since += parts
        step = [0 if s == _NONE else s for s in step]  # (no moment: the floor)
        if grown:  # a layer reads a float64 stream through a copy in the model's dtype
            step = [step[0] + act, step[1] + act]
        first = step[0] + held
        steps = list(getattr(region, "steps", ()))
        if steps:  # backward ends with its first split's (``peak_steps.gathered``), the outputs a later
            # step took as its stream gone by then with their corrections (``mid_outputs_gone``)
            step[1] = max(step[1], peak_steps.gathered(self, steps[0]) - (mids[0] if mids else 0))
        last = self.w.views.get(steps[-1]) if steps else None
        if last is not None and last.type == "Concat":
            # backward starts with the Concat's inverse: the output pair's parts are copied apart
            # (a channel slice is not dense) while the pair is alive, before any input's or parameter's
            # gradient (the walk counts those from the start of the unit)
            # (not an output nothing after the region reads, nor its correction: no part of that pair)
            unread_pair = sum(self.w.nbytes(v) + peak_bare.rebuilt_streams(self, [v], region)[0] for v in zeros)
            first = max(first, stream + wide - unread_pair - inputs_grads - params)
        if grown:  # as the first float64 stream is rebuilt (``rebuilt_streams``)
            first = max(first, stream + wide + rebuild - inputs_grads - params)
        views = peak_steps.joined_grads(self, region, reads)
        # (the walk counts that buffer whole from the start: until the update its view passes
        # through has run, backward's last, the joined gradient is the streams' own)
        surplus = views[1] - sum(self.w.nbytes(v) for v in views[0]) if views is not None else 0
        # forward: a step's outputs' worth, or an update after a flow made anew (beside the samples)
        fwd = peak_forward.forward_updates(self, steps, getattr(region, "couplings", {}) or {}, stream)
        fwd = max(stream + wide + 2 * act, fwd and fwd + extra - wide - sum(map(self.w.nbytes, outs)))
        # (or a stream value two couplings update, made anew: beside what the unit makes, which the walk holds)
        shared = peak_forward.shared_updates(self, steps, getattr(region, "couplings", {}) or {}, set(named))
        made = sum(self.w.nbytes(v) for v in dict.fromkeys(self.w.base(v) for v in makes) if v is not None)
        fwd = max(fwd, shared and shared + extra - wide - made - sum(map(self.w.nbytes, [*self.apart, *unread])))
        return Unit(str(getattr(region, "id", "")), reads, makes, set(outs) | set(side), extra,
                    params, True, fwd, first - surplus + grown,
                    any(self.needs_grad(v) for v in makes), work_spent=step[1] + held - surplus + grown,
                    work_after=peak_steps.reordered_grads(self, region), joined=views,
                    grads_read_on=grads_read_on(self, region, named),
                    zero_grads=tuple(zeros))

    def _moments(self, region: Any, out_set: AbstractSet[Value], copies: int,
                 after: peak_bare.After = peak_bare.NOTHING_AFTER, end: bool = False) -> tuple[list[Moment], int]:
        """Per computing step of ``region`` (``peak_moments.region_moments``)."""
        return peak_moments.region_moments(self, region, out_set, copies, after, end)

    def spliced(self, sid: str) -> tuple[UnitBuilder, Any, int] | None:
        """(a builder of its body, the body's one region, its copies) for a Group or Repeat step
        whose body is one invertible region (memoised per body); None for any other step."""
        view = self.w.views.get(sid)
        name = view.params.get("group") if view is not None and view.type in ("Group", "Repeat") else None
        if not isinstance(name, str) or name in self.active:
            return None
        if name not in self._bodies:
            self._bodies[name] = self._body_builder(name)
        found = self._bodies[name]
        if found is None:
            return None
        times = int(view.params.get("times", 1) or 1) if view.type == "Repeat" else 1  # type: ignore[union-attr]
        return found[0], found[1], max(1, times)

    def sub_builder(self, name: str, grads: Sequence[bool] | None = None,
                    spliced: bool = False) -> UnitBuilder | None:
        """A builder over the project's group body ``name`` whose inputs (in port order) need
        ``grads`` (all of them: None); ``spliced``: as a region runs it, its steps among the
        region's. None where the body does not check, or is one this builder is inside."""
        from .estimate_walk import _Walker

        graph, report = self.w.bodies.graph.groups.get(name), self.w.bodies.reports.get(name)
        if name in self.active or graph is None or report is None or any(not i.ok for i in report.nodes.values()):
            return None
        walker = _Walker(graph, report, self.w.batch, self.elem, self.w.bodies)
        if spliced:
            walker.region_of = {nid: "spliced" for nid in report.nodes}
            walker.regions_changed()
        ports = group_ports(graph, "GroupInput", "in")
        needed = dict(zip(ports, grads)) if grads is not None else dict.fromkeys(ports, True)
        return UnitBuilder(walker, list(report.order), self.stream_bytes, self.device,
                           active=self.active | {name}, inputs_grad=needed)

    def _body_builder(self, name: str) -> tuple[UnitBuilder, Any] | None:
        from .estimate_walk import _Walker

        found = self.w.bodies.regions(name)
        if found is None or len(found[0]) != 1:
            return None
        (body_region,), analysis = found
        walker = _Walker(analysis.graph, analysis.report, self.w.batch, self.elem, self.w.bodies)
        walker.region_of = {nid: "spliced" for nid in analysis.report.nodes}  # as the region runs it
        walker.regions_changed()
        # its input is a stream of the region: the runtime makes a gradient for every stream that
        # is not a region input itself (random network 56's spliced F made none for its x2: 2 % under)
        ports = group_ports(analysis.graph, "GroupInput", "in")
        sub = UnitBuilder(walker, list(analysis.report.order), self.stream_bytes, self.device,
                          active=self.active | {name}, inputs_grad=dict.fromkeys(ports, True))
        return sub, body_region


