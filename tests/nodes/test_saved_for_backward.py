"""What each type declares its backward keeps (``NodeSpec.saved_for_backward``) is what torch keeps.

The memory estimate counts a layer's kept tensors by its declaration, unless a measured rule of
its own (``diagnostics.save_rules.RULES``: a BiRNN's gates, a norm's statistics) says more. Here
every example of the other types, built-in and from installed plugins, runs forward under
``saved_tensors_hooks`` at two batches: the ports whose tensors autograd saved, and the bytes
per sample of the tensors it saved of the layer's own making, must be what the declaration says.
Tensors that do not grow with the batch (weights, a permutation's index) are left out, as the
declaration leaves them.
"""
from __future__ import annotations

import gc
from math import prod
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from catalog_cases import all_cases, case_id, make_groups  # noqa: E402
from catalog_kit import BOUNDARY, NodeKit  # noqa: E402

from revstudio.core.spec import NodeSpec, SavedTensors, registry  # noqa: E402
from revstudio.diagnostics.save_rules import RULES, NodeView, apply_rule  # noqa: E402

DECLARED = [c for c in all_cases() if c[0] not in RULES and c[0] not in BOUNDARY]


@pytest.fixture(autouse=True, scope="module")
def _heap_before_frozen() -> Any:
    """``_work`` collects cycles before it measures, two full collections a case. A full collection
    walks every object of the process: in the whole suite's process (torch, Qt, onnx and the
    modules of every test before) that was most of this file's 100 s of CPU. What the heap held
    before this module ran is moved out of the collector's view (``gc.freeze``) and given back
    after it, so a collection here walks what these tests made: the cycles a forward leaves are
    all among those, so the same ones go and the figures are the same."""
    gc.collect()
    gc.freeze()
    yield
    gc.unfreeze()


def _observed(type_id: str, params: dict[str, Any], shapes: list[tuple[int, ...]], batch: int,
              rerun: bool = False) -> tuple[set[frozenset[str]], int]:
    """(for each saved tensor of the caller's or the result, the ports it is; bytes of the saved
    tensors the layer made itself). ``rerun``: run forward, as a reversible region's backward
    reruns an invertible layer, on the inputs its ``inverse`` rebuilt from its outputs."""
    built = NodeKit(make_groups()).build(type_id, params, shapes)
    module = built.module
    module.train()
    weights = {t.untyped_storage().data_ptr() for t in [*module.parameters(), *module.buffers()]}
    xs = [torch.randn(batch, *s, requires_grad=True) * 1.0 for s in shapes]  # made by an op
    if rerun:
        with torch.no_grad():
            xs = [x.detach().requires_grad_(True) for x in module.inverse(*module(*xs))]
    saved: list[Any] = []

    def pack(t: Any) -> Any:
        saved.append(t)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        outs = list(module(*xs))
    ports: dict[int, set[str]] = {}
    for port, t in [*zip(built.in_ports, xs), *zip(built.out_ports, outs)]:
        ports.setdefault(t.untyped_storage().data_ptr(), set()).add(port)
    seen, own = set(), {}
    for t in saved:
        ptr = t.untyped_storage().data_ptr()
        if ptr in weights or ptr == 0:
            continue
        if ptr in ports:
            seen.add(frozenset(ports[ptr]))  # (in place, one tensor is both ports)
        else:
            own[ptr] = t.untyped_storage().nbytes()
    return seen, sum(own.values())


def _inverse_dense(type_id: str, params: dict[str, Any], shapes: list[tuple[int, ...]]) -> bool:
    """Whether an invertible layer's inverse hands back its inputs, at a batch of three, as dense
    buffers (contiguous, or channels-last) where it makes them anew: a reversible region updates
    only those in place. (A part of what it was given, a Concat's slice, is the region's own
    stream: its layout steps are priced apart.)"""
    module = NodeKit(make_groups()).build(type_id, params, shapes).module
    with torch.no_grad():
        ys = module(*[torch.randn(3, *s) for s in shapes])
        given = {y.untyped_storage().data_ptr() for y in ys}
        xs = module.inverse(*ys)
    return all(x.untyped_storage().data_ptr() in given or x.is_contiguous()
               or (x.dim() == 4 and x.is_contiguous(memory_format=torch.channels_last)) for x in xs)


