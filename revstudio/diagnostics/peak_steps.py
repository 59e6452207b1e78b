"""A region's steps in its backward, as the runtime runs them (``peak_units.UnitBuilder.region``).

The runtime runs an AdditiveCoupling node in a region as two steps, G's then F's, each
rebuilding its own body's graph; an AffineCoupling as one step that rebuilds its net's graph,
then x2 in the stream's wide arithmetic, then runs its net's backward; a wired coupling's F
as its layers (:func:`wired_walk`). Each is a ``Moment``: (its parameter bytes, its runtime
steps, the most its backward holds while its parameters' gradients exist, the most before they
do, the stream value an additive update passes on, what more it holds beside a storage its
halves are views of: :func:`_viewed_y2`). Also here: what the region's streams are
(channels_last on the CPU, whose convolutions' weight gradients autograd copies; which carry
no correction after a flow layer), and a Group's or Repeat's body spliced in. Torch-free.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any

from ..core.graph import PortRef
from .estimate_walk import _prod, _values_of
from .peak import Value, simulate
from .peak_bare import After, Facts, cast_flow, first_after, halves_viewed
from .peak_forward import halves_anew
from .save_rules import clamped, coupling_split
from .stream_updates import step_updates, update_break, update_temporaries

# one computing step of a region's backward (``UnitBuilder._moments``)
Moment = tuple[int, int, int, int, int, int]

# the rounding-error samples a region keeps per rebuilt input (runtime_streams.sample: 256 values,
# float64 for a wide stream)
SAMPLES = 256
# the most one sample costs (a large input: 256 float64 values); the budget prices cuts with it
SAMPLE_BYTES = SAMPLES * 8


def sample_bytes(walker: Any, inputs: Iterable[Any], side: Iterable[Any],
                 head: AbstractSet[str] = frozenset()) -> int:
    """Bytes of the float64 samples a region keeps of the ``inputs`` it rebuilds, for their
    inversion error (``runtime_streams.sample``: up to SAMPLES values each). Side inputs are not
    rebuilt; the caller's own tensors (an Input's) are compared with themselves instead
    (runtime: ``refs``), no copy, unless they reach the rest of a region from the steps a memory
    budget keeps (``head``)."""
    skip = set(side)
    return sum(min(SAMPLES, walker.nbytes(v) // walker.elem) * 8 for v in inputs
               if v is not None and v not in skip and (walker.base(v) is not None or v[0] in head))


def coupling_moments(b: Any, sid: str, view: Any, largest: int, copies: int,
                     facts: Facts) -> list[Moment] | None:
    """The steps of coupling node ``sid`` (``view``) of builder ``b``'s graph; None for another
    step, or a coupling whose bodies are not walked (priced whole by ``_moments``). ``largest``:
    its output's bytes, ``copies``: those of the held outputs' copies; ``facts``: what the
    analysis of its region knows of it (``peak_bare.Facts``)."""
    if view.type == "AdditiveCoupling":
        return _halves(b, sid, view, largest, copies, facts)
    if view.type == "AffineCoupling":
        return _affine(b, sid, view, largest, copies, facts)
    return None


def kept_copies(b: Any, region: Any, sid: str) -> tuple[int, int]:
    """(how many of its copies a budget's head keeps, how many it has) of the Repeat step ``sid``
    of a region's rest (``estimate_units._tail``): the rest runs the others."""
    kept = (getattr(region, "kept_copies", None) or {}).get(sid, 0)
    view = b.w.views.get(sid)
    return kept, int(view.params.get("times", 1) or 1) if view is not None and view.type == "Repeat" else 1


def kept_params(b: Any, region: Any) -> int:
    """Parameter bytes of the copies a budget's head keeps of the Repeat a region's rest starts
    with: their gradients appear in the head's backward, not the rest's."""
    total = 0
    for sid in getattr(region, "kept_copies", None) or {}:
        kept, times = kept_copies(b, region, sid)
        info = b.w.report.nodes.get(sid)
        total += int(info.parameters) * b.elem * kept // times if info is not None else 0
    return total


def spliced_moments(b: Any, sid: str, inner: tuple[Any, Any, int], out_set: AbstractSet[Any], copies: int,
                    after: After, anew: bool = False) -> tuple[list[Moment], int]:
    """The steps of Group or Repeat ``sid`` whose body is one invertible region, spliced into
    ``b``'s region, every copy's: (their moments, the largest output of one runtime step). The
    last copy is followed by ``after`` (what follows the Group in the region: ``peak_bare.After``),
    the others by the next copy's first steps; ``out_set``: the region's outputs; ``anew``: the
    last copy's output is rebuilt into memory the runtime does not own (``peak_bare.unowned_rebuild``)."""
    sub, body_region, times = inner
    # the body's outputs are the region's where the group's are (the last copy's)
    ends = {v for v in _values_of(sub.w, getattr(body_region, "outputs", ())) if v is not None} \
        if any(v in out_set for v in b.makes(sid)) else set()
    sub.channels_last, sub.kept_wide = b.channels_last, b.kept_wide  # (its body runs in the region's streams)
    last, largest = sub._moments(body_region, ends, copies, after, anew)
    others = last
    if times > 1:
        first = first_after(sub, getattr(body_region, "steps", ()), after)
        if first != after:
            others, _ = sub._moments(body_region, ends, copies, first)
    b.breaks |= sub.breaks
    return others * (times - 1) + last, largest


def _halves(b: Any, sid: str, view: Any, largest: int, copies: int, facts: Facts) -> list[Moment] | None:
    """An AdditiveCoupling node's F and G as the two runtime steps it runs as, each rebuilding
    its own body's graph (priced as one step of two equal parts, a node whose G keeps three
    tensors and F one was 8.9 % above the measured peak), its backward walked alone, layer by
    layer (:func:`_net_walk`); None where it has no F and G bodies. ``facts.bare``: its output comes
    back with no correction (:func:`bare_streams`), and each half's rebuild gives the half it
    rebuilds a correction of its own (as :func:`bare_wired`'s blocks); ``facts.flow_next``: a flow layer
    follows it, whose backward hands it its output's gradient as one new tensor, and G's backward
    sums y1's into a new one beside it before F's update (as ``peak_bare.flow_joined``'s wired
    blocks: random network 665's node before an ActNorm was 1.1 % under at batch 1 under a
    budget whose rest starts with it)."""
    names = [view.params.get("f"), view.params.get("g")]
    bodies = [view.bodies.get("f"), view.bodies.get("g")]
    updates = step_updates(b.w, sid, None)
    if not all(isinstance(n, str) and n for n in names) or None in bodies or len(updates) != 2:
        return None
    out: list[Moment] = []
    # (the update itself grows by the correction only at one sample: from two the halves are
    # copies, and a first update of a copy with no correction is TwoSum alone, whose new pair
    # takes the copy's place)
    viewed = halves_viewed(b, b.w.batch, view.inputs.get("in") or ())
    anew = halves_anew(b, [b.w.batch * e * b.elem for e, _ in updates], [update_temporaries(
        b.w.batch, e, b.elem, b.stream_bytes, f, b.device) for e, f in updates]) if facts.anew else [0, 0]
    if facts.anew_bare:  # (the correction of the region's outputs is not there: ``peak_unowned.plugin_rebuilt``)
        anew = [more - b.kept_wide for more in anew]
    for name, body, (elements, fresh), more in zip(names, bodies, updates, anew):
        report = b.w.bodies.reports.get(name)
        own = sum(int(i.parameters) for i in report.nodes.values()) * b.elem if report is not None else 0
        # (G reads y1, a stream the region updates in place: no tensor of its own)
        keep = body.internal_bytes + sum(body.output_bytes[p] for p in body.outputs)
        value = b.w.batch * elements * b.elem  # the half it updates
        temps = update_temporaries(b.w.batch, elements, b.elem, b.stream_bytes, fresh, b.device)
        found = update_break(elements, b.elem, b.stream_bytes, b.device)
        if found is not None:
            b.breaks.add(found)
        # before its backward: its graph and its output, with the update's temporaries where
        # the update takes any (a GPU's fused one takes none: the moment stands without them);
        # an output its graph keeps (an F ending in a ReLU) is in the graph already
        before = keep + (0 if body_output_kept(b, name) else value) + temps + copies + more
        walked = _net_walk(b, name, shared=True)
        # its backward while its weights' gradients exist, walked layer by layer (its graph goes
        # as they appear), net of its output, which the update has consumed, and that output's
        # gradient, the stream's (the region counts it), and of its weights' gradients (the
        # region adds them all); else its graph and two outputs' worth at once. Priced at once,
        # random network 21 was 4.3 % over under a budget and 28 6.7 % at batch 1.
        with_grads = keep + largest if walked is None else walked[1] - 2 * value - own
        if walked is not None:  # its rebuild as it runs forward: a layer's work beside its graph
            before = max(before, walked[3] + copies)  # (a GRU's projections and stacks, as a wired F's)
        grown = value if facts.bare else 0
        if facts.flow_next and not out:  # (F: backward runs it second)
            before += largest - value
        out.append((own, 1, with_grads + copies + grown, before + (grown if viewed else 0), value, 0))
    return out


def _affine(b: Any, sid: str, view: Any, largest: int, copies: int, facts: Facts) -> list[Moment] | None:
    """An AffineCoupling's step (``runtime_affine.Affine.backward``): its net's graph rebuilt
    (walked alone: :func:`_net_walk`) with s and the clamp's tanh, then x2 = (y2 - t) /
    exp(s) in the stream's wide arithmetic (a pair's: five float64 and one float32 x2 at
    once), then the net's backward beside s and the gradients of x2 and s. Both halves'
    gradients are views of the output's while it is among the first steps backward runs.
    Measured, torch 2.13 CPU; None where its net is not walked."""
    net = view.params.get("net")
    walked = _net_walk(b, net) if isinstance(net, str) and net else None
    shape = view.inputs.get("in")
    if walked is None or not shape:
        return None
    kept, peak, out = walked[:3]
    split = coupling_split(view.params, shape)
    half = view.batch * split[1] * _prod(shape[1:]) * b.elem  # x2
    log_scale = half if clamped(view.params) else 0  # s = clamp * tanh(. / clamp): a tensor of its own
    wide = half * b.stream_bytes // b.elem  # x2 in the stream's arithmetic
    rebuild = 5 * wide + half if b.stream_bytes > b.elem else 3 * wide
    own = int(b.w.report.nodes[sid].parameters) * b.elem
    # once the net's backward is done, x1's gradient from it is summed into the one x1 has; where
    # that is a gradient handed on as it came (``facts.x1_anew``), into a new buffer, beside the net's
    # output (s and t are still held) and every weight's gradient: where the weights outweigh
    # the net's activations that moment is the step's (random network 428 at batch 1, 4x4
    # positions, the region's last step, under a budget, was 1.6 % under; 499 and 552, before a
    # wired block, which sums into it first, are not)
    x1 = view.batch * split[0] * _prod(shape[1:]) * b.elem
    summed = out + 2 * x1 + own if facts.x1_anew else 0
    # before a flow layer, or a Squeeze before one: its output, rebuilt by the flow's inverse
    # (and rearranged), has no correction of its own yet (zeros that take no memory), where the
    # walk of the region counts one; and the flow's backward, or the Squeeze's, hands it its
    # output's gradient as a new tensor, beside the net's backward (no more than the region
    # keeps: none where a flow layer makes its outputs too). Random network 494, an
    # AffineCoupling before a Squeeze and an ActNorm, was 2.7 % under at batch 1 without the
    # Squeeze's (cuts 3-5, held out)
    bare = min(largest * (b.stream_bytes - b.elem) // b.elem if facts.bare else facts.part_bare, b.kept_wide)
    handed = largest if facts.bare else 0
    if facts.bare and not halves_viewed(b, view.batch, shape):
        # its halves copies, the flow's rebuilt output is gone once split: x1 alone (no
        # correction) beside the rebuilt x2 pair, one half less than at one sample, where x1's
        # view keeps it (random network 51 at batch 2 was 3.2 % over; 494 0.4 %)
        handed -= half
    # the dead y2 part of its output's storage, beside its own net's backward and the streams of
    # the steps backward runs next: hi only where the halves' corrections are their own; for an
    # output a flow layer rebuilt bare, not beside its own (its missing correction in its place)
    # and only for an additive step before it, which makes its x1 a correction again (random
    # network 311's coupling node before an AffineCoupling after a Squeeze, 8,224 B under at
    # batch 1; an AffineCoupling before it passes x1 on still bare: network 94)
    if facts.bare:
        dead = _viewed_y2(b, view, shape, half) if facts.dead_before else 0
    elif facts.x1_bare:  # the part in hi takes the place of x1's missing correction, which the region counts
        dead = 0
    else:
        dead = _viewed_y2(b, view, shape, half if facts.split_lo else wide)
    # (the net's walk counts its parameters' gradients as they appear; the region adds them all)
    return [(own, 1, max(peak, summed) - own + log_scale + 2 * half + copies - bare + handed - (dead if facts.bare else 0),
             kept + 2 * log_scale + rebuild + copies - bare, largest, dead)]


def _viewed_y2(b: Any, view: Any, shape: Sequence[int], wide: int) -> int:
    """What more an AffineCoupling holds during its net's backward: where its output's halves
    are dense slices (channels first, one sample), they are views of one storage, and y2's part
    of it lives on beside the rebuilt x2 pair (x1's view keeps the whole storage); with copies
    apart, y2's parts go as x2 is rebuilt. That holds wherever backward reaches the step (the
    region's walk also keeps that part for the steps it runs next: ``UnitBuilder.region``), but
    not after a flow layer with weights, whose inverse hands it a new tensor with no correction
    (the caller passes 0). glow_flow at batch 1, under a budget that keeps the steps before
    coupling1, was 4.6 % under without it; random networks 0, 2 and 25 at batch 1 1.5-5.5 %,
    where the step came later."""
    return wide if halves_viewed(b, view.batch, shape) else 0


def _net_walk(b: Any, name: str, shared: bool = False) -> tuple[int, int, int, int] | None:
    """A coupling's body ``name`` (an AffineCoupling's net, an AdditiveCoupling node's F or G)
    walked alone with its output's gradient seeded: (what
    its forward keeps, its output included; the most its backward holds, its parameters'
    gradients included, as they appear; its output's bytes; the most its forward holds, its
    output included). ``shared``: that gradient outlives the walk (an AdditiveCoupling's F or
    G: its output's gradient is the stream's). None where its body does not check."""
    key = (name, shared)
    if key not in b._nets:
        b._nets[key] = None
        sub = b.sub_builder(name)  # (x1 needs its gradient)
        if sub is not None:
            w, infos = sub.w, sub.w.report.nodes
            outs = [(src.node, src.port) for n in sub.order if infos[n].type == "GroupOutput"
                    for src in (w.source.get((n, "in")),) if src is not None]
            walk = simulate([sub.unit(n, *sub.saved_by(n)) for n in sub.order], w.nbytes, w.base,
                            sub.needs_grad, outs, seeds=[(v, shared) for v in outs])
            b._nets[key] = (walk.kept, walk.peak, sum(w.nbytes(v) for v in outs), walk.forward)
    return b._nets[key]


def body_output_kept(b: Any, name: str) -> bool:
    """Whether coupling body ``name``'s output is a tensor its own graph keeps (an F ending in a
    ReLU, tanh or sigmoid, which keep their result), as :func:`output_kept` asks of a wired F. An
    AdditiveCoupling node whose F ends in a ReLU was 6 to 8 % over in reversible mode at batches
    1 to 8 with that output counted beside the graph that holds it."""
    key = (name, "kept")
    if key not in b._nets:
        sub = b.sub_builder(name)
        found = False
        if sub is not None:
            w, infos = sub.w, sub.w.report.nodes
            outs = [w.base((src.node, src.port)) for n in sub.order if infos[n].type == "GroupOutput"
                    for src in (w.source.get((n, "in")),) if src is not None]
            kept = {v for n in sub.order for v in w.saved_values(n, fuse=False)}
            found = bool(outs) and all(v is not None and v in kept for v in outs)
        b._nets[key] = found
    return bool(b._nets[key])


def wired_walk(b: Any, sid: str, body: Sequence[str]) -> tuple[int, int] | None:
    """A wired coupling's F (``body``: its layers in the order the runtime runs them, the
    coupling's; ``sid``: its merge) rebuilt and run backward alone, layer by layer: (the most it
    holds, net of its output and that output's gradient (the stream's, counted by the region)
    and of its parameters' gradients, which appear layer after layer (the region adds them all
    back); the most its rebuild holds as it runs forward, its output included). At a small batch
    the weights' gradients are most of the step, and the moment F's graph and two gradients are
    alive comes before its first layer's weights have theirs: digits_revnet at batch 1 was 4.3 %
    over with F priced as its graph, two outputs' worth and all its weights' gradients at once.
    None for an F of no layers."""
    position = b.position
    layers = [n for n in body if n in position]
    if not layers:
        return None
    inside = set(layers)
    outs = [v for v in b.reads(sid) if v[0] in inside]
    ins = [v for n in layers for v in b.reads(n) if v[0] not in inside]
    walk = simulate([b.unit(n, *b.saved_by(n)) for n in layers], b.w.nbytes, b.w.base, b.needs_grad, outs,
                    outside=ins, seeds=[(v, True) for v in outs])
    own = sum(int(b.w.report.nodes[n].parameters) for n in layers) * b.elem
    return walk.peak - 2 * sum(b.w.nbytes(v) for v in outs) - own, walk.forward


def output_kept(b: Any, sid: str, body: Sequence[str]) -> bool:
    """Whether a wired coupling's F (``body``; ``sid``: its merge) ends in a tensor its own graph
    keeps (an activation that keeps its result, through views): the update then reads what the
    rebuild holds anyway, not an output of its own (random networks 31, 36, 97 and 127, whose F is
    a Linear, a tanh and a Reshape, were 6.6 to 7.8 % over in reversible mode at batch 32)."""
    inside = {n for n in body if n in b.position}
    kept = {v for n in inside for v in b.w.saved_values(n, fuse=False)}
    outs = [b.w.base(v) for v in b.reads(sid) if v[0] in inside]
    return bool(outs) and all(v in kept for v in outs)



# region steps the runtime runs as couplings or rearranging slots; any other is a general
# invertible layer, whose outputs are new tensors (``runtime.layout_of``)
_STREAM_STEPS = frozenset({"Merge", "Split", "Concat", "AdditiveCoupling", "AffineCoupling", "Group", "Repeat"})


def gathered(b: Any, sid: str) -> int:
    """What the backward of a region whose first step is ``sid`` holds last, beside the streams
    and every weight's gradient: where that step splits a value in two (a Split, an
    AdditiveCoupling node, a spliced body's first step), its backward gathers the rebuilt halves
    into one stream beside them, then joins their gradients into the value's beside theirs: the
    value's bytes (random sequence models whose F and G are a Linear over the whole sequence,
    their weights' gradients most of the step, were up to 5.4 % under); else 0."""
    view = b.w.views.get(sid)
    if view is not None and view.type in ("Split", "AdditiveCoupling"):
        return sum(b.w.nbytes(v) for v in b.reads(sid))
    inner = b.spliced(sid)
    steps = list(getattr(inner[1], "steps", ())) if inner is not None else []
    return gathered(inner[0], steps[0]) if inner is not None and steps else 0


def spent_after(b: Any, region: Any) -> int:
    """After how many of its runtime steps ``region``'s backward releases its outputs'
    gradients (``UnitBuilder.region``): once no stream's gradient is a view of them. An
    additive coupling passes the gradient of the stream it updates through as a view, so two;
    one where the step backward runs first (a Concat, Split or Reshape passed over: views) is
    an AffineCoupling or an ActNorm or InvConv1x1, whose backward makes both halves'
    gradients, or the whole one, new (measured; a Reshape ending a region hands the coupling
    before it the pool's gradient as a view). Random network 106 (an AffineCoupling last) was
    5.0 % over at batch 2 with the outputs' gradients alive through the InvConv1x1 before it."""
    couplings = getattr(region, "couplings", {}) or {}
    for sid in reversed(list(getattr(region, "steps", ()))):
        view = b.w.views.get(sid)
        if view is None or view.type in VIEWING:
            continue
        return 1 if sid not in couplings and (view.type == "AffineCoupling" or cast_flow(view.type)) else 2
    return 2


# region steps whose backward hands on views of their outputs' gradients
VIEWING = frozenset({"Split", "Concat", "Reshape", "Flatten"})


def joined_grads(b: Any, region: Any, reads: Sequence[Value]) -> tuple[frozenset[Value], int] | None:
    """The values ``region`` reads whose gradients it hands on as views of one buffer, and that
    buffer's bytes (``Unit.joined``): where a Concat is followed by a general invertible layer,
    whose backward makes the joined gradient, the Concat's backward slices it apart; a value
    the Concat joins (the region's first step), or one an additive coupling right before it
    updates in place (its gradient passes through the update), gets a view of it, and a
    coupling before the region that adds a second gradient to one adds into a new buffer.
    (A coupling after the Concat takes the parts apart in the streams, each with a gradient of
    its own.) Random network 72's cuts 6 at batch 2 (the rest starts with a wired block's
    Concat, then an ActNorm) and 5 at batch 1 (with its G) were 2.2 % and 1.4 % under with a
    buffer each, summed in place."""
    steps = list(getattr(region, "steps", ()))
    at = 1 if steps and steps[0] in (getattr(region, "couplings", {}) or {}) else 0
    views = [b.w.views.get(s) for s in steps[at:at + 2]]
    if len(views) < 2 or None in views or views[0].type != "Concat" or views[1].type in _STREAM_STEPS:
        return None
    joined = b.w.nbytes((steps[at], "out"))
    if at == 0:
        return (frozenset(reads), joined) if len(reads) > 1 else None
    try:
        passing = PortRef.parse(region.couplings[steps[0]].a)
    except (ValueError, AttributeError):
        return None
    value = (passing.node, passing.port)
    return (frozenset({value}), joined) if value in reads else None


def reordered_grads(b: Any, region: Any) -> int:
    """Bytes of the largest copy autograd makes of a weight's gradient after ``region``'s
    backward returns its parameters' gradients: in channels_last streams a 2-D convolution's
    weight gradient comes in channels_last too (1x1 kernels aside: their strides are the same in
    both layouts), and autograd copies each into its parameter's layout, one at a time, while
    all of them exist. A 32-channel chain at 4x4 and batch 1 peaks there (0.8 % above the rest)."""
    if not b.channels_last:
        return 0
    best = 0
    for info, params in _layers(b, region):
        if _conv2d(info) and int(params.get("kernel_size", 1)) > 1:
            bias = int(params.get("out_channels", 0)) if params.get("bias", True) else 0
            best = max(best, (int(info.parameters) - bias) * b.elem)
    return best


def _conv2d(info: Any) -> bool:
    return bool(info.type == "Conv" and any(len(s) == 3 for s in info.inputs.values()))


def _stream_steps_only(b: Any, region: Any) -> bool:
    for sid in getattr(region, "steps", ()):
        view = b.w.views.get(sid)
        if view is not None and view.type not in _STREAM_STEPS:
            return False
        inner = b.spliced(sid) if view is not None and view.type in ("Group", "Repeat") else None
        if inner is not None and not _stream_steps_only(inner[0], inner[1]):
            return False
    return True


def _layers(b: Any, region: Any) -> Iterator[tuple[Any, Mapping[str, Any]]]:
    """(check info, params) of every node of ``region`` and of the group bodies its nodes run
    (a Group's or Repeat's, a coupling node's F, G or net), nested ones included."""
    infos, bodies = b.w.report.nodes, b.w.bodies
    todo: list[str] = []
    for n in getattr(region, "nodes", ()):
        view = b.w.views.get(n)
        if n in infos and view is not None:
            yield infos[n], view.params
            todo += [v for k, v in view.params.items() if k in _BODY_PARAMS and isinstance(v, str)]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        graph, report = bodies.graph.groups.get(name), bodies.reports.get(name)
        if name in seen or graph is None or report is None:
            continue
        seen.add(name)
        for node in graph:
            info = report.nodes.get(node.id)
            if info is not None:
                yield info, node.params
                todo += [v for k, v in node.params.items() if k in _BODY_PARAMS and isinstance(v, str)]


_BODY_PARAMS = frozenset({"group", "f", "g", "net"})


def one_gradient_bytes(b: Any, region: Any, outs: Sequence[Value]) -> int:
    """Of the region outputs ``outs``, the bytes counted twice where their gradients are one
    buffer: outputs an add Merge alone reads together outside the region, which hands each operand
    the same gradient (a skip from a Glow step's ActNorm to the coupling after it makes that
    ActNorm's output a second output of the region: glow_flow with one was 6 % under at batch 2,
    the two counted as two streams its last step passes on)."""
    views, inside = b.w.views, set(getattr(region, "nodes", ()))
    groups: dict[str, list[Value]] = {}
    for v in outs:
        readers = [r for r in b.readers.get(v, ()) if r not in inside]
        if len(readers) == 1:
            (r,) = readers
            view = views.get(r)
            if view is not None and view.type == "Merge" and str(view.params.get("mode", "add")) == "add":
                groups.setdefault(r, []).append(v)
    return sum(sum(b.w.nbytes(v) for v in vs) - max(b.w.nbytes(v) for v in vs)
               for vs in groups.values() if len(vs) > 1)


def summed_into_shared(b: Any, region: Any, outs: Sequence[Value]) -> int:
    """Of the region outputs ``outs`` an add Merge alone reads together outside the region (one
    gradient tensor under two slots: :func:`one_gradient_bytes`), the bytes of those a step of the
    region makes from another of them: its backward passes its gradient into that stream's slot,
    which holds the same tensor already, so the sum is a new buffer, no view of the outputs', up to
    their release (random skip network 353's skip reads the wired block's F sum and the half it
    updates: 3-4 % under in reversible mode). Not a coupling node's (skip network 392's skip reads
    two AdditiveCoupling nodes' outputs, the second's input: 4-6 % over counted so)."""
    views, inside = b.w.views, set(getattr(region, "nodes", ()))
    groups: dict[str, list[Value]] = {}
    for v in outs:
        readers = [r for r in b.readers.get(v, ()) if r not in inside]
        if len(readers) == 1:
            view = views.get(readers[0])
            if view is not None and view.type == "Merge" and str(view.params.get("mode", "add")) == "add":
                groups.setdefault(readers[0], []).append(v)
    return sum(b.w.nbytes(v) for vs in groups.values() for v in vs if v[0] in inside and v[0] in views
               and views[v[0]].type == "Merge" and any(u != v and u in b.reads(v[0]) for u in vs))


def runtime_parts(b: Any, nid: str) -> int:
    """Runtime steps a region step runs as, where it is not spliced (``UnitBuilder.spliced``): a
    Repeat's copies, an AdditiveCoupling's F and G."""
    view = b.w.views.get(nid)
    if view is None:
        return 1
    parts = int(view.params.get("times", 1) or 1) if view.type == "Repeat" else 1
    groups = b.w.bodies.graph.groups  # the project's (a body's own graph has none)
    name = view.params.get("group") if view.type in ("Repeat", "Group") else None
    body = groups.get(name) if isinstance(name, str) else None
    kinds = [n.type for n in body] if body is not None else [view.type]
    if "AdditiveCoupling" in kinds:
        parts *= 2  # F and G are separate steps
    return max(1, parts)
