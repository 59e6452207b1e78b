"""What a PyTorch user does with a freshly compiled model (``rs.compile``), before any batch has
run through it: the torch tools either work or refuse in words about this model, never about
layers it does not have."""
from __future__ import annotations

import pytest
import torch
from compiler_graphs import coupling_repeat, glow

import revstudio.compiler as C

torch.set_num_threads(1)


def test_torch_export_of_a_fresh_model_without_actnorm_runs_in_standard_mode() -> None:
    """torch.export of a model straight from rs.compile was refused for "the data-dependent
    initialisation of its ActNorm layers" when the network had no ActNorm at all: the first forward
    always ran the initialisation pass, which refuses under torch.export."""
    model = C.compile(coupling_repeat(2, head=True), mode="standard", device="cpu")
    x = torch.randn(2, 4, 4, 4)
    program = torch.export.export(model, (x,))  # before the model has seen any batch
    with torch.no_grad():
        assert torch.allclose(program.module()(x), model(x), atol=1e-6)
    model.mode = "reversible"  # the refusal there names the region and the mode to use, not ActNorm
    with pytest.raises(RuntimeError) as info:
        torch.export.export(model, (x,))
    assert "reversible region 'region-rep'" in str(info.value) and "ActNorm" not in str(info.value)


def test_torch_export_of_a_fresh_flow_still_says_to_run_a_batch_first() -> None:
    model = C.compile(glow(), mode="standard", device="cpu")
    x = torch.randn(2, 2, 4, 4)
    with pytest.raises(RuntimeError, match="initialisation of its ActNorm layers"):
        torch.export.export(model, (x,))
    model(x)  # ActNorm sets its scale and shift from this batch
    program = torch.export.export(model, (x,))
    with torch.no_grad():
        assert torch.allclose(program.module()(x), model(x), atol=1e-5)


@pytest.mark.parametrize("mode", ["standard", "reversible", "checkpoint"])
def test_a_model_moved_to_the_meta_device_gives_shapes_in_every_mode(mode: str) -> None:
    """model.to("meta") (shapes without memory: deferred initialisation, FSDP) failed in reversible
    mode with torch's "unknown device type for autocast in get_autocast_dispatch_key_from_device_type"."""
    model = C.compile(coupling_repeat(2, head=True), mode=mode, device="cpu").to("meta")
    x = torch.randn(5, 4, 4, 4, device="meta", requires_grad=True)
    y = model(x)
    assert y.device.type == "meta" and tuple(y.shape) == (5, 3)
    y.sum().backward()
    assert x.grad is not None and tuple(x.grad.shape) == (5, 4, 4, 4)
    assert all(p.grad is not None and p.grad.device.type == "meta" for p in model.parameters())
    with torch.no_grad():
        assert tuple(model(x).shape) == (5, 3)


@pytest.mark.parametrize("mode", ["standard", "reversible", "checkpoint"])
def test_replacing_a_nodes_layer_is_refused_naming_the_node(mode: str) -> None:
    """``model.fc = nn.Linear(3, 5)`` (a new classifier head, as one does with torchvision models) was
    accepted and silently ignored: forward kept running the old layer, which left model.parameters(),
    while the new one trained on nothing. The same inside a group body, reversible region or not."""
    model = C.compile(coupling_repeat(2, head=True), mode=mode, device="cpu")
    x = torch.randn(2, 4, 4, 4)
    before = model(x)
    with pytest.raises(AttributeError, match=r"cannot replace 'fc': it is the layer of node 'fc' in the model.*"
                                             r"compile again.*nn\.Sequential\(model, new_layer\)"):
        model.fc = torch.nn.Linear(3, 5)
    body = model.rep.blocks[0].ac.f
    with pytest.raises(AttributeError, match=r"cannot replace 'conv': it is the layer of node 'conv' in group "):
        body.conv = torch.nn.Conv2d(2, 2, 3, padding=1)
    with pytest.raises(AttributeError, match="cannot replace 'fc'"):
        del model.fc
    assert isinstance(model.fc, torch.nn.Module) and torch.equal(model(x), before)
    model.fc = model.fc  # the same layer again, a new weight and an attribute of one's own are fine
    model.fc.weight = torch.nn.Parameter(torch.zeros_like(model.fc.weight))
    model.extra = torch.nn.Linear(3, 3)
    assert torch.equal(model(x), model.fc.bias.expand(2, 3))
