"""The compiled module: parameters at once, stable keys, one set of weights for every mode,
eager once-only data-dependent init, clear errors."""
from __future__ import annotations

import pytest
import torch
from compiler_graphs import birnn_first, coupling_repeat, glow, two_branch, wired_revnet

import revstudio
import revstudio.compiler as C
from revstudio.core.check import check
from revstudio.core.graph import Graph

torch.set_num_threads(1)


def test_parameters_exist_right_after_compile_with_inferred_sizes() -> None:
    g = coupling_repeat(3, head=True)
    model = C.compile(g, device="cpu")
    assert sum(p.numel() for p in model.parameters()) == check(g).parameters
    assert model.fc.weight.shape == (3, 4)  # in_features inferred, no dummy forward
    assert next(model.parameters()).device.type == "cpu"
    assert revstudio.compile is C.compile


def test_state_dict_keys_derive_from_node_ids_and_stay_stable() -> None:
    keys = set(C.compile(wired_revnet(2), device="cpu").state_dict())
    assert {"b0f.weight", "b0f.bias", "b1g.weight"} <= keys
    g = wired_revnet(2)
    g.add_node("Conv", "class", {"out_channels": 4, "kernel_size": 1})  # a hostile id elsewhere
    g.add_node("Output", "y2")
    g.connect("b1c.out", "class.in")
    g.connect("class.out", "y2.in")
    keys2 = set(C.compile(g, device="cpu").state_dict())
    assert keys <= keys2
    assert all(k.split(".")[0].isidentifier() for k in keys2)
    repeat = set(C.compile(coupling_repeat(2), device="cpu").state_dict())
    assert "rep.blocks.1.ac.g.conv.weight" in repeat


def test_modes_share_the_same_weights() -> None:
    torch.manual_seed(0)
    model = C.compile(wired_revnet(2), device="cpu", dtype=torch.float64)
    params = [id(p) for p in model.parameters()]
    x = torch.randn(2, 4, 4, 4, dtype=torch.float64)
    outs = {}
    for mode in ("reversible", "standard", "checkpoint"):
        model.mode = mode
        assert [id(p) for p in model.parameters()] == params
        outs[mode] = model(x)
    assert torch.allclose(outs["reversible"], outs["standard"], atol=1e-12)
    assert torch.equal(outs["checkpoint"], outs["standard"])
    with pytest.raises(ValueError, match="reversible, standard, checkpoint"):
        model.mode = "fast"


def test_one_tensor_per_input_and_output_node() -> None:
    g = Graph("two_io")
    g.add_node("Input", "a", {"shape": [3]})
    g.add_node("Input", "b", {"shape": [3]})
    g.add_node("Merge", "m", {"mode": "mul"})
    g.add_node("Linear", "fc", {"out_features": 2})
    g.add_node("Output", "p")
    g.add_node("Output", "q")
    for s, d in (("a.out", "m.in0"), ("b.out", "m.in1"), ("m.out", "fc.in"), ("fc.out", "p.in"), ("m.out", "q.in")):
        g.connect(s, d)
    model = C.compile(g, device="cpu")
    a, b = torch.randn(5, 3), torch.randn(5, 3)
    p, q = model(a, b)
    assert p.shape == (5, 2) and torch.equal(q, a * b)
    with pytest.raises(TypeError, match=r"expected 2 input tensor\(s\), one per Input node in this order: "
                                        r"'a' \(batch, 3\), 'b' \(batch, 3\); got 1"):
        model(a)
    with pytest.raises(ValueError, match=r"input 'b' expects tensors of shape \(batch, 3\), got \(5, 4\)"):
        model(a, torch.randn(5, 4))
    assert "regions: none" in repr(model) and "mode='reversible'" in repr(model)


def test_compile_refuses_a_graph_with_errors_and_names_the_node() -> None:
    g = Graph("bad")
    g.add_node("Input", "x", {"shape": [4]})
    g.add_node("Conv", "c", {"out_channels": 2, "kernel_size": 3})
    g.add_node("Output", "y")
    g.connect("x.out", "c.in")
    g.connect("c.out", "y.in")
    with pytest.raises(C.CompileError, match="c"):
        C.compile(g, device="cpu")
    with pytest.raises(C.CompileError, match="mode"):
        C.compile(wired_revnet(1), mode="fast")


