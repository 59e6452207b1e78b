"""Flows in every mode: the model's log-determinant and its gradients, and the fused affine backward."""
from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import revstudio  # noqa: E402
from revstudio.compiler import runtime as rt  # noqa: E402
from revstudio.core.generate import glow_repeat  # noqa: E402
from revstudio.core.project import load  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
GLOW = ROOT / "resources" / "examples" / "glow_flow.revs"
MODES = ("standard", "reversible", "checkpoint")


def _model(dtype=torch.float64, seed: int = 0, graph=None):
    torch.manual_seed(seed)
    model = revstudio.compile(graph or load(GLOW), dtype=dtype, device="cpu")
    x = torch.randn(4, 3, 16, 16, dtype=dtype)
    model(x)  # ActNorm's data-dependent initialisation
    with torch.no_grad():  # move off the zero-initialised nets so every path carries a gradient
        for p in model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    return model, x


def _nll_step(model, x, mode: str, with_outputs: bool = True):
    model.mode = mode
    xi = x.clone().requires_grad_(True)
    z = model(xi)
    logdet = model.logdet
    loss = -logdet.mean()
    if with_outputs:
        loss = loss + 0.5 * z.pow(2).flatten(1).sum(1).mean()
    grads = torch.autograd.grad(loss, [xi, *model.parameters()])
    return logdet.detach(), grads


@pytest.mark.parametrize("with_outputs", [True, False], ids=["nll", "logdet-only"])
def test_the_log_determinant_and_its_gradients_agree_in_every_mode(with_outputs: bool) -> None:
    model, x = _model()
    ref_logdet, ref = _nll_step(model, x, "standard", with_outputs)
    assert ref_logdet.shape == (4,) and ref_logdet.abs().sum() > 0
    scale = max(float(g.abs().max()) for g in ref)
    for mode in ("reversible", "checkpoint"):
        logdet, grads = _nll_step(model, x, mode, with_outputs)
        assert torch.allclose(logdet, ref_logdet, rtol=0, atol=1e-12), mode
        for g, r in zip(grads, ref):
            assert float((g - r).abs().max()) <= 1e-10 * scale, mode


def test_log_determinant_is_the_sum_of_the_flow_layers() -> None:
    model, x = _model()
    model.mode = "standard"
    with torch.no_grad():
        model(x)
    parts = [model.get_submodule(name).logdet for name in ("actnorm0", "invconv0", "coupling0",
                                                          "actnorm1", "invconv1", "coupling1")]
    assert torch.allclose(model.logdet, sum(parts), rtol=1e-12, atol=1e-12)
    # the change of variables: log|det J| of the whole map, checked against autograd's Jacobian
    one = x[:1].clone()
    jac = torch.autograd.functional.jacobian(lambda t: model(t).flatten(), one).reshape(one.numel(), one.numel())
    with torch.no_grad():
        model(one)
    assert torch.allclose(model.logdet, torch.linalg.slogdet(jac)[1].reshape(1), rtol=1e-8, atol=1e-8)


def test_reversible_float32_log_determinant_gradients_track_standard() -> None:
    model, x = _model(dtype=torch.float32)
    _ld, ref = _nll_step(model, x, "standard")
    _ld, got = _nll_step(model, x, "reversible")
    for g, r in zip(got, ref):
        assert float((g - r).norm()) <= 1e-4 * float(r.norm()) + 1e-6


def test_an_affine_coupling_net_runs_once_per_backward() -> None:
    model, x = _model()
    model.mode = "reversible"
    calls = []
    hooks = [model.get_submodule(f"coupling{i}").net.register_forward_hook(lambda *_a, i=i: calls.append(i))
             for i in range(2)]
    try:
        z = model(x.clone().requires_grad_(True))
        loss = z.square().sum() - model.logdet.sum()
        assert sorted(calls) == [0, 1]  # forward: once each
        calls.clear()
        loss.backward()
        assert sorted(calls) == [0, 1], "backward must rebuild and differentiate from one evaluation"
    finally:
        for h in hooks:
            h.remove()
    region = model._regions[0]
    assert [type(s).__name__ for s in region.steps].count("Affine") == 2
    assert region.flow and not any(isinstance(s, rt.Invertible) and s.module is model.coupling0
                                   for s in region.steps)


def test_finite_differences_of_the_reversible_flow_in_float64() -> None:
    model, _x = _model()
    model.mode = "reversible"
    x = torch.randn(2, 3, 4, 4, dtype=torch.float64, requires_grad=True)

    def fn(t):
        z = model(t)
        return z, model.logdet

    assert torch.autograd.gradcheck(fn, (x,), eps=1e-6, atol=1e-6)