def _unread(type_id: str, params: dict[str, Any], shapes: list[tuple[int, ...]], batch: int, port: str) -> int:
    """Bytes that go when the caller drops output ``port`` after forward, the rest kept."""
    from revstudio.diagnostics.memory_tracker import LiveTensorTracker

    built = NodeKit(make_groups()).build(type_id, params, shapes)
    built.module.train()
    xs = [torch.randn(batch, *s, requires_grad=True) for s in shapes]
    with LiveTensorTracker() as tracker:
        outs = dict(zip(built.out_ports, built.module(*xs)))
        before = tracker.live_bytes()
        del outs[port]
        return before - tracker.live_bytes()


def _work(type_id: str, params: dict[str, Any], shapes: list[tuple[int, ...]], batch: int) -> tuple[int, int]:
    """Bytes the forward holds at its peak beside what it hands on and keeps (its outputs and its
    own saved tensors), and the backward at its peak beside what it started with (what the layer
    keeps, its outputs' gradients) and the gradients it hands back, of its inputs and weights (a
    gradient that is a view of its output's is no new memory): negative where the layer frees
    more of those on the way than it makes.

    The backward runs as inside a graph: its outputs' gradients come from the loss's backward and
    go once the layer has used them (a caller holding them for the whole backward, as
    ``torch.autograd.backward(outs, grads)`` does, had a plugin's coupling's backward hold two
    inputs' worth it never holds in a graph: 16 % over in standard mode), and the inputs are made
    by an op whose backward is stopped as their gradients are complete (a leaf's gradient summed
    into ``.grad`` out of place is no part of the layer)."""
    from revstudio.diagnostics.memory_tracker import LiveTensorTracker

    module = NodeKit(make_groups()).build(type_id, params, shapes).module
    module.train()
    xs = [torch.randn(batch, *s, requires_grad=True) for s in shapes]
    with LiveTensorTracker() as tracker:
        outs = [o for o in module(*xs) if isinstance(o, torch.Tensor) and o.requires_grad]
        forward = tracker.peak_bytes - tracker.live_bytes()
    del outs
    gc.collect()
    gc.disable()  # (a cycle collected part way would free what the layer holds: a flaky figure)
    try:
        return forward, _backward(module, xs, LiveTensorTracker)
    finally:
        gc.enable()


def _backward(module: Any, xs: list[Any], tracker_class: Any) -> int:
    """``_work``'s backward figure."""
    from torch.multiprocessing.reductions import StorageWeakRef

    handed: list[Any] = []
    given: dict[int, Any] = {}  # the outputs' gradients' storages, by address, held weakly
    views: set[int] = set()  # handed gradients that are (views of) a given one still alive

    def complete(grads: tuple[Any, ...]) -> tuple[None]:  # an input's gradient: hand nothing further up
        handed.append(grads[0])
        if grads[0] is not None:
            ptr = grads[0].untyped_storage().data_ptr()
            if ptr in given and not given[ptr].expired():  # (a new one at a freed one's address is new)
                views.add(ptr)
        return (None,)

    with tracker_class() as tracker:
        made = [x * 1.0 for x in xs]
        outs = [o for o in module(*made) if isinstance(o, torch.Tensor) and o.requires_grad]
        weights = [torch.randn_like(o) for o in outs]  # (held: the loss's backward lets go of them, no part of the layer)
        losses = [(o * w).sum() for o, w in zip(outs, weights)]
        for o in outs:
            o.register_hook(lambda g: given.__setitem__(g.untyped_storage().data_ptr(),
                                                        StorageWeakRef(g.untyped_storage())))
        for x in made:
            x.grad_fn.register_prehook(complete)
        out_bytes = sum(o.nelement() * o.element_size() for o in outs)  # their gradients, the loss's backward makes
        del outs
        before = tracker.live_bytes()
        tracker.reset_peak()
        torch.autograd.backward(losses)
        peak = tracker.peak_bytes
    del weights
    new = {g.untyped_storage().data_ptr(): g.untyped_storage().nbytes()
           for g in [*handed, *(p.grad for p in module.parameters())] if g is not None}
    return peak - before - out_bytes - sum(n for ptr, n in new.items() if ptr not in views)


