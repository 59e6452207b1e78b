"""The walk of the layers inside coupling nodes, Groups and Repeats, and of checkpoint recomputes.

Standard mode runs an AdditiveCoupling node as slice, y1 = x1 + F(x2), y2 = x2 + G(y1),
concatenate, and a Group's or Repeat's body layer by layer; checkpoint mode recomputes a
segment when backward reaches it, a coupling's F and G checkpointing their own runs of layers
inside. The walk follows each layer (``peak_inline``); before, such a node was one step holding
all its insides at once (up to +28 % on a single coupling node in checkpoint mode, +17 % on two
in standard mode), and a region's segment was priced as all of it recomputed at once.
"""
from __future__ import annotations

from collections.abc import Callable

import pytest

torch = pytest.importorskip("torch")

from estimate_errors import estimate_errors  # noqa: E402

from revstudio.core.generate import Builder, _body, wired_block  # noqa: E402
from revstudio.core.graph import Graph  # noqa: E402

BATCH = 16
MODES = ("standard", "checkpoint")


def _chain(b: Builder, src: str, prefix: str, channels: int, kind: str) -> str:
    """F or G: Conv -> [BatchNorm] -> [ReLU] -> Conv ("cc", "cac", "cnac"), or ReLU -> Conv
    ("ac": the block keeps nothing of its input)."""
    ids: list[str] = []

    def add(type_id: str, **params: object) -> None:
        ids.append(b.node(type_id, f"{prefix}_{len(ids)}", **params))

    if kind != "ac":
        add("Conv", out_channels=channels, kernel_size=3, padding="same")
    if kind == "cnac":
        add("Norm", kind="batch")
    if kind in ("cac", "cnac", "ac"):
        add("Activation", fn="relu")
    add("Conv", out_channels=channels, kernel_size=3, padding="same")
    return b.chain(src, *ids)


def _net(blocks: list[str], body: str, channels: int = 8, g_body: str | None = None) -> Graph:
    """Conv stem, then blocks ("wired": Split, F, add, G, add, Concat; "node": an AdditiveCoupling
    node; "group": a Group of one; "repeat": a Repeat x3 of one), then a pooled Linear head."""
    b = Builder("inline")
    b.node("Input", "x", shape=[3, 8, 8])
    src = b.chain("x.out", b.node("Conv", "stem", out_channels=channels, kernel_size=3, padding="same"))
    for n, kind in enumerate(blocks):
        if kind == "wired":
            src = wired_block(b, src, f"w{n}", channels, lambda bb, s, p, c: _chain(bb, s, p, c, body))
            continue
        f, g = f"f{n}", f"g{n}"
        b.graph.groups[f] = _body(f, lambda bb, s, f=f: _chain(bb, s, f, channels // 2, body))
        b.graph.groups[g] = _body(g, lambda bb, s, g=g: _chain(bb, s, g, channels // 2, g_body or body))
        if kind == "node":
            src = b.chain(src, b.node("AdditiveCoupling", f"c{n}", f=f, g=g))
            continue
        blk = f"blk{n}"
        b.graph.groups[blk] = _body(blk, lambda bb, s, f=f, g=g: bb.chain(s, bb.node("AdditiveCoupling", "c",
                                                                                          f=f, g=g)))
        node: Callable[..., str] = b.node
        src = b.chain(src, node("Repeat", f"r{n}", group=blk, times=3) if kind == "repeat"
                      else node("Group", f"gr{n}", group=blk))
    b.chain(src, b.node("Pool", "pool", kind="global_avg"), b.node("Linear", "head", out_features=10),
            b.node("Output", "out"))
    return b.done()


@pytest.mark.parametrize("blocks", [["node"], ["wired", "node"], ["node", "node"], ["node", "wired"],
                                    ["group"], ["group", "group"], ["repeat"], ["wired", "repeat"]],
                         ids=lambda b: "+".join(b))
@pytest.mark.parametrize("body", ["cc", "cac", "cnac"])
def test_coupling_nodes_groups_and_repeats_are_walked_layer_by_layer(blocks: list[str], body: str) -> None:
    torch.set_num_threads(1)
    for mode, error in estimate_errors(_net(blocks, body), BATCH, MODES).items():
        assert abs(error) < 0.01, (mode, f"{error:+.2%}")


def test_a_regions_input_lives_until_the_region_returns() -> None:
    """A block whose F starts with a ReLU keeps nothing of the region's input, yet the region's
    call holds it until its last step has run (standard mode ran 12.5 % below the measured peak
    with the input freed after its last reader)."""
    torch.set_num_threads(1)
    for mode, error in estimate_errors(_net(["wired"], "ac"), BATCH, MODES).items():
        assert abs(error) < 0.01, (mode, f"{error:+.2%}")


def test_instance_norm_keeps_its_repeated_weight() -> None:
    """torch runs an affine instance norm as a batch norm over batch x channels features: it keeps
    the mean, the inverse deviation and the weight repeated per sample."""
    from revstudio.diagnostics.save_rules import NodeView, apply_rule

    view = NodeView("Norm", {"kind": "instance", "affine": True}, {"in": (4, 8, 8)}, {"out": (4, 8, 8)}, 16, 4)
    assert apply_rule(view).extra_bytes == 3 * 16 * 4 * 4
    plain = NodeView("Norm", {"kind": "instance", "affine": False}, {"in": (4, 8, 8)}, {"out": (4, 8, 8)}, 16, 4)
    assert apply_rule(plain).extra_bytes == 2 * 16 * 4 * 4


@pytest.mark.parametrize(("f", "g"), [("cc", "cnac"), ("cnac", "cc"), ("cac", "cac")],
                         ids=["cc-cnac", "cnac-cc", "cac-cac"])
def test_a_coupling_nodes_f_and_g_are_rebuilt_one_at_a_time(f: str, g: str) -> None:
    """Reversible mode rebuilds an AdditiveCoupling node as two steps, G's then F's, each with
    its own body's graph; when G's starts, both halves' gradients are still views of the
    output's. Priced as one step of two equal parts, the estimate was +4.4 % (equal bodies) to
    +8.9 % (a G keeping three tensors after an F keeping one) above the measured peak."""
    torch.set_num_threads(1)
    for blocks in (["node"], ["node", "node"]):
        error = estimate_errors(_net(blocks, f, g_body=g), BATCH, ("reversible",))["reversible"]
        assert abs(error) < 0.01, (blocks, f"{error:+.2%}")
