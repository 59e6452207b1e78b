"""What a reversible region takes apart (a Repeat's copies, a Group's body, an AdditiveCoupling's F and G)
cannot be replaced (refused) and their hooks never fire (warned of), in words naming the node; what a PyTorch user does to a model otherwise
(load_state_dict, .to, deepcopy, pickle, a new attribute, hooks on the layers inside) keeps working."""
from __future__ import annotations

import copy
import pickle
import re
import warnings

import pytest
import torch
from compiler_graphs import coupling_repeat, glow, nested_repeat, wired_revnet
from torch import nn

import revstudio.compiler as C
from revstudio.compiler.held import HookNeverFires

torch.set_num_threads(1)
MODES = ["standard", "checkpoint", "reversible"]


class Zero(nn.Module):
    """A body that returns zeros (the tuple convention): put in F's place, it would change the output."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.ones(1))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (x * 0 * self.w,)


def _model(mode: str, graph=None):
    torch.manual_seed(0)
    return C.compile(graph if graph is not None else coupling_repeat(2, head=True), mode=mode, device="cpu")


@pytest.mark.parametrize("mode", MODES)
def test_replacing_a_couplings_f_or_g_is_refused_naming_the_node(mode: str) -> None:
    """``coupling.f = module`` was accepted and silently ignored: the region kept running the old F
    while the new one left forward (and trained on nothing)."""
    model = _model(mode)
    x = torch.randn(2, 4, 4, 4)
    before = model(x)
    ac = model.rep.blocks[0].ac
    with pytest.raises(AttributeError, match=r"cannot replace 'f': it is F of node 'ac' \(AdditiveCoupling\) in "
                                             r"group 'block', whose reversible region runs the layers.*compile "
                                             r"again.*nn\.Sequential\(model, new_layer\)"):
        ac.f = Zero()
    with pytest.raises(AttributeError, match=r"cannot replace 'g': it is G of node 'ac'"):
        ac.g = None
    with pytest.raises(AttributeError, match=r"cannot replace 'g': it is G of node 'ac'"):
        del ac.g
    with pytest.raises(AttributeError, match=r"cannot replace 'f'"):
        ac.add_module("f", Zero())
    ac.f = ac.f  # the same body again and an attribute of one's own are fine
    ac.extra = nn.Linear(2, 2)
    assert torch.equal(model(x), before)


@pytest.mark.parametrize("mode", MODES)
def test_replacing_a_repeats_copy_is_refused_naming_the_copy(mode: str) -> None:
    model = _model(mode)
    x = torch.randn(2, 4, 4, 4)
    before = model(x)
    with pytest.raises(AttributeError, match=r"cannot replace '0': it is copy 0 of node 'rep' \(Repeat\) in the "
                                             r"model"):
        model.rep.blocks[0] = Zero()
    with pytest.raises(AttributeError, match=r"cannot replace '1': it is copy 1 of node 'rep'"):
        del model.rep.blocks[1]
    with pytest.raises(AttributeError, match=r"cannot add '2': it is copy 2 of node 'rep'"):
        model.rep.blocks.append(Zero())
    with pytest.raises(AttributeError, match=r"cannot replace 'blocks': it is the list of copies of node 'rep'"):
        model.rep.blocks = nn.ModuleList([Zero(), Zero()])
    assert len(model.rep.blocks) == 2 and torch.equal(model(x), before)


@pytest.mark.parametrize("kind", ["Repeat", "Group"])
def test_a_coupling_nested_in_a_group_is_held_too(kind: str) -> None:
    model = _model("reversible", nested_repeat(kind=kind))
    inner = model.rep.blocks[1].r
    ac = (inner.blocks[0] if kind == "Repeat" else inner.body).ac
    with pytest.raises(AttributeError, match=r"cannot replace 'f': it is F of node 'ac' \(AdditiveCoupling\)"):
        ac.f = Zero()
    if kind == "Group":
        with pytest.raises(AttributeError, match=r"cannot replace 'body': it is the body of node 'r' \(Group\) in "
                                                 r"group 'stack'"):
            inner.body = Zero()


@pytest.mark.parametrize("mode", MODES)
def test_replacing_an_affine_couplings_net_is_refused(mode: str) -> None:
    """A new net ran (the region calls it through the module) but in reversible mode never trained: the
    region hands autograd the parameters the net had when it was built."""
    model = _model(mode, glow())
    with pytest.raises(AttributeError, match=r"cannot replace 'net': it is the net of node 'aff' "
                                             r"\(AffineCoupling\) in the model"):
        model.aff.net = Zero()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("register", ["register_forward_hook", "register_forward_pre_hook",
                                      "register_full_backward_hook", "register_full_backward_pre_hook"])
def test_a_hook_that_will_never_fire_is_warned_of_at_registration(mode: str, register: str) -> None:
    """Hooks on a Repeat, its copies or a coupling node's module were accepted and never called, silently."""
    model = _model(mode)
    called: list[str] = []
    for module, words in ((model.rep, "node 'rep' (Repeat) in the model"),
                          (model.rep.blocks[1], "node 'rep' (Repeat) in the model"),
                          (model.rep.blocks[0].ac, "node 'ac' (AdditiveCoupling) in group 'block'")):
        with pytest.warns(HookNeverFires, match=rf"a hook on {re.escape(words)} .*will never be called.*Hook a "
                                                r"layer inside it"):
            getattr(module, register)(lambda *args: called.append("held"))
    # F's own module, the layers inside, and the model itself are called: their hooks fire, no warning
    fired: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.rep.blocks[0].ac.f.register_forward_hook(lambda *args: fired.append("f"))
        model.fc.register_forward_pre_hook(lambda *args: fired.append("fc"))
        model.register_forward_hook(lambda *args: fired.append("model"))
    x = torch.randn(2, 4, 4, 4, requires_grad=True)
    model(x).sum().backward()
    assert fired[:3] == ["f", "fc", "model"] and called == []  # (backward's recompute may fire f, fc again)


