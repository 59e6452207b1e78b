"""A flow's log-determinant, layer by layer, as a FrEIA user checks it: each part's ``logdet``
(a layer, a Repeat, one copy of its group) is the log|det| of that part's own Jacobian, in every
mode, in the compiled module and in the exported ``Model``; the parts add up to ``model.logdet``."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from revstudio.codegen import export  # noqa: E402
from revstudio.compiler import compile as rs_compile  # noqa: E402
from revstudio.core.generate import glow_repeat  # noqa: E402
from revstudio.core.graph import Graph  # noqa: E402

MODES = ("standard", "reversible", "checkpoint")


def vector_flow() -> Graph:
    """RealNVP on 3-vectors (FrEIA's toy setting): ActNorm, an affine coupling, an invertible mixing."""
    net = Graph("net")
    net.add_node("GroupInput", "in")
    net.add_node("Linear", "l", {"out_features": 4})
    net.add_node("Activation", "a", {"fn": "tanh"})
    net.add_node("GroupOutput", "out")
    for a, b in (("in", "l"), ("l", "a"), ("a", "out")):
        net.connect(f"{a}.out", f"{b}.in")
    g = Graph("vector-flow")
    g.set_group("net", net)
    g.add_node("Input", "x", {"shape": [3]})
    g.add_node("ActNorm", "an")
    g.add_node("AffineCoupling", "c", {"net": "net"})
    g.add_node("InvConv1x1", "ic", {"lu": False})
    g.add_node("Output", "z")
    for a, b in (("x", "an"), ("an", "c"), ("c", "ic"), ("ic", "z")):
        g.connect(f"{a}.out", f"{b}.in")
    return g


def _moved(model, shape):  # type: ignore[no-untyped-def]
    """``model`` in float64 past ActNorm's first batch, its weights off their identity start."""
    torch.manual_seed(0)
    model.double()
    model(torch.randn(8, *shape, dtype=torch.float64) * 2 + 1)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.3 * torch.randn_like(p))
    return model


def _log_abs_det(fn, x):  # type: ignore[no-untyped-def]
    """log|det| of the Jacobian of ``fn`` at the one sample ``x``, by autograd."""
    n = x.numel()
    jac = torch.autograd.functional.jacobian(lambda t: fn(t).reshape(-1), x).reshape(n, n)
    return float(torch.linalg.slogdet(jac)[1])


@pytest.mark.parametrize("mode", MODES)
def test_each_layer_and_the_model_report_the_log_determinant_of_their_jacobian(mode: str) -> None:
    model = _moved(rs_compile(vector_flow(), mode=mode, device="cpu"), (3,))
    x = torch.randn(1, 3, dtype=torch.float64)
    whole = _log_abs_det(model, x)
    with torch.no_grad():
        h1 = model.an(x)[0]
        h2 = model.c(h1)[0]
        model(x)  # (the layers' own calls above set their logdet: read the model's forward's)
    assert float(model.logdet.detach()[0]) == pytest.approx(whole, abs=1e-10)
    parts = {"an": (x, model.an.logdet), "c": (h1, model.c.logdet), "ic": (h2, model.ic.logdet)}
    for name, (inp, stored) in parts.items():
        layer = getattr(model, name)
        exact = _log_abs_det(lambda t, m=layer: m(t)[0], inp)
        assert float(stored[0]) == pytest.approx(exact, abs=1e-10), name
    assert float(sum(s for _, s in parts.values())[0]) == pytest.approx(whole, abs=1e-10)


def _exported(graph, compiled):  # type: ignore[no-untyped-def]
    namespace: dict[str, object] = {"__name__": "exported_for_test"}
    exec(compile(export(graph), "exported.py", "exec"), namespace)  # generated code
    model = namespace["Model"]()  # type: ignore[operator]
    model.load_state_dict(compiled.state_dict())
    return model.double()


@pytest.mark.parametrize("mode", MODES)
def test_a_repeat_and_each_copy_of_its_group_report_their_share_of_the_log_determinant(mode: str) -> None:
    graph = glow_repeat(3, size=4)
    compiled = _moved(rs_compile(graph, mode=mode, device="cpu"), (3, 4, 4))
    x = torch.rand(2, 3, 4, 4, dtype=torch.float64)
    for model in (compiled, _exported(graph, compiled)):
        model.mode = mode
        with torch.no_grad():
            model(x)
        # the Repeat node 'flow' (model.flow is the model's own flag, so the node's layer has another name):
        # its copies ran inside the model's reversible region, never their own forward
        (repeat,) = [m for m in model.children() if type(m).__name__ == "Repeat"]
        copies = [repeat.blocks[i].logdet for i in range(3)]
        assert all(c is not None for c in copies), type(model).__name__
        for copy, block in zip(copies, repeat.blocks):
            layers = block.actnorm.logdet + block.invconv.logdet + block.coupling.logdet
            assert torch.allclose(copy, layers, rtol=0, atol=1e-12)
        assert repeat.logdet is not None and torch.allclose(repeat.logdet, sum(copies), rtol=0, atol=1e-12)
        assert torch.allclose(repeat.logdet, model.logdet, rtol=0, atol=1e-9)  # (the Squeeze adds nothing)
