"""Higher-order gradients, repeated backwards and in-place weight edits, in every mode.

Each ends with the right numbers (standard and checkpoint modes support double
backward) or a clear RuntimeError (reversible mode refuses it, a freed graph and
an edited weight are reported as autograd reports them): never a wrong number
and never an error from inside torch's machinery.
"""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import revstudio as rs  # noqa: E402
from revstudio.core.examples import example_projects  # noqa: E402

EXAMPLES = example_projects()


def _model(name: str):
    torch.manual_seed(0)
    return rs.compile(EXAMPLES[name], device="cpu").double()


def _loss(model, x):
    out = model(x)
    loss = out.square().sum()
    if getattr(model, "logdet", None) is not None:
        loss = loss - model.logdet.sum()
    return loss


def _second_order(model, x, mode):
    """d/dθ |dL/dθ|²: a gradient penalty, the common double backward."""
    model.mode = mode
    params = list(model.parameters())
    grads = torch.autograd.grad(_loss(model, x.clone().requires_grad_()), params, create_graph=True,
                                allow_unused=True)
    penalty = sum(g.square().sum() for g in grads if g is not None)
    return torch.autograd.grad(penalty, params, allow_unused=True)


def _input(model):
    shape = next(op.shape for op in model.plan.inputs)
    return torch.randn(2, *shape, dtype=torch.float64, generator=torch.Generator().manual_seed(1))


@pytest.mark.parametrize("name", ["revnet_wired", "glow_flow"])
def test_double_backward_is_right_in_checkpoint_mode_and_refused_in_reversible(name: str) -> None:
    model = _model(name)
    x = _input(model)
    expected = _second_order(model, x, "standard")
    got = _second_order(model, x, "checkpoint")
    for a, b in zip(expected, got):
        assert (a is None) == (b is None)
        if a is not None:
            torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-10)
    with pytest.raises(RuntimeError, match="higher-order gradients.*standard.*checkpoint"):
        _second_order(model, x, "reversible")


@pytest.mark.parametrize("mode", ["standard", "checkpoint", "reversible"])
@pytest.mark.parametrize("name", ["revnet_wired", "glow_flow"])
def test_retain_graph_twice_doubles_the_gradient(name: str, mode: str) -> None:
    model = _model(name)
    model.mode = mode
    loss = _loss(model, _input(model))
    loss.backward(retain_graph=True)
    once = {n: p.grad.clone() for n, p in model.named_parameters()}
    loss.backward()
    for n, p in model.named_parameters():
        torch.testing.assert_close(p.grad, 2 * once[n], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mode", ["standard", "checkpoint", "reversible"])
@pytest.mark.parametrize("name, only_logdet", [("revnet_wired", False), ("glow_flow", False), ("glow_flow", True)])
def test_second_backward_without_retain_graph_says_so(name: str, mode: str, only_logdet: bool) -> None:
    model = _model(name)
    model.mode = mode
    x = _input(model)
    # the log-determinant alone reaches the reversible region's backward first
    loss = (model(x), -model.logdet.sum())[1] if only_logdet else _loss(model, x)
    loss.backward()
    with pytest.raises(RuntimeError, match="(?i)backward through the graph a second time"):
        loss.backward()


@pytest.mark.parametrize("mode", ["standard", "checkpoint", "reversible"])
@pytest.mark.parametrize("name", ["revnet_wired", "glow_flow"])
def test_in_place_weight_edit_before_backward_raises(name: str, mode: str) -> None:
    model = _model(name)
    model.mode = mode
    loss = _loss(model, _input(model))
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(1.001)  # optimizer.step() before loss.backward()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


@pytest.mark.parametrize("mode", ["checkpoint", "reversible"])
def test_weight_edit_inside_a_region_is_caught(mode: str) -> None:
    """Only one weight of a region edited: the region's own check is what catches it
    (torch's checkpoint would silently differentiate the edited weight)."""
    model = _model("glow_flow")
    model.mode = mode
    loss = _loss(model, _input(model))
    region = model._regions[0]
    with torch.no_grad():
        region.modules[-1].parameters().__next__().add_(0.01)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()
