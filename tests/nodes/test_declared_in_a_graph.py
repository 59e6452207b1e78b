"""A plugin's layer declared as the catalog test measures it is estimated exactly in a graph.

A helper's probe wrote two plugin types and found the estimate off where they ran in a network:

- a tanh coupling (``y1 = x1 + tanh(W x2 + b)``, ``y2 = x2``), two in a row: its backward frees
  what it keeps and its output's gradient before it makes its input's. The catalog test held the
  output's gradient for the whole backward and summed a leaf's gradient out of place, and measured
  four halves' worth it never holds in a graph: 16 % over in standard mode, 26 % in checkpoint.
  Declared as measured now (nothing), the forward's peak showed its own kept tensors left out (they
  exist beside its output as it adds: 18 % under), and a checkpoint's recompute, which stops at its
  last kept tensor before its output exists, counted that output (9 % over);
- a fork into ``relu(x)`` and ``relu(-x)``, both read: 46 % over in standard mode, the same
  cause; with one part read nothing, the part's backward goes with it: counted kept (97 KiB
  against 65 KiB at batch 32) until the type could say so (``SavedTensors.freed_unread``).
"""
from __future__ import annotations

from collections.abc import Iterator
from math import prod
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from test_saved_for_backward import _unread, _work  # noqa: E402

from revstudio.compiler import compile as compile_graph  # noqa: E402
from revstudio.core.generate import Builder  # noqa: E402
from revstudio.core.graph import Graph  # noqa: E402
from revstudio.core.spec import NodeSpec, SavedTensors, registry  # noqa: E402
from revstudio.diagnostics.check import full_check  # noqa: E402
from revstudio.diagnostics.estimate import MODES, estimate  # noqa: E402
from revstudio.diagnostics.gradcheck import random_inputs  # noqa: E402
from revstudio.diagnostics.memory import measure_step  # noqa: E402

BATCH = 8