def _measured(type_id: str, raw: dict[str, Any], shapes: list[tuple[int, ...]]) -> str:
    """What the example measures, written as the declaration that says it (float32, per sample),
    for a failure's message: an author (of a plugin) pastes it instead of fixing one field a run."""
    built = NodeKit(make_groups()).build(type_id, raw, shapes)
    order = [*built.in_ports, *built.out_ports]
    (_, own2), (seen3, own3) = _observed(type_id, raw, shapes, 2), _observed(type_id, raw, shapes, 3)
    ports = tuple(p for p in order if any(min(s, key=order.index) == p for s in seen3))
    work = ((0, 0), (0, 0)) if raw.get("inplace") else (_work(type_id, raw, shapes, 2), _work(type_id, raw, shapes, 3))
    fields = [f"ports={ports!r}"]
    figures = {"": own3 - own2, "forward_": work[1][0] - work[0][0], "backward_": work[1][1] - work[0][1]}
    for prefix, n in figures.items():
        if n:  # (4-byte values at float32; what is not a whole number of them is 1-byte flags)
            fields.append(f"{prefix}values={n // 4}" if n % 4 == 0 else f"{prefix}flags={n}")
    if registry.get(type_id).invertible:  # what its rerun on its inverse's result keeps, where that differs
        rerun = _observed(type_id, raw, shapes, 3, True)[1] - _observed(type_id, raw, shapes, 2, True)[1]
        if rerun != own3 - own2:
            fields.append(f"rerun_values={rerun // 4}")
        if not _inverse_dense(type_id, raw, shapes):
            fields.append("inverse_dense=False")
    said = ", ".join(f"{k.rstrip('_') or 'kept'} {v}" for k, v in figures.items())
    return (f"measured on this example: SavedTensors({', '.join(fields)}) (bytes a sample at float32: {said}; "
            "values are the layer's dtype, flags 1 byte, indices 8: split them by what its tensors are, "
            "and write the counts in terms of the shapes, as prod(ins[0]))")


def _check_declaration(type_id: str, raw: dict[str, Any], shapes: list[tuple[int, ...]]) -> None:
    spec = registry.get(type_id)
    ctx, outputs = NodeKit(make_groups()).infer(type_id, raw, shapes)
    out_shapes = [outputs[p] for p in spec.output_ports(ctx.params)]
    declared = spec.saves_for_backward(ctx.params, shapes, out_shapes)
    assert declared is not None, \
        f"{type_id} declares no saved_for_backward: the estimate guesses it; {_measured(type_id, raw, shapes)}"
    (seen2, own2), (seen3, own3) = _observed(type_id, raw, shapes, 2), _observed(type_id, raw, shapes, 3)
    assert seen2 == seen3
    kept = sorted(sorted(ports) for ports in seen3)
    assert all(ports & set(declared.ports) for ports in seen3), \
        f"{type_id}: autograd keeps ports {kept}, {declared}; {_measured(type_id, raw, shapes)}"
    assert all(any(p in ports for ports in seen3) for p in declared.ports), \
        f"{type_id}: autograd keeps ports {kept}, {declared}; {_measured(type_id, raw, shapes)}"
    own = own3 - own2
    assert own == declared.extra_bytes(1, 4), \
        f"{type_id}: autograd keeps {own} bytes a sample of the layer's own tensors (float32), {declared}; " \
        f"{_measured(type_id, raw, shapes)}"
    if spec.invertible:  # a reversible region reruns it on what its inverse rebuilt
        rerun = _observed(type_id, raw, shapes, 3, True)[1] - _observed(type_id, raw, shapes, 2, True)[1]
        assert rerun == declared.rerun_bytes(1, 4), \
            f"{type_id}: rerun on the input its inverse rebuilt, autograd keeps {rerun} bytes a sample of the " \
            f"layer's own tensors (float32), {declared}; {_measured(type_id, raw, shapes)}"
        dense = _inverse_dense(type_id, raw, shapes)
        assert dense == declared.inverse_dense, \
            f"{type_id}: its inverse hands back its inputs " \
            f"{'as dense buffers' if dense else 'as views in another axis order'}, {declared}; " \
            f"{_measured(type_id, raw, shapes)}"
    out_shape = dict(zip(spec.output_ports(ctx.params), out_shapes))
    for port in declared.freed_unread:  # dropped unread, its backward and what that keeps go too
        gone = _unread(type_id, raw, shapes, 3, port) - _unread(type_id, raw, shapes, 2, port)
        assert gone == 4 * prod(out_shape[port]), \
            f"{type_id}: dropping output {port!r} unread frees {gone} bytes a sample, not its own: it is kept " \
            f"elsewhere; take it out of freed_unread"
    if not raw.get("inplace"):  # (a leaf's input written over in place cannot run)
        (forward2, backward2), (forward3, backward3) = _work(type_id, raw, shapes, 2), _work(type_id, raw, shapes, 3)
        assert forward3 - forward2 == declared.forward_bytes(1, 4), \
            f"{type_id}: its forward holds {forward3 - forward2} bytes a sample beside its outputs (float32), " \
            f"{declared}; {_measured(type_id, raw, shapes)}"
        # (a layer whose backward frees more than it makes may declare 0, or exactly what it frees)
        declared_backward = declared.backward_bytes(1, 4)
        assert (backward3 - backward2 if declared_backward < 0 else max(0, backward3 - backward2)) \
            == declared_backward, \
            f"{type_id}: its backward holds {backward3 - backward2} bytes a sample beside the gradients (float32; " \
            f"declare {max(0, backward3 - backward2)}), {declared}; {_measured(type_id, raw, shapes)}"


