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


def _flat_coupling():
    """Input (8) -> AdditiveCoupling whose F and G are Linear -> Norm(batch): one value per channel
    and sample, so a training batch of one sample gives each batch Norm a single value."""
    from revstudio.core.graph import Graph

    g = Graph("flat")
    for name in ("f", "g"):
        body = Graph(name)
        body.add_node("GroupInput", "i")
        body.add_node("Linear", "fc", {"out_features": 4})
        body.add_node("Norm", "bn", {"kind": "batch"})
        body.add_node("GroupOutput", "o")
        for a, b in (("i", "fc"), ("fc", "bn"), ("bn", "o")):
            body.connect(f"{a}.out", f"{b}.in")
        g.set_group(name, body)
    g.add_node("Input", "v", {"shape": [8]})
    g.add_node("AdditiveCoupling", "cp", {"f": "f", "g": "g"})
    g.add_node("Output", "out")
    g.connect("v.out", "cp.in")
    g.connect("cp.out", "out.in")
    return g


@pytest.mark.parametrize("mode", ["standard", "reversible", "checkpoint"])
def test_a_batch_of_one_through_a_batch_norm_names_the_nodes_and_the_way_out(mode: str) -> None:
    """A caller's last, short batch of one sample failed with torch's bare "Expected more than 1 value
    per channel when training", naming no node and no cure."""
    model = C.compile(_flat_coupling(), mode=mode, device="cpu")
    with pytest.raises(ValueError) as info:
        model(torch.randn(1, 8, requires_grad=True))
    text = str(info.value)
    assert text.startswith("group 'f' / node 'bn', group 'g' / node 'bn' (Norm, kind batch) sees one value per "
                           "channel in this training batch of 1"), text
    assert "batch of 2 or more" in text and "model.eval()" in text and "Expected more than 1 value" in text
    assert model(torch.randn(2, 8)).shape == (2, 8)
    model.eval()
    assert model(torch.randn(1, 8)).shape == (1, 8)


def test_jit_trace_of_checkpoint_mode_records_the_forward() -> None:
    """torch.jit.trace in checkpoint mode failed torch's sanity check ("Graphs differed across
    invocations"): each trace of torch.utils.checkpoint records another graph."""
    import warnings

    model = C.compile(coupling_repeat(2, head=True), mode="checkpoint", device="cpu")
    x = torch.randn(2, 4, 4, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the tracer's warnings about the input checks' Python branches)
        traced = torch.jit.trace(model, (x,))
    assert torch.allclose(traced(x), model(x), atol=1e-6)