def test_hooks_on_every_module_warn_once_per_node() -> None:
    """A tool that hooks every module (a summary, activation statistics) gets one warning per node, not
    one per copy, and no refusal."""
    model = _model("reversible", coupling_repeat(4, head=True))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        handles = [m.register_forward_hook(lambda *args: None) for m in model.modules()]
    texts = sorted({str(w.message).split(" (its own")[0] for w in caught if w.category is HookNeverFires})
    assert texts == ["a hook on node 'ac' (AdditiveCoupling) in group 'block'", "a hook on node 'rep' (Repeat) in "
                     "the model"]
    for h in handles:
        h.remove()
    assert model(torch.randn(2, 4, 4, 4)).shape == (2, 3)


@pytest.mark.parametrize("mode", MODES)
def test_what_a_training_loop_does_to_a_held_model_still_works(mode: str) -> None:
    """load_state_dict, .to(dtype), deepcopy, pickling: none is refused, and the copies stay held."""
    model = _model(mode)
    x = torch.randn(2, 4, 4, 4, dtype=torch.float64)
    other = _model(mode)
    with torch.no_grad():
        for p in other.parameters():
            p.add_(1.0)
    model.load_state_dict(other.state_dict())
    model.to(torch.float64)
    for twin in (copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
        assert torch.equal(twin(x), model(x))
        with pytest.raises(AttributeError, match="cannot replace 'f'"):
            twin.rep.blocks[0].ac.f = Zero()
        with pytest.warns(HookNeverFires, match="a hook on node 'rep' "):
            twin.rep.blocks[0].register_forward_hook(lambda *args: None)
    y = model(x)
    y.sum().backward()
    assert all(p.grad is not None for p in model.parameters())


def _shared_activation():
    """Conv -> relu, the Conv's output also read by the Merge after it (forward copies for an in-place relu)."""
    from revstudio.core.graph import Graph

    g = Graph("shared")
    g.add_node("Input", "x", {"shape": [4, 4, 4]})
    g.add_node("Conv", "c", {"out_channels": 4, "kernel_size": 3, "padding": "same"})
    g.add_node("Activation", "a", {"fn": "relu"})
    g.add_node("Merge", "m", {"mode": "add"})
    g.add_node("Output", "y")
    for a, b in (("x.out", "c.in"), ("c.out", "a.in"), ("c.out", "m.in0"), ("a.out", "m.in1"), ("m.out", "y.in")):
        g.connect(a, b)
    return g


@pytest.mark.parametrize("mode", MODES)
def test_setting_what_the_program_read_at_build_is_refused_naming_the_node(mode: str) -> None:
    """``coupling.split = 4`` (and a Split's ``sizes``, an in-place flag) were taken and ignored: the region
    sliced its streams by the split it was built with, forward had decided whether to copy for the layer."""
    flow = _model(mode, glow())
    aff = flow.aff
    with pytest.raises(AttributeError, match=r"cannot set 'split' of node 'aff' \(AffineCoupling\) in the model: "
                                             r"the model read it once when it was built: its reversible region "
                                             r"slices the streams by the value it had then.*compile again"):
        aff.split = 1
    with pytest.raises(AttributeError, match=r"cannot set 'split' of node 'aff'"):
        del aff.split
    revnet = _model(mode)
    with pytest.raises(AttributeError, match=r"cannot set 'split' of node 'ac' \(AdditiveCoupling\) in group "
                                             r"'block'"):
        revnet.rep.blocks[1].ac.split = 1
    wired = _model(mode, wired_revnet(1))
    for name, value in (("sizes", [1, 3]), ("dim", 1)):
        with pytest.raises(AttributeError, match=rf"cannot set '{name}' of node 'b0s' \(Split\) in the model"):
            setattr(wired.b0s, name, value)
    with pytest.raises(AttributeError, match=r"cannot set 'sizes' of node 'b0c' \(Concat\)"):
        wired.b0c.sizes = [3, 1]
    plain = _model(mode, _shared_activation())
    with pytest.raises(AttributeError, match=r"cannot set 'inplace' of node 'a' \(Activation\) in the model: .*"
                                             r"could overwrite a value another layer still reads"):
        plain.a.inplace = True
    assert plain.a.inplace is False and aff.split == 4


@pytest.mark.parametrize("mode", MODES)
def test_what_is_read_at_every_call_can_still_be_set(mode: str) -> None:
    """A coupling's ``clamp`` is read by each call, so a new value takes effect, as is an attribute of one's
    own; the refusals survive deepcopy and pickling, and the copies run as the model does."""
    model = _model(mode, glow())
    x = torch.randn(2, 2, 4, 4)
    model(x)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.1)
        before = model(x)
        model.aff.clamp = 0.25
        assert not torch.equal(model(x), before)
    model.aff.note = "mine"
    for twin in (copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
        with pytest.raises(AttributeError, match="cannot set 'split' of node 'aff'"):
            twin.aff.split = 1
        with torch.no_grad():
            assert torch.equal(twin(x), model(x))