def test_models_without_flows_have_no_log_determinant() -> None:
    model = revstudio.compile(load(ROOT / "resources" / "examples" / "revnet_coupling.revs"), device="cpu")
    model(torch.randn(2, *model.plan.inputs[0].shape))
    assert model.logdet is None and not model.flow


def test_a_repeated_flow_step_sums_every_copy_in_every_mode() -> None:
    torch.manual_seed(0)
    model = revstudio.compile(glow_repeat(3), dtype=torch.float64, device="cpu")
    x = torch.randn(2, 3, 8, 8, dtype=torch.float64)
    model(x)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    model.mode = "standard"
    with torch.no_grad():
        model(x)
    copies = [m.logdet for m in model.modules() if type(m).__name__ in ("ActNorm", "InvConv1x1", "AffineCoupling")]
    assert len(copies) == 9
    assert torch.allclose(model.logdet, sum(copies), rtol=1e-12, atol=1e-12)
    ref_logdet, ref = _nll_step(model, x, "standard")
    scale = max(float(g.abs().max()) for g in ref)
    for mode in ("reversible", "checkpoint"):
        logdet, grads = _nll_step(model, x, mode)
        assert torch.allclose(logdet, ref_logdet, rtol=0, atol=1e-12), mode
        assert max(float((g - r).abs().max()) for g, r in zip(grads, ref)) <= 1e-10 * scale, mode


def test_an_invertible_model_samples_by_inverting_its_output() -> None:
    model, x = _model()
    for mode in MODES:
        model.mode = mode
        with torch.no_grad():
            z = model(x)
            back = model.inverse(z)
        assert torch.allclose(back, x, rtol=0, atol=1e-10), mode
    with pytest.raises(TypeError, match="one per Output node"):
        model.inverse(z, z)


def test_a_model_that_is_not_invertible_end_to_end_says_why() -> None:
    model = revstudio.compile(load(ROOT / "resources" / "examples" / "revnet_coupling.revs"), device="cpu")
    with pytest.raises(NotImplementedError, match="not invertible end to end .*revstudio check"):
        model.inverse(torch.zeros(2, 10))



def test_a_model_of_layout_layers_alone_inverts() -> None:
    """A Squeeze and a Permute between an Input and an Output: a region of layers that only move
    values saves nothing and is dropped, except where it is the whole model, which then inverts
    as a flow does (it said "not invertible end to end")."""
    from revstudio.core.generate import Builder

    b = Builder("layout-only")
    b.node("Input", "x", shape=[4, 8, 8])
    b.chain("x.out", b.node("Squeeze", "sq"), b.node("Permute", "pm", kind="reverse"), b.node("Output", "y"))
    graph = b.done()
    assert [r.id for r in revstudio.check(graph).regions] == ["region-sq"]
    model = revstudio.compile(graph, device="cpu").double()
    x = torch.randn(2, 4, 8, 8, dtype=torch.float64)
    for mode in MODES:
        model.mode = mode
        with torch.no_grad():
            assert torch.equal(model.inverse(model(x)), x), mode

def _affine_flow(blocks: int):
    from revstudio.core.generate import Builder, _body

    b = Builder("affine-flow")
    b.node("Input", "x", shape=[4, 8, 8])

    def net(bb, src):
        bb.node("Conv", "c", out_channels=4, kernel_size=3, padding="same")
        return bb.chain(src, "c")

    b.graph.groups["net"] = _body("net", net)
    src = "x.out"
    for i in range(blocks):
        b.node("AffineCoupling", f"a{i}", net="net", clamp=2.0)
        b.node("Permute", f"p{i}", kind="reverse")
        src = b.chain(src, f"a{i}", f"p{i}")
    b.node("Output", "z")
    b.chain(src, "z")
    return b.done()


def test_affine_streams_rebuild_exactly_with_compensated_or_float64_streams() -> None:
    torch.manual_seed(0)
    model = revstudio.compile(_affine_flow(6), device="cpu")  # float32: compensated pair streams
    x = torch.randn(4, 4, 8, 8)
    errors = {}
    for setting in (None, torch.float64, torch.float32):
        model.stream_dtype = setting
        xi = x.clone().requires_grad_(True)
        z = model(xi)
        (z.square().sum() - model.logdet.sum()).backward()
        (errors[setting],) = model.inversion_errors().values()
    assert errors[None] < 1e-12 and errors[torch.float64] < 1e-12
    assert errors[torch.float32] > 1e3 * errors[None]  # what plain float32 streams lose