@pytest.mark.parametrize("case", DECLARED, ids=[case_id(c) for c in DECLARED])
def test_the_declaration_is_what_autograd_keeps(case: tuple[str, dict[str, Any], list[tuple[int, ...]]]) -> None:
    _check_declaration(*case)


def _view(type_id: str, inputs: dict[str, tuple[int, ...]], outputs: dict[str, tuple[int, ...]],
          params: dict[str, Any] | None = None) -> NodeView:
    return NodeView(type_id, params or {}, inputs, outputs, batch=4, element_bytes=4)


@pytest.fixture
def plugged() -> Any:
    """Register test types the way a plugin's entry point does, and take them out again."""
    added: list[str] = []

    def add(type_id: str, **fields: Any) -> NodeSpec:
        spec = NodeSpec(type_id=type_id, category="Test", help="", params={}, inputs=("in",),
                        outputs=("out",), infer=lambda ctx: {"out": ctx.input("in")}, **fields)
        registry.register(spec)
        added.append(type_id)
        return spec

    yield add
    for type_id in added:
        registry._specs.pop(type_id, None)


def test_an_undeclared_type_keeps_its_inputs_and_is_marked_approximate(plugged: Any) -> None:
    plugged("UndeclaredLayer")
    saves = apply_rule(_view("UndeclaredLayer", {"in": (3, 5)}, {"out": (3, 5)}))
    assert saves.inputs == ("in",) and saves.approximate


def test_a_declared_type_is_counted_exactly(plugged: Any) -> None:
    plugged("MaskedLayer", saved_for_backward=lambda p, ins, outs: SavedTensors(ports=("out",), flags=prod(ins[0])))
    saves = apply_rule(_view("MaskedLayer", {"in": (3, 5)}, {"out": (3, 5)}))
    assert (saves.inputs, saves.outputs, saves.extra_bytes, saves.approximate) == ((), ("out",), 4 * 15, False)
    plugged("ReadsInput", saved_for_backward="in")  # one port named alone, not as a tuple
    assert apply_rule(_view("ReadsInput", {"in": (2,)}, {"out": (2,)})).inputs == ("in",)


@pytest.mark.parametrize("declaration", [("gate",), lambda p, ins, outs: 1 / 0, lambda p, ins, outs: 7,
                                         SavedTensors(rerun_values=-2), SavedTensors(inverse_dense="no")])
def test_a_broken_declaration_counts_as_none(plugged: Any, declaration: Any) -> None:
    """A port the node does not have, a function that raises or returns nonsense: the live
    figures go on, the node marked approximate, as if it declared nothing."""
    plugged("BrokenDeclaration", saved_for_backward=declaration)
    saves = apply_rule(_view("BrokenDeclaration", {"in": (3,)}, {"out": (3,)}))
    assert saves.inputs == ("in",) and saves.approximate


