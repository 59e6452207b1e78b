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
from compiler_graphs import coupling_repeat, glow, nested_repeat
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
