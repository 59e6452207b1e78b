"""What a PyTorch training loop does around a compiled model, in every mode.

Hooks on weights, switching train/eval between forward and backward: each must give
what plain autograd (standard mode) gives, not something close to it.
"""
from __future__ import annotations

import pytest
import torch
from compiler_graphs import coupling_repeat, glow, plain_chain, wired_revnet

import revstudio.compiler as C

torch.set_num_threads(1)

MODES = ("standard", "reversible", "checkpoint")


def _x(model: C.CompiledModel, batch: int = 3) -> torch.Tensor:
    gen = torch.Generator().manual_seed(1)
    op = model.plan.inputs[0]
    return torch.randn(batch, *op.shape, generator=gen, dtype=model.dtype, requires_grad=True)


def _loss(y: torch.Tensor) -> torch.Tensor:
    w = torch.Generator().manual_seed(2)
    return (y * torch.randn(y.shape, generator=w, dtype=y.dtype)).sum()


def _grads(model: C.CompiledModel, x: torch.Tensor) -> list[torch.Tensor]:
    return [x.grad.clone()] + [p.grad.clone() for p in model.parameters()]


def _close(a: list[torch.Tensor], b: list[torch.Tensor]) -> bool:
    return all(torch.allclose(u, v, rtol=1e-10, atol=1e-12) for u, v in zip(a, b))


@pytest.mark.parametrize("graph", [lambda: wired_revnet(2), lambda: coupling_repeat(2), glow],
                         ids=["wired", "coupling", "glow"])
def test_weight_hooks_run_once_per_backward_in_every_mode(graph) -> None:
    torch.manual_seed(0)
    model = C.compile(graph(), dtype=torch.float64, device="cpu")
    x = _x(model)
    calls: dict[str, int] = {}
    for name, p in model.named_parameters():
        def hook(g: torch.Tensor, name: str = name) -> torch.Tensor:
            calls[name] = calls.get(name, 0) + 1
            return g * 2  # a hook that rescales (gradient scaling, masking) must do so once
        p.register_hook(hook)
    grads = {}
    for mode in MODES:
        model.mode = mode
        model.zero_grad(set_to_none=True)
        x.grad = None
        calls.clear()
        _loss(model(x)).backward()
        assert calls == {name: 1 for name, _ in model.named_parameters()}, mode
        grads[mode] = _grads(model, x)
    assert _close(grads["reversible"], grads["standard"])
    assert _close(grads["checkpoint"], grads["standard"])


def test_a_hook_removed_or_added_later_still_counts() -> None:
    torch.manual_seed(0)
    model = C.compile(wired_revnet(2), dtype=torch.float64, device="cpu")
    x = _x(model)
    weight = model.b0f.weight
    seen: list[int] = []
    handle = weight.register_hook(lambda g: seen.append(1))
    _loss(model(x)).backward()  # reversible: the hook is held back in the recomputation...
    handle.remove()
    _loss(model(x)).backward()  # ...and put back, so that removing it still works
    weight.register_hook(lambda g: seen.append(2))
    _loss(model(x)).backward()
    assert seen == [1, 2]


@pytest.mark.parametrize("graph", [lambda: wired_revnet(2, extra="Norm"), lambda: wired_revnet(2, extra="Dropout"),
                                   lambda: coupling_repeat(2, extra={"type": "Norm"}), plain_chain],
                         ids=["batchnorm", "dropout", "coupling_batchnorm", "plain_chain"])
def test_eval_between_forward_and_backward_keeps_the_forwards_gradients(graph) -> None:
    """The recomputation runs each layer in the train/eval state the forward ran it in."""
    grads = {}
    stats = {}
    for mode in MODES:
        torch.manual_seed(0)
        model = C.compile(graph(), dtype=torch.float64, device="cpu")
        model.mode = mode
        x = _x(model)
        torch.manual_seed(3)
        y = model(x)
        model.eval()  # e.g. a validation pass before the backward of a kept loss
        _loss(y).backward()
        assert not any(m.training for m in model.modules())  # and eval it stays
        grads[mode] = _grads(model, x)
        stats[mode] = [b.clone() for b in model.buffers()]
    assert _close(grads["reversible"], grads["standard"])
    assert _close(grads["checkpoint"], grads["standard"])
    for mode in ("reversible", "checkpoint"):  # statistics updated once, by the forward
        assert all(torch.allclose(a.double(), b.double()) for a, b in zip(stats[mode], stats["standard"]))