def test_data_dependent_init_runs_once_eagerly() -> None:
    torch.manual_seed(0)
    model = C.compile(glow(), device="cpu", dtype=torch.float64)
    assert not bool(model.an.initialized)
    x = torch.randn(16, 2, 4, 4, dtype=torch.float64) * 3 + 1
    rng_before = torch.get_rng_state()
    model.initialize(x)
    assert torch.equal(torch.get_rng_state(), rng_before)
    assert bool(model.an.initialized)
    h = model.sq(x)[0]
    z = model.an(h)[0]
    assert torch.allclose(z.mean((0, 2, 3)), torch.zeros(8, dtype=torch.float64), atol=1e-10)
    scale = model.an.log_scale.detach().clone()
    model(x * 5)  # a later batch must not re-initialise
    assert torch.equal(model.an.log_scale.detach(), scale)
    fresh = C.compile(glow(), device="cpu", dtype=torch.float64)
    fresh(x)  # the first forward initialises by itself
    assert torch.allclose(fresh.an.log_scale, scale)


def test_state_dict_round_trip_keeps_actnorm_initialised() -> None:
    torch.manual_seed(0)
    model = C.compile(glow(), device="cpu")
    x = torch.randn(8, 2, 4, 4)
    y = model(x)
    clone = C.compile(glow(), device="cpu")
    clone.load_state_dict(model.state_dict())
    assert torch.allclose(clone(x), y, atol=1e-5)


@pytest.mark.parametrize("make", [birnn_first, lambda: birnn_first("rnn_relu"), lambda: two_branch("stack"),
                                  lambda: two_branch("concat"), lambda: two_branch("stack", zero_branch=True),
                                  lambda: two_branch("concat", zero_branch=True)])
def test_birnn_seeds_forward_backward_and_gradcheck(make) -> None:
    torch.manual_seed(0)
    g = make()
    model = C.compile(g, device="cpu", dtype=torch.float64)
    (inp,) = model.plan.inputs
    x = torch.randn(2, *inp.shape, dtype=torch.float64, requires_grad=True)
    y = model(x)
    y.square().sum().backward()
    assert all(p.grad is not None for p in model.parameters() if p.requires_grad)
    assert torch.autograd.gradcheck(lambda t: model(t), (x,), eps=1e-6, atol=1e-6)
    params = list(model.parameters())[:2]
    assert torch.autograd.gradcheck(lambda *ws: _with_weights(model, params, ws, x), tuple(
        p.detach().clone().requires_grad_() for p in params), eps=1e-6, atol=1e-6)


def _with_weights(model, params, ws, x):
    """The model's output as a function of some of its weights (for gradcheck)."""
    names = {id(p): n for n, p in model.named_parameters()}
    return torch.func.functional_call(model, {names[id(p)]: w for p, w in zip(params, ws)}, (x,))


def test_gradcheck_through_a_reversible_region() -> None:
    torch.manual_seed(0)
    model = C.compile(coupling_repeat(2, size=3), device="cpu", dtype=torch.float64)
    x = torch.randn(2, 4, 3, 3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: model(t), (x,), eps=1e-6, atol=1e-6)


def test_moving_or_casting_the_model_keeps_regions_working() -> None:
    torch.manual_seed(0)
    model = C.compile(coupling_repeat(2), device="cpu", dtype=torch.float32)
    model.double()
    assert model.dtype == torch.float64
    x = torch.randn(2, 4, 4, 4, dtype=torch.float64, requires_grad=True)
    model(x).sum().backward()
    assert x.grad is not None and x.grad.dtype == torch.float64
    assert set(model.inversion_errors()) == {"region-rep"}


def test_invertible_bodies_invert_through_the_catalog_modules() -> None:
    torch.manual_seed(0)
    model = C.compile(coupling_repeat(3), device="cpu", dtype=torch.float64)
    x = torch.randn(2, 4, 4, 4, dtype=torch.float64)
    with torch.no_grad():
        (y,) = model.rep(x)
        (back,) = model.rep.inverse(y)  # Repeat.inverse -> each body's inverse (its region backwards)
    assert torch.allclose(back, x, atol=1e-12) and not torch.allclose(y, x)
    plain = C.compile(_plain_group(), device="cpu")
    with pytest.raises(NotImplementedError, match="not invertible"):
        plain.grp.body.inverse(torch.randn(1, 4, 4, 4))


def _plain_group() -> Graph:
    from compiler_graphs import conv_body

    g = Graph("plain_group")
    g.set_group("body", conv_body(4))
    g.add_node("Input", "x", {"shape": [4, 4, 4]})
    g.add_node("Group", "grp", {"group": "body"})
    g.add_node("Output", "y")
    g.connect("x.out", "grp.in")
    g.connect("grp.out", "y.in")
    return g


def test_deepcopy_gives_an_independent_model() -> None:
    import copy

    torch.manual_seed(0)
    model = C.compile(wired_revnet(2), device="cpu", dtype=torch.float64)
    twin = copy.deepcopy(model)
    x = torch.randn(2, 4, 4, 4, dtype=torch.float64)
    before = twin(x)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(1.0)  # only the original changes
    assert torch.equal(twin(x), before)
    twin.mode = "standard"
    assert model.mode == "reversible"
    assert not torch.allclose(model(x), before)
