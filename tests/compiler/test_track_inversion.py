"""``model.track_inversion``: each reversible backward measures its regions' inversion error
unless it is turned off; off, the step computes the same and does less, and the figures of
the last measured backward stay."""
from __future__ import annotations

import math

import pytest
import torch
from compiler_graphs import coupling_repeat, two_stream_group, wired_revnet
from count_ops import CountOps

import revstudio.compiler as C
from revstudio.compiler.budget import prefix_cost
from revstudio.compiler.plan import MODULE_ATTRS


def _step(model: C.CompiledModel, x: torch.Tensor) -> tuple[list[torch.Tensor], int]:
    """The gradients of one step, and how many ops it dispatched."""
    model.zero_grad(set_to_none=True)
    xi = x.clone().requires_grad_(True)
    with CountOps() as ops:
        y = model(xi)
        (y * y).sum().backward()
    return [xi.grad, *(p.grad for p in model.parameters())], ops.count


@pytest.mark.parametrize("graph", [lambda: wired_revnet(3), lambda: coupling_repeat(3), two_stream_group],
                         ids=["wired", "repeat", "group"])
def test_untracked_steps_compute_the_same_with_fewer_ops(graph) -> None:
    torch.manual_seed(0)
    model = C.compile(graph(), device="cpu")
    assert model.track_inversion is True
    x = torch.randn(2, 4, 4, 4)
    _step(model, x)  # (first-call work: ActNorm checks, index caches)
    tracked, tracked_ops = _step(model, x)
    measured = model.inversion_errors()
    assert measured  # every region, nested ones too
    model.track_inversion = False
    untracked, untracked_ops = _step(model, 2 * x)
    assert model.inversion_errors() == measured  # the last measured figures stay
    untracked, untracked_ops = _step(model, x)
    assert untracked_ops < tracked_ops
    for a, b in zip(tracked, untracked):
        assert (a is None and b is None) or torch.equal(a, b)


def test_a_model_that_never_measured_has_no_figures() -> None:
    torch.manual_seed(0)
    model = C.compile(coupling_repeat(2), device="cpu")
    model.track_inversion = False
    _step(model, torch.randn(2, 4, 4, 4))
    assert model.inversion_errors() == {}
    model.track_inversion = True
    _step(model, torch.randn(2, 4, 4, 4))
    assert set(model.inversion_errors()) == {"region-rep"}


def test_under_a_budget_the_rest_keeps_its_last_figures() -> None:
    torch.manual_seed(0)
    model = C.compile(wired_revnet(3), device="cpu")
    root = model._root
    (rid,) = root.step_costs
    batch = 64
    costs = [c * batch for c in root.step_costs[rid]]
    refunds = [c * batch for c in root.cut_refunds.get(rid, [])] or None
    model.memory_budget = prefix_cost(costs, refunds, 3, root.cut_fixed.get(rid))
    x = torch.randn(batch, 4, 4, 4)
    assert 0 < root.kept_steps(batch)[rid] < len(costs)  # a kept head and a reversible rest
    _step(model, x)
    measured = model.inversion_errors()
    assert set(measured) == {rid}
    model.track_inversion = False
    _step(model, x)
    assert model.inversion_errors() == measured
    model.memory_budget = math.inf  # all kept: nothing rebuilt, nothing measured; the old figures stay
    _step(model, x)
    assert model.inversion_errors() == measured


def test_every_public_attribute_of_the_model_is_a_name_nodes_cannot_take() -> None:
    """A node's layer is an attribute of the model: one named like a property would be shadowed."""
    public = {n for n in dir(C.CompiledModel) if not n.startswith("_")}
    missing = public - MODULE_ATTRS - set(dir(torch.nn.Module))
    assert not missing, f"add {sorted(missing)} to compiler.plan.MODULE_ATTRS"


def test_the_error_against_a_kept_sample_is_the_same_on_a_second_backward() -> None:
    """A region whose input a layer computes keeps a sample of it for the inversion error. A
    backward that lets the graph go writes the difference over that sample (no fresh float64
    sample and float32 take at the end of backward, beside the rebuilt streams and every
    gradient); one that keeps the graph must leave it for the next: the same figure twice."""
    torch.manual_seed(0)
    model = C.compile(wired_revnet(2, stem=True), device="cpu")
    x = torch.randn(1, 4, 4, 4)
    model(x)  # (first-call work)
    loss = model(x).square().sum()
    loss.backward(retain_graph=True)
    first = model.inversion_errors()
    assert first and all(math.isfinite(e) and e < 1e-6 for e in first.values())
    loss.backward()
    assert model.inversion_errors() == first
    # a fresh step measures the same again, its sample spent
    model(x).square().sum().backward()
    assert model.inversion_errors() == first
