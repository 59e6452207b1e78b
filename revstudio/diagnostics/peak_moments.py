"""A reversible region's backward, step by step, for the peak walk (``peak_units``), torch-free:
per computing step what its rerun holds with and before its parameters' gradients, the value an
additive update passes on, and the largest output of one runtime step."""
from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import replace
from typing import Any

from revstudio.compiler.regions import layout_only

from . import peak_bare, peak_forward, peak_invconv, peak_steps
from .peak import Value
from .peak_steps import Moment, coupling_moments, wired_walk
from .stream_updates import flow_rerun_bytes, step_updates, update_break, update_temporaries

# The transients of a flow layer's backward beside the gradients of its output and input, in
# outputs' worth (measured, torch 2.13 CPU): ActNorm's g * (x + b) for its scale's gradient;
# InvConv1x1 none (the contiguous copy of its output's gradient takes that gradient's place); an
# AffineCoupling priced whole (its net not walked as layers: ``peak_couplings``) its scale's and
# shift's gradients
FLOW_WORK = {"ActNorm": 1, "InvConv1x1": 0, "AffineCoupling": 2}


def region_moments(b: Any, region: Any, out_set: AbstractSet[Value], copies: int,
                   after: peak_bare.After = peak_bare.NOTHING_AFTER, end: bool = False) -> tuple[list[Moment], int]:
    """Per computing step of ``region``, in forward order: (its parameter bytes, its runtime
    steps, the most its backward holds while its parameters' gradients exist, the most
    before they do, the stream value an additive update passes on, what more it holds beside
    the storage its halves are views of (``peak_steps._viewed_y2``); a Squeeze, whose backward joins the streams' gradient
    into a new tensor, is (0, 0, 0, 0, its bytes, 0)); and the
    largest output of one runtime step. A Group or Repeat whose body is one invertible region runs as its
    body's steps spliced into the region, every copy's (``spliced``); ``out_set``: the
    region's outputs (kept anyway), ``copies``: the bytes of the held outputs' copies;
    ``after``: what follows the region's last step (``peak_bare.After``: a spliced body's
    next copy's first); ``end``: a spliced body's last copy, rebuilt unowned (``peak_bare.analyse``)."""
    couplings = getattr(region, "couplings", {}) or {}
    infos = b.w.report.nodes
    moments: list[Moment] = []
    act = 0
    steps = list(getattr(region, "steps", ()))
    owners: list[str] = []  # the step each moment is of
    b.moment_steps = owners
    known = b.bare_known = peak_bare.analyse(b, steps, couplings, after, end)  # (``peak_outputs.made_real``)
    bare_wired, flow_first = known.bare_wired, known.flow_first
    prev = ""
    wide, mids = b.kept_wide, b.mid_wide
    for place, sid in enumerate(steps):
        # (the corrections the region keeps less those of its outputs a step up to this one
        # takes as its stream, alive through this step's backward: ``peak_outputs.mid_corrections``)
        b.kept_wide = max(0, wide - sum(n for at, n in mids if place >= at))
        owners += [prev] * (len(moments) - len(owners))
        prev = sid
        view = b.w.views.get(sid)
        if view is not None and view.type == "Squeeze":  # its backward joins the streams' gradient anew
            moments.append((0, 0, 0, 0, b.largest_of([sid]), 0))
            continue
        if view is None or layout_only(view.type):  # slicing and concatenating streams is cheap
            continue
        inner = b.spliced(sid) if sid not in couplings else None
        if inner is not None:
            spliced, largest = peak_steps.spliced_moments(b, sid, inner, out_set, copies,
                                                             known.following.get(sid, peak_bare.NOTHING_AFTER),
                                                             sid in known.anew)
            kept, times = peak_steps.kept_copies(b, region, sid)  # (the head runs those)
            moments += spliced[len(spliced) // times * kept:]
            act = max(act, largest)
            continue
        body = [sid, *getattr(couplings.get(sid), "body", ())]
        ins = b._reads_from_outside(body)
        parts = peak_steps.runtime_parts(b, sid)  # a Repeat or coupling node runs as several runtime steps
        largest = b.largest_of(body)
        act = max(act, largest // parts)
        own_steps = coupling_moments(b, sid, view, largest, copies, _joined_after(view, known, sid)) \
            if sid not in couplings else None
        if own_steps is not None:  # a coupling node's: F's and G's, an AffineCoupling's
            moments += own_steps
            continue
        recompute = b.recompute_bytes(body, ins | out_set, sid)  # (rerun on what its inverse rebuilt)
        # a wired coupling's F walked layer by layer; another step's graph and the gradients of
        # its backward, two outputs' worth (ActNorm's and InvConv1x1's: their output's and
        # their backward's own work, ``FLOW_WORK``)
        work = 1 + FLOW_WORK[view.type] if view.type in ("ActNorm", "InvConv1x1") else 2
        walked = wired_walk(b, sid, couplings[sid].body) if sid in couplings else None
        with_grads = (recompute + work * largest) // parts if walked is None else walked[0]
        with_grads += flow_rerun_bytes(view.type, largest, b.elem, b.stream_bytes) // parts
        if view.type == "InvConv1x1" and view.inputs.get("in"):
            with_grads += peak_invconv.rerun_backward(view, b.elem, known.nexts(sid) is not None)
        before = 0
        if view.type == "AffineCoupling":  # (its net not walked: ``_affine``)
            # rebuilt in the stream's wide arithmetic first: the inverse's temporaries and their
            # float64 copies beside F's graph (measured, torch 2.13 CPU: five float64 and three
            # float32 half-streams, about six outputs' worth, the copy of a held output among them)
            before = with_grads + 6 * b.largest_of([sid]) // parts
        with_grads += copies
        # before F's backward, an additive coupling rebuilds its input in place from F's
        # output while F's graph is alive: that output and the update's temporaries (fewer
        # where F's output is fresh: the update writes over it)
        passing, held_out = 0, walked is not None and peak_steps.output_kept(b, sid, couplings[sid].body)
        for elements, fresh in step_updates(b.w, sid, couplings.get(sid)):
            passing = max(passing, b.w.batch * elements * b.elem)
            if fresh and sid in bare_wired and peak_bare.halves_viewed(b, b.w.batch, view.inputs.get("in0") or ()):
                # its first update of a view with no correction yet makes it one of zeros and
                # updates in place with three temporaries, not over F's output with two
                # (random network 228 at batch 1: 1.1 % under)
                fresh = False
            temps = update_temporaries(b.w.batch, elements, b.elem, b.stream_bytes, fresh,
                                       b.device)
            found = update_break(elements, b.elem, b.stream_bytes, b.device)
            if found is not None:
                b.breaks.add(found)
            if temps:
                operand = 0 if held_out else b.w.batch * elements * b.elem  # (F's output)
                more = peak_forward.wired_anew(b, sid, known.anew, couplings, b.w.batch * elements * b.elem, temps)
                before = max(before, recompute // parts + operand + temps + copies + more)
        if walked is not None:
            # F's rebuild as it runs forward, before the update: a layer's work beside its
            # graph (a GRU's input projections and its outputs' stacks, which go before the
            # update's temporaries are made; a wired block with a lone GRU F was 2.6 % under
            # in reversible mode at batch 8)
            before = max(before, walked[1] + copies)
        if sid in bare_wired:  # the input its update rebuilds gets a correction of its own (the output had none)
            with_grads += passing
        if sid in flow_first and before:  # y1's gradient summed anew beside the flow's joined one
            before += b.largest_of([flow_first[sid]]) - passing
        own = sum(int(infos[n].parameters) for n in body if n in infos) * b.elem
        kept, times = peak_steps.kept_copies(b, region, sid)  # (copies, where parts are runtime steps)
        left = parts * (times - kept) // times
        moments.append((own * left // parts, left, with_grads, before, passing, 0))
    owners += [prev] * (len(moments) - len(owners))
    b.kept_wide = wide
    return moments, act


def _joined_after(view: Any, known: peak_bare.Analysis, sid: str) -> peak_bare.Facts:
    """What the analysis knows of coupling step ``sid``; an AdditiveCoupling followed by a layout
    step (a Reshape, Flatten or Permute of axes; not a Squeeze, a moment of its own) and then by
    another AdditiveCoupling gets its output's gradient as one joined tensor, as after a flow layer
    (``Facts.flow_next``): that coupling's Slice joins its halves' gradients (no Cat and Slice
    fused between them) and the layout step hands that on, so G's backward sums y1's into a new one beside the joined one, alive
    through F's update (Input, Conv, AdditiveCoupling, Reshape, AdditiveCoupling was 3.0 % under in
    reversible mode at batch 8, 4.7 % at 1; measured, torch 2.13 CPU). Not where the region ends
    after the layout step (the caller's gradient: priced already, 10 % over with it)."""
    facts = known.of(sid)
    nxt, far = known.following.get(sid, peak_bare.NOTHING_AFTER)
    if view.type == "AdditiveCoupling" == far and nxt != "Squeeze" and peak_bare.rearranging(nxt) \
            and not facts.flow_next:
        return replace(facts, flow_next=True)
    return facts


def first_flow_grads(b: Any, steps: Sequence[str], kept: int, moments: list[Any], spent_at: int) -> list[Any]:
    """A region's ``moments`` (``region_moments``) with its first step's held
    more where that step is an ActNorm or InvConv1x1: its rerun (``runtime_steps.Invertible
    .backward``, on its rebuilt input with grad, whether the region's inputs need a gradient or
    not) makes its input's gradient beside its output's, the streams' gradient. The walk counts
    one of the two there: the inputs' gradients from the start of the region's backward where
    they are needed, else the streams' (``held``); an additive step passes one on as the other,
    a flow layer does not. Less the residuals the region kept (``kept``: the wide part of its
    outputs), folded into the streams as backward starts and gone once the flow's inverse has
    made them bare. Only where the region has released its outputs' gradients by then
    (``spent_at``: after so many runtime steps; before, the walk counts them as the outputs'
    and the streams' are views of them: an ActNorm alone in a region was 14 % over counting
    both). ActNorm, AdditiveCoupling, ActNorm straight after an Input was 8.9 % under
    in reversible mode at batch 1, after a Conv with a wired block for the coupling 5.1 %."""
    first = next(iter(peak_bare.computing(b, steps)), None)
    if first is None or first[1] not in ("ActNorm", "InvConv1x1") or not moments \
            or sum(m[1] for m in moments[1:]) < spent_at:
        return moments
    more = max(0, b.largest_of([first[0]]) - kept)  # (the first step's moment: backward's last)
    own, parts, with_grads, *rest = moments[0]
    return [(own, parts, with_grads + more, *rest), *moments[1:]]
