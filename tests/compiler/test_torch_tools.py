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