def test_a_layout_only_type_keeps_nothing_unless_it_says_so(plugged: Any) -> None:
    plugged("Shuffle", layout_only=True)
    saves = apply_rule(_view("Shuffle", {"in": (3,)}, {"out": (3,)}))
    assert (saves.inputs, saves.outputs, saves.extra_bytes, saves.approximate) == ((), (), 0, False)


class _Gate(torch.nn.Module):
    """x * sigmoid(x): autograd keeps x and the sigmoid (a tensor of the layer's own)."""

    def forward(self, x: Any) -> tuple[Any]:
        return (x * torch.sigmoid(x),)


@pytest.mark.parametrize("declaration", [None, ("out",)])
def test_a_failing_declaration_is_told_the_whole_measured_one(plugged: Any, declaration: Any) -> None:
    """A plugin author's type that declares nothing, or the wrong port, learns every figure at once:
    the message was "declares no saved_for_backward" or "autograd keeps ports [['in']]", and each
    run of the test then failed on the next field (its own bytes, the forward's, the backward's)."""
    plugged("Gate", build=lambda ctx: _Gate(), count_params=lambda ctx: 0, saved_for_backward=declaration)
    with pytest.raises(AssertionError) as failed:
        _check_declaration("Gate", {}, [(3, 5)])
    message = str(failed.value)
    assert "measured on this example: SavedTensors(ports=('in',), values=15, backward_values=15) (bytes a sample " \
           "at float32: kept 60, forward 0, backward 60;" in message, message
    plugged("GateDeclared", build=lambda ctx: _Gate(), count_params=lambda ctx: 0, saved_for_backward=lambda p, ins, outs: SavedTensors(
        ports=("in",), values=prod(ins[0]), backward_values=prod(ins[0])))
    _check_declaration("GateDeclared", {}, [(3, 5)])  # (what the message said to write passes)


class _Mix(torch.nn.Module):
    """An orthogonal channel mix by an einsum, its own inverse (a plugin probe's Householder 1x1)."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.linalg.qr(torch.randn(channels, channels))[0])

    def forward(self, x: Any) -> tuple[Any]:
        return (torch.einsum("oc,bchw->bohw", self.w, x),)

    def inverse(self, y: Any) -> tuple[Any]:
        return (torch.einsum("oc,bohw->bchw", self.w, y),)


def test_an_invertible_type_is_told_what_its_rerun_on_its_inverse_keeps(plugged: Any) -> None:
    """Rerun on what its inverse rebuilt (a reversible region's backward), the einsum keeps no
    copy of its input, and the inverse hands back a view in another axis order: declared as its
    forward alone measures (all a declaration could say before), the message says both."""
    def declared(full: bool) -> Any:
        return lambda p, ins, outs: SavedTensors(values=prod(ins[0]), **(
            {"rerun_values": 0, "inverse_dense": False} if full else {}))

    fields = {"build": lambda ctx: _Mix(ctx.in_shapes[0][0]), "count_params": lambda ctx: ctx.input("in")[0] ** 2,
              "invertible": True}
    plugged("MixOld", saved_for_backward=declared(False), **fields)
    with pytest.raises(AssertionError) as failed:
        _check_declaration("MixOld", {}, [(4, 3, 3)])
    assert "SavedTensors(ports=(), values=36, rerun_values=0, inverse_dense=False)" in str(failed.value), failed.value
    plugged("MixNew", saved_for_backward=declared(True), **fields)
    _check_declaration("MixNew", {}, [(4, 3, 3)])  # (what the message said to write passes)


def test_values_scale_with_the_element_size() -> None:
    kept = SavedTensors(values=10, flags=3, indices=2)
    assert kept.extra_bytes(batch=2, element_bytes=4) == 2 * (40 + 3 + 16)
    assert kept.extra_bytes(batch=2, element_bytes=8) == 2 * (80 + 3 + 16)


class _ScaledSum(torch.nn.Module):
    """w0 * x0 + w1 * x1 with learned scalars: each weight's gradient is grad * x, summed."""

    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(2))

    def forward(self, a: Any, b: Any) -> tuple[Any]:
        return (a * self.w[0] + b * self.w[1],)