def test_train_between_forward_and_backward_keeps_the_forwards_gradients() -> None:
    grads = {}
    for mode in MODES:
        torch.manual_seed(0)
        model = C.compile(wired_revnet(2, extra="Norm"), dtype=torch.float64, device="cpu")
        model.eval()
        model.mode = mode
        x = _x(model)
        y = model(x)
        model.train()
        _loss(y).backward()
        assert all(m.training for m in model.modules())
        grads[mode] = _grads(model, x)
    assert _close(grads["reversible"], grads["standard"])
    assert _close(grads["checkpoint"], grads["standard"])


@pytest.mark.parametrize("mode", MODES)
def test_an_activation_a_forward_hook_kept_stays_readable(mode: str) -> None:
    """Feature extraction: a hook keeps a layer's output, read between forward and backward
    (in a loss, a plot). The region used to release the memory of that tensor, which nothing
    in the graph reads again: reading it crashed the process."""
    torch.manual_seed(0)
    model = C.compile(wired_revnet(2, stem=True), dtype=torch.float64, device="cpu")
    model.mode = mode
    feats: dict[str, torch.Tensor] = {}
    model.stem.register_forward_hook(lambda m, i, o: feats.update(stem=o[0]))
    x = _x(model)
    y = model(x)
    stem = feats["stem"]
    assert stem.untyped_storage().nbytes() == stem.numel() * stem.element_size()
    expected = model.stem(x.detach())[0]
    assert torch.equal(stem.detach(), expected)
    (_loss(y) + stem.square().sum()).backward()  # the kept activation in the loss
    assert torch.equal(stem.detach(), expected)
    grads = _grads(model, x)
    model.mode = "standard"
    model.zero_grad(set_to_none=True)
    x.grad = None
    y = model(x)
    (_loss(y) + feats["stem"].square().sum()).backward()
    assert _close(grads, _grads(model, x))


@pytest.mark.parametrize("graph", [lambda: wired_revnet(2, extra="Norm"), lambda: coupling_repeat(2, extra={"type": "Norm"}),
                                   glow, plain_chain],
                         ids=["wired_batchnorm", "coupling_batchnorm", "glow", "plain_chain"])
@pytest.mark.parametrize("train", [True, False], ids=["train", "eval"])
def test_functional_call_differentiates_the_weights_it_was_given(graph, train: bool) -> None:
    """torch.func.functional_call swaps weights and buffers in for the forward alone (fast
    weights, EMA weights); the backward's recomputation must run with those, not the model's."""
    torch.manual_seed(0)
    model = C.compile(graph(), dtype=torch.float64, device="cpu")
    model.train(train)
    x = _x(model)
    model(x)  # (ActNorm's data-dependent init happens once, on the model's own weights)
    gen = torch.Generator().manual_seed(5)
    params = {n: (p.detach() * 1.5 + 0.1).requires_grad_() for n, p in model.named_parameters()}
    buffers = {n: (b.detach() + torch.rand(b.shape, generator=gen, dtype=b.dtype) if b.is_floating_point() else b.clone())
               for n, b in model.named_buffers()}
    grads = {}
    for mode in MODES:
        model.mode = mode
        torch.manual_seed(3)
        state = {n: b.clone() for n, b in buffers.items()}  # (a training forward updates them)
        y = torch.func.functional_call(model, {**params, **state}, (x,))
        grads[mode] = torch.autograd.grad(_loss(y), [x, *params.values()])
    assert all(p.grad is None for p in model.parameters())  # the model's own weights got nothing
    assert _close(list(grads["reversible"]), list(grads["standard"]))
    assert _close(list(grads["checkpoint"]), list(grads["standard"]))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("lu", [True, False])
def test_a_half_precision_flow_trains_and_samples_in_reversible_mode(dtype: torch.dtype, lu: bool) -> None:
    """compile(dtype=torch.bfloat16) takes half precision; the InvConv1x1's inverse (the
    reversible backward and model.inverse) failed in torch.linalg, which refuses it."""
    torch.manual_seed(0)
    graph = glow()
    graph.set_param("inv", "lu", lu)
    model = C.compile(graph, dtype=dtype, device="cpu")
    x = _x(model)
    grads = {}
    for mode in ("standard", "reversible"):
        model.mode = mode
        model.zero_grad(set_to_none=True)
        x.grad = None
        y = model(x)
        (y.float().square().sum() + model.logdet.float().sum()).backward()
        grads[mode] = _grads(model, x)
    assert all(torch.allclose(a.float(), b.float(), rtol=0.05, atol=0.05 * float(b.abs().max()))
               for a, b in zip(grads["reversible"], grads["standard"]))
    back = model.inverse(y.detach())
    assert back.dtype == dtype and torch.allclose(back.float(), x.detach().float(), atol=0.05)
