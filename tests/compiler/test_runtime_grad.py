"""The reversible backward's vector-Jacobian products call autograd's engine directly.

``runtime_grad.vjp`` must be ``torch.autograd.grad(..., allow_unused=True)`` in every way a
step can see: the same gradients bit for bit, None for an unused input, the same refusal of a
seed of the wrong shape, and the public call for anything it does not treat as ordinary (a
tensor subclass, a torch without the entry point). Whole models must train to the same
gradients on either path.
"""
from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from revstudio.compiler import compile as compile_graph  # noqa: E402
from revstudio.compiler import runtime_grad  # noqa: E402
from revstudio.compiler.runtime_grad import vjp  # noqa: E402
from revstudio.core.generate import revnet_chain  # noqa: E402
from revstudio.core.project import load  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "resources" / "examples"


def _graph(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(6, 5, generator=g, requires_grad=True)
    x = torch.randn(4, 6, generator=g, requires_grad=True)
    unused = torch.randn(3, requires_grad=True)
    f = torch.tanh(x @ w)
    return x, w, unused, f


def test_the_engine_path_is_available_on_this_torch() -> None:
    assert runtime_grad._run_backward is not None


@pytest.mark.parametrize("edge", [False, True])
def test_vjp_is_autograd_grad_bit_for_bit(edge: bool) -> None:
    results = []
    for call in (torch.autograd.grad, vjp):
        x, w, unused, f = _graph()
        seed = torch.linspace(-1, 1, f.numel()).reshape(f.shape)
        root = torch.autograd.graph.get_gradient_edge(f) if edge else f
        if call is vjp:
            results.append(vjp((root,), (x, w, unused), (seed,)))
        else:
            results.append(call((root,), (x, w, unused), (seed,), allow_unused=True))
    (gx, gw, gu), (vx, vw, vu) = results
    assert torch.equal(gx, vx) and torch.equal(gw, vw)
    assert gu is None and vu is None
    assert x.grad is None and w.grad is None  # nothing accumulated


def test_vjp_frees_the_graph() -> None:
    x, w, _unused, f = _graph()
    vjp((f,), (x,), (torch.ones_like(f),))
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        vjp((f,), (x,), (torch.ones_like(f),))


def test_a_seed_of_the_wrong_shape_is_refused_as_autograd_refuses_it() -> None:
    x, w, _unused, f = _graph()
    with pytest.raises(RuntimeError, match="shape"):
        vjp((f,), (x, w), (torch.ones(3, 3),))


def test_a_tensor_subclass_goes_through_autograd_grad(monkeypatch: pytest.MonkeyPatch) -> None:
    class Tagged(torch.Tensor):
        pass

    calls = []
    real = torch.autograd.grad

    def recording(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(torch.autograd, "grad", recording)
    x = torch.randn(4, 3).as_subclass(Tagged).requires_grad_(True)
    f = (x * 2).sum(1)
    (gx,) = vjp((f,), (x,), (torch.ones(4),))
    assert calls  # (the subclass's torch-function handling calls it once more)
    assert torch.equal(gx.as_subclass(torch.Tensor), torch.full((4, 3), 2.0))


def test_without_the_engine_entry_point_it_is_autograd_grad(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runtime_grad, "_run_backward", None)
    x, w, _unused, f = _graph()
    (gx,) = vjp((f,), (x,), (torch.ones_like(f),))
    x2, w2, _u2, f2 = _graph()
    (ref,) = torch.autograd.grad(f2, x2, torch.ones_like(f2))
    assert torch.equal(gx, ref)


def _revnet_coupling():  # type: ignore[no-untyped-def]
    return load(EXAMPLES / "revnet_coupling.revs")


def _glow():  # type: ignore[no-untyped-def]
    return load(EXAMPLES / "glow_flow.revs")


@pytest.mark.parametrize("make", [lambda: revnet_chain(3, channels=8, size=8), _revnet_coupling, _glow],
                         ids=["wired", "additive-coupling", "glow-flow"])
def test_models_get_the_same_gradients_on_either_path(make, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    graph = make()
    shape = next(n for n in graph if n.type == "Input").params["shape"]
    torch.manual_seed(0)
    model = compile_graph(graph, device="cpu")
    model.train()
    x = torch.randn(4, *shape)
    if hasattr(model, "initialize"):
        model.initialize(x)
    engine = runtime_grad._run_backward
    used = []

    def counting(*args):  # type: ignore[no-untyped-def]
        used.append(1)
        return engine(*args)

    grads = {}
    for path in ("engine", "autograd"):
        monkeypatch.setattr(runtime_grad, "_run_backward", counting if path == "engine" else None)
        model.zero_grad(set_to_none=True)
        out = model(x)
        loss = out.square().sum()
        if getattr(model, "logdet", None) is not None:
            loss = loss - model.logdet.sum()
        loss.backward()
        grads[path] = [p.grad.clone() for p in model.parameters() if p.grad is not None]
        if path == "engine":
            assert used, "the reversible backward did not take the engine path"
    assert len(grads["engine"]) == len(grads["autograd"]) > 0
    for a, b in zip(grads["engine"], grads["autograd"]):
        assert torch.equal(a, b)