@pytest.mark.parametrize("fmt", [None, torch.channels_last], ids=["automatic", "channels_last"])
def test_coupling_nets_read_the_same_layout_in_forward_and_in_the_rebuild(fmt) -> None:
    """The streams keep their layout through the Permutes between couplings, so each
    coupling's net reads its input in one layout in forward and in backward's rebuild, and
    gives the very same (s, t): oneDNN's convolutions differ in the last bits between
    layouts (on some CPUs), and the rebuild (and the gradients, from the same evaluation)
    would then not undo the forward exactly. Automatically a flow keeps the input's layout
    (see ``Region.layout_of``)."""
    from torch import nn

    torch.manual_seed(0)
    model = revstudio.compile(_affine_flow(6), device="cpu")
    model.memory_format = fmt
    seen: dict[str, list[tuple[bool, bool, torch.Tensor]]] = {}

    def record(name):
        def hook(mod, inp, out):
            channels_innermost = inp[0].stride()[1] == 1  # channels_last, dense or a channel slice
            y = out[0] if isinstance(out, tuple) else out
            seen.setdefault(name, []).append((torch.is_grad_enabled(), channels_innermost, y.detach().clone()))
        return hook

    convs = [(n, m) for n, m in model.named_modules() if isinstance(m, nn.Conv2d)]
    assert len(convs) == 6
    for name, conv in convs:
        conv.register_forward_hook(record(name))
    xi = torch.randn(4, 4, 8, 8).requires_grad_(True)
    z = model(xi)
    (z.square().sum() - model.logdet.sum()).backward()
    want = fmt == torch.channels_last
    assert z.is_contiguous(memory_format=torch.channels_last) == want  # the streams' layout, kept
    for name, calls in seen.items():
        (fwd,), (bwd,) = [c for c in calls if not c[0]], [c for c in calls if c[0]]
        assert fwd[1] == bwd[1] == want, name  # one layout in forward and in the rebuild
        assert torch.equal(fwd[2], bwd[2]), name  # the same (s, t), bit for bit
    (error,) = model.inversion_errors().values()
    assert error < 1e-12


@pytest.mark.parametrize("fmt", [None, torch.channels_last, torch.contiguous_format])
def test_permute_keeps_the_memory_layout(fmt) -> None:
    from revstudio.nodes.torch_modules.flows import Permute

    perm = Permute(6, kind="shuffle", seed=3)
    x = torch.randn(2, 6, 3, 5)
    if fmt is not None:
        x = x.contiguous(memory_format=fmt)
    (y,) = perm(x)
    assert torch.equal(y, x.index_select(1, perm.perm))
    assert y.stride() == x.stride()
    (back,) = perm.inverse(y)
    assert torch.equal(back, x) and back.stride() == x.stride()


@pytest.mark.parametrize(("shape", "fmt"), [
    ((4, 6, 3, 5), torch.contiguous_format), ((4, 6, 3, 5), torch.channels_last),
    ((4, 6, 7), torch.contiguous_format), ((4, 6), torch.contiguous_format)],
    ids=["image", "image-channels-last", "sequence", "vector"])
def test_an_invconv_inverse_rebuilds_a_dense_buffer_of_its_own(shape, fmt) -> None:
    """A reversible region updates in place only a dense buffer of its own; the einsum handed
    back a view of a channels-first product, so after an InvConv1x1's inverse every update
    backward ran made new buffers (random network 72: 4.4 % over its estimate at batch 8). Where
    no gradient is taken the inverse now writes a new buffer in its input's layout; with one, it
    is the einsum it was."""
    from revstudio.compiler.runtime_streams import unshared
    from revstudio.nodes.torch_modules.flows import InvConv1x1, _mix_channels

    torch.manual_seed(0)
    layer = InvConv1x1(6, lu=False)
    y = torch.randn(*shape).contiguous(memory_format=fmt)
    inverse = torch.linalg.inv(layer.weight.detach())
    with torch.no_grad():
        (x,) = layer.inverse(y)
    assert unshared(x) and x.stride() == y.stride()
    assert torch.allclose(x, _mix_channels(inverse, y), rtol=1e-5, atol=1e-6)
    (x_grad,) = layer.inverse(y)  # with autograd: the einsum, differentiable in the weight
    assert x_grad.requires_grad and torch.allclose(x_grad, x, rtol=1e-5, atol=1e-6)