class _TanhCoupling(torch.nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.half = channels // 2
        self.lin = torch.nn.Linear(self.half, self.half)

    def _f(self, x2: Any) -> Any:
        return torch.tanh(self.lin(x2.movedim(1, -1))).movedim(-1, 1)

    def forward(self, x: Any) -> tuple[Any]:
        x1, x2 = x[:, :self.half], x[:, self.half:]
        return (torch.cat([x1 + self._f(x2), x2], dim=1),)

    def inverse(self, y: Any) -> tuple[Any]:
        y1, y2 = y[:, :self.half], y[:, self.half:]
        return (torch.cat([y1 - self._f(y2), y2], dim=1),)


class _SignFork(torch.nn.Module):
    def forward(self, x: Any) -> tuple[Any, Any]:
        return torch.relu(x), torch.relu(-x)


def _coupling_saved(params: Any, ins: Any, outs: Any) -> SavedTensors:
    n = prod(ins[0]) // 2  # the linear's contiguous copy of x2 and the tanh; the add's sum a moment
    return SavedTensors(values=2 * n, forward_values=n)


def _fork_saved(params: Any, ins: Any, outs: Any, freed: bool = True) -> SavedTensors:
    return SavedTensors(ports=("pos", "neg"), freed_unread=("pos", "neg") if freed else (),
                        forward_values=prod(ins[0]))


@pytest.fixture
def probe_types() -> Iterator[None]:
    added = [
        NodeSpec(type_id="ProbeTanhCoupling", category="Test", help="", params={}, inputs=("in",),
                 outputs=("out",), infer=lambda ctx: {"out": ctx.input("in")},
                 count_params=lambda ctx: (ctx.input("in")[0] // 2) ** 2 + ctx.input("in")[0] // 2,
                 build=lambda ctx: _TanhCoupling(ctx.in_shapes[0][0]), invertible=True,
                 saved_for_backward=_coupling_saved),
        NodeSpec(type_id="ProbeSignFork", category="Test", help="", params={}, inputs=("in",),
                 outputs=("pos", "neg"), infer=lambda ctx: {"pos": ctx.input("in"), "neg": ctx.input("in")},
                 count_params=lambda ctx: 0, build=lambda ctx: _SignFork(), saved_for_backward=_fork_saved),
    ]
    for spec in added:
        registry.register(spec)
    yield
    for spec in added:
        registry._specs.pop(spec.type_id, None)


def _network(middle: str) -> Graph:
    """Input -> Conv -> ``middle`` -> Flatten -> Linear -> Output."""
    b = Builder(middle)
    b.node("Input", "x", shape=[4, 8, 8])
    b.node("Conv", "conv", out_channels=4, kernel_size=3)
    b.node("Flatten", "flat")
    b.node("Linear", "lin", out_features=10)
    b.node("Output", "y")
    b.wire("x.out", "conv.in")
    if middle == "couplings":
        b.node("ProbeTanhCoupling", "c1")
        b.node("ProbeTanhCoupling", "c2")
        b.chain("conv.out", "c1", "c2", "flat")
    else:
        b.node("ProbeSignFork", "fork")
        b.node("Merge", "m", mode="add")
        b.wire("conv.out", "fork.in")
        b.wire("fork.pos", "m.in0")
        b.wire("fork.neg" if middle == "fork" else "conv.out", "m.in1")
        b.chain("m.out", "flat")
    b.chain("flat.out", "lin", "y")
    return b.done()


def _figures(graph: Graph) -> dict[str, tuple[int, int, int, int]]:
    """(estimated peak, measured peak, estimated kept, measured kept) per mode."""
    report = full_check(graph, batch=BATCH)
    est = estimate(graph, report, batch=BATCH)
    torch.manual_seed(0)
    model = compile_graph(graph, mode="standard")
    inputs = random_inputs(graph, BATCH, torch.float32, requires_grad=False)
    found = {}
    for mode in MODES:
        model.mode = mode
        step = measure_step(model, inputs, timing_runs=0)
        found[mode] = (est.peak_bytes(mode), step["peak_bytes"], est.activation_bytes(mode), step["kept_bytes"])
    return found


def _per_sample(type_id: str, shape: tuple[int, ...]) -> tuple[int, int]:
    (f2, b2), (f3, b3) = (_work(type_id, {}, [shape], n) for n in (2, 3))
    return f3 - f2, b3 - b2


def test_the_coupling_is_declared_as_measured_and_estimated_as_it_runs(probe_types: None) -> None:
    declared = _coupling_saved({}, [(4, 8, 8)], [(4, 8, 8)])
    forward, backward = _per_sample("ProbeTanhCoupling", (4, 8, 8))
    assert (forward, max(0, backward)) == (declared.forward_bytes(1, 4), declared.backward_bytes(1, 4))
    for mode, (est, measured, _, _) in _figures(_network("couplings")).items():
        assert abs(est / measured - 1) < 0.005, (mode, est, measured)


def test_a_fork_read_whole_is_estimated_as_it_runs(probe_types: None) -> None:
    declared = _fork_saved({}, [(4, 8, 8)], [(4, 8, 8)] * 2)
    forward, backward = _per_sample("ProbeSignFork", (4, 8, 8))
    assert (forward, max(0, backward)) == (declared.forward_bytes(1, 4), declared.backward_bytes(1, 4))
    figures = _figures(_network("fork"))
    for mode in ("standard", "checkpoint"):  # (reversible mode: see benchmarks/README.md)
        est, measured, _, _ = figures[mode]
        assert abs(est / measured - 1) < 0.005, (mode, est, measured)


def test_an_unread_output_whose_backward_goes_with_it_is_not_kept(probe_types: None) -> None:
    gone = _unread("ProbeSignFork", {}, [(4, 8, 8)], 3, "neg") - _unread("ProbeSignFork", {}, [(4, 8, 8)], 2, "neg")
    assert gone == 4 * prod((4, 8, 8))  # dropped unread, nothing keeps it: the declaration holds
    for mode, (est, measured, est_kept, kept) in _figures(_network("fork_one")).items():
        assert abs(est / measured - 1) < 0.005, (mode, est, measured)
        assert abs(est_kept - kept) <= 16, (mode, est_kept, kept)


def test_without_freed_unread_an_unread_kept_output_still_counts(probe_types: None) -> None:
    """A type that does not say so (a custom autograd Function may keep the unread output for
    the one it returns beside it) is counted as before: its output kept."""
    registry._specs["ProbeSignFork"] = NodeSpec(
        type_id="ProbeSignFork", category="Test", help="", params={}, inputs=("in",), outputs=("pos", "neg"),
        infer=lambda ctx: {"pos": ctx.input("in"), "neg": ctx.input("in")}, count_params=lambda ctx: 0,
        build=lambda ctx: _SignFork(), saved_for_backward=lambda p, i, o: _fork_saved(p, i, o, freed=False))
    graph = _network("fork_one")
    report = full_check(graph, batch=BATCH)
    est = estimate(graph, report, batch=BATCH)
    freed_est = est.activation_bytes("standard")
    assert freed_est == est.peaks["standard"].kept
    one_part = BATCH * 4 * prod((4, 8, 8))
    registry._specs["ProbeSignFork"] = NodeSpec(
        type_id="ProbeSignFork", category="Test", help="", params={}, inputs=("in",), outputs=("pos", "neg"),
        infer=lambda ctx: {"pos": ctx.input("in"), "neg": ctx.input("in")}, count_params=lambda ctx: 0,
        build=lambda ctx: _SignFork(), saved_for_backward=_fork_saved)
    assert estimate(graph, full_check(graph, batch=BATCH), batch=BATCH).activation_bytes("standard") \
        == freed_est - one_part


def _builtin(kind: str) -> Graph:
    """Built-in layers whose declarations the catalog test measured with held gradients: a Conv
    padded 'same' by an even kernel after another Conv, a Merge max of three Convs' outputs."""
    b = Builder(kind)
    b.node("Input", "x", shape=[4, 8, 8])
    b.node("Flatten", "flat")
    b.node("Linear", "lin", out_features=10)
    b.node("Output", "y")
    if kind == "even-conv":
        b.node("Conv", "a", out_channels=8, kernel_size=3)
        b.node("Conv", "e", out_channels=8, kernel_size=2)
        b.node("Activation", "t", fn="tanh")
        b.chain("x.out", "a", "e", "t", "flat")
    else:
        b.node("Merge", "m", mode="max", inputs=3)
        for i in range(3):
            b.node("Conv", f"c{i}", out_channels=4, kernel_size=3)
            b.wire("x.out", f"c{i}.in")
            b.wire(f"c{i}.out", f"m.in{i}")
        b.chain("m.out", "flat")
    b.chain("flat.out", "lin", "y")
    return b.done()


@pytest.mark.parametrize("kind", ["even-conv", "max-of-three"])
def test_built_in_layers_declared_as_in_a_graph(kind: str) -> None:
    """Declared with what the old test measured, these were 6 % and 20 % over at batch 8."""
    for mode, (est, measured, _, _) in _figures(_builtin(kind)).items():
        assert abs(est / measured - 1) < 0.005, (mode, est, measured)
