"""torch.func over a compiled model in checkpoint mode: grad and vjp are refused in words that name
checkpoint mode and the way out (torch's own said only that it did not "yet support saved tensor
hooks"); vmap and jvp, which torch.utils.checkpoint does not stop, still run."""
from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from torch.func import functional_call, grad, jvp, vjp, vmap  # noqa: E402

import revstudio as rs  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "resources" / "examples"


def _model(example: str):
    graph = rs.load(str(EXAMPLES / f"{example}.revs"))
    shape = next(n for n in graph.nodes.values() if n.type == "Input").params["shape"]
    torch.manual_seed(0)
    return rs.compile(graph, mode="checkpoint", device="cpu"), torch.randn(2, *shape)


# revnet_wired: its checkpointed parts are reversible regions; two_branch: ordinary layers only
@pytest.mark.parametrize(("example", "where"), [("revnet_wired", "reversible region 'region-block0_split'"),
                                                ("two_branch", "the layers recomputed in backward")])
@pytest.mark.parametrize("transform", ["grad", "vjp"])
def test_grad_and_vjp_in_checkpoint_mode_name_the_mode_and_the_way_out(example, where, transform) -> None:
    model, x = _model(example)
    params = {k: v.detach() for k, v in model.named_parameters()}
    with pytest.raises(RuntimeError) as info:
        if transform == "grad":
            grad(lambda p: functional_call(model, p, (x,)).square().sum())(params)
        else:
            vjp(model, x)
    text = str(info.value)
    assert text.startswith(where + ":") and "checkpoint mode" in text and 'model.mode = "standard"' in text, text
    model.mode = "standard"  # the way out it names works, with the same weights
    got = grad(lambda p: functional_call(model, p, (x,)).square().sum())(params)
    model(x).square().sum().backward()
    assert all(torch.allclose(got[k], p.grad, rtol=1e-5, atol=1e-6) for k, p in model.named_parameters())


def test_vmap_and_jvp_still_run_in_checkpoint_mode() -> None:
    model, x = _model("revnet_wired")
    with torch.no_grad():
        want = model(x)
    assert torch.allclose(vmap(lambda row: model(row.unsqueeze(0)).squeeze(0))(x), want, atol=1e-5)
    out, _ = jvp(model, (x,), (torch.ones_like(x),))
    assert torch.allclose(out, want, atol=1e-5)