@pytest.mark.parametrize("work", [True, False])
def test_a_declared_type_is_estimated_as_it_is_measured(plugged: Any, work: bool) -> None:
    """End to end, a plugin-like layer declared with what its forward and backward hold for a
    moment: the estimated peak of every mode is the measured one. Declared without them,
    checkpoint mode is under by one output's worth (its segment's recompute peaks while the
    layer's forward holds both products)."""
    from revstudio.compiler import compile as compile_graph
    from revstudio.core.generate import Builder
    from revstudio.diagnostics.check import full_check
    from revstudio.diagnostics.estimate import estimate_peak
    from revstudio.diagnostics.gradcheck import random_inputs
    from revstudio.diagnostics.memory import measure_step

    def saved(params: Any, ins: Any, outs: Any) -> SavedTensors:
        size = prod(outs[0]) if work else 0  # both products at once as it adds them; grad * x
        return SavedTensors(ports=("in0", "in1"), forward_values=2 * size, backward_values=size)

    registry.register(NodeSpec(
        type_id="ScaledSum", category="Test", help="", params={}, inputs=("in0", "in1"), outputs=("out",),
        infer=lambda ctx: {"out": ctx.input("in0")}, count_params=lambda ctx: 2,
        build=lambda ctx: _ScaledSum(), saved_for_backward=saved))
    b = Builder("scaled")
    b.node("Input", "x", shape=[8, 8, 8])
    b.node("Input", "z", shape=[8, 8, 8])
    b.node("ScaledSum", "sum")
    b.node("Conv", "c", out_channels=8, kernel_size=3)
    b.node("Output", "y")
    b.wire("x.out", "sum.in0")
    b.wire("z.out", "sum.in1")
    b.chain("sum.out", "c", "y")
    graph = b.done()
    try:
        if work:  # what the catalog test measures of it is what it declares
            (f2, b2), (f3, b3) = (_work("ScaledSum", {}, [(8, 8, 8)] * 2, n) for n in (2, 3))
            declared = saved({}, [(8, 8, 8)] * 2, [(8, 8, 8)])
            assert (f3 - f2, b3 - b2) == (declared.forward_bytes(1, 4), declared.backward_bytes(1, 4))
        report = full_check(graph, batch=8)
        torch.manual_seed(0)
        model = compile_graph(graph, mode="standard")
        inputs = random_inputs(graph, 8, torch.float32, requires_grad=False)
        for mode in ("standard", "checkpoint"):
            model.mode = mode
            measured = measure_step(model, inputs, timing_runs=0)["peak_bytes"]
            estimated = estimate_peak(graph, report, batch=8, mode=mode)
            if work:
                assert abs(estimated / measured - 1) < 0.005, (mode, estimated, measured)
            elif mode == "checkpoint":  # the recompute of its segment peaks in its forward
                assert estimated < 0.95 * measured, (mode, estimated, measured)
    finally:
        registry._specs.pop("ScaledSum", None)


@pytest.mark.parametrize(("mode", "inputs"), [("mul", 3), ("mul", 5), ("max", 3), ("max", 4), ("max", 5)])
def test_a_merge_of_more_than_two_declares_what_its_backward_frees(mode: str, inputs: int) -> None:
    # (the catalog's cases merge two: these free their partial results as their backward runs,
    # a negative figure the declaration must give exactly for the estimate to take it off)
    shapes = [(4, 8, 8)] * inputs
    params = {"mode": mode, "inputs": inputs}
    declared = registry.get("Merge").saves_for_backward(params, shapes, [shapes[0]])
    assert declared is not None
    (_, backward2), (_, backward3) = _work("Merge", params, shapes, 2), _work("Merge", params, shapes, 3)
    assert backward3 - backward2 == declared.backward_bytes(1, 4), (backward3 - backward2, declared)


def test_only_the_backward_counts_may_be_negative() -> None:
    # a backward may free more than it makes (a product of three frees its partial product); a
    # tensor kept or held in the forward cannot have negative size (two changes met at one merge)
    assert SavedTensors(("in",), backward_values=-4, backward_flags=-1).problem() is None
    for field in ("values", "flags", "indices", "forward_values", "forward_flags"):
        assert "0 or more" in (SavedTensors(("in",), **{field: -4}).problem() or "")
