"""A checkpoint's recompute runs an AffineCoupling's forward again inside backward (where the
coupling is not its segment's last step to keep something). It stored that rerun's
log-determinant as the module's ``logdet``, which kept the rerun's graph alive, and with it the
clamp's tanh the graph saved, until the next forward: a half-stream per coupling beyond what
backward needs (a random network with two couplings in one region at batch 32: 1,400,600 B at
the peak, 1,267,784 B without them)."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from revstudio.compiler import compile as compile_graph  # noqa: E402
from revstudio.core.generate import Builder, _body  # noqa: E402
from revstudio.diagnostics.memory import default_loss  # noqa: E402


def _two_couplings(lu: bool = True):
    """Conv stem -> AffineCoupling -> ActNorm -> InvConv1x1 -> AffineCoupling -> pooled Linear."""
    b = Builder("two-couplings")
    b.node("Input", "x", shape=[1, 8, 8])
    b.graph.groups["net"] = _body("net", lambda bb, s: bb.chain(
        s, bb.node("Conv", "hidden", out_channels=8, kernel_size=3, padding="same"),
        bb.node("Activation", "relu", fn="relu"),
        bb.node("Conv", "st", out_channels=4, kernel_size=3, padding="same")))
    b.chain("x.out", b.node("Conv", "stem", out_channels=4, kernel_size=3, padding="same"),
            b.node("AffineCoupling", "ac1", net="net"), b.node("ActNorm", "an"), b.node("InvConv1x1", "ic", lu=lu),
            b.node("AffineCoupling", "ac2", net="net"), b.node("Pool", "pool", kind="global_avg"),
            b.node("Linear", "head", out_features=10), b.node("Output", "y"))
    return b.done()


def test_a_checkpoint_recompute_leaves_the_forwards_logdet() -> None:
    torch.manual_seed(0)
    model = compile_graph(_two_couplings(), mode="checkpoint")
    model.train()
    out = model(torch.randn(4, 1, 8, 8))
    couplings = {name: m for name, m in model.named_modules() if type(m).__name__ == "AffineCoupling"}
    assert len(couplings) == 2
    forward = {name: m.logdet for name, m in couplings.items()}
    default_loss(out).backward()
    for name, m in couplings.items():
        assert m.logdet is forward[name], name  # not the recompute's (which kept its graph alive)
    assert all(p.grad is not None for p in model.parameters())


def test_a_reversible_backward_leaves_no_graph_in_a_flow_layers_logdet() -> None:
    """A reversible region's backward reruns each flow layer to differentiate it, and the layer
    stores that rerun's log-determinant as its ``logdet``: with a plain weight, a graph holding
    its slogdet's LU factors (C x C) until the next forward where the loss reads no log-det. It
    now keeps the value alone; where the loss reads the log-det, its gradients are standard
    mode's."""
    torch.manual_seed(0)
    graph = _two_couplings(lu=False)
    model = compile_graph(graph, mode="reversible")
    model.train()
    x = torch.randn(4, 1, 8, 8)
    model.initialize(x)
    default_loss(model(x)).backward()
    (ic,) = [m for m in model.modules() if type(m).__name__ == "InvConv1x1"]
    assert ic.logdet is not None and ic.logdet.grad_fn is None
    grads = {}
    for mode in ("standard", "reversible"):
        model.mode = mode
        model.zero_grad(set_to_none=True)
        out = model(x)
        (default_loss(out) - model.logdet.sum()).backward()
        grads[mode] = [p.grad.clone() for p in model.parameters()]
    for a, b in zip(grads["standard"], grads["reversible"]):
        assert torch.allclose(a, b, rtol=1e-4, atol=1e-6)
