"""The example projects shipped in resources/examples, built by code from ``generate``'s pieces.

``example_projects()`` gives them by file stem (tests keep the files in sync with it);
``python -m revstudio.core.examples resources/examples`` writes them again after a change.
"""
from __future__ import annotations

from .generate import Builder, _body, add_coupling_groups, classifier_head, wired_block
from .graph import Graph


def _stem(b: Builder) -> str:
    """A 3x16x16 image through a 3x3 Conv to 8 channels."""
    b.node("Input", "image", shape=[3, 16, 16])
    b.node("Conv", "stem", out_channels=8, kernel_size=3, padding="same")
    return b.chain("image.out", "stem")



def _revnet_wired() -> Graph:
    """Small RevNet classifier from two hand-wired coupling blocks."""
    b = Builder("revnet-wired")
    src = _stem(b)
    for i in range(2):
        src = wired_block(b, src, f"block{i}", 8)
    classifier_head(b, src, 10)
    return b.done()


def _revnet_coupling() -> Graph:
    """The same network from AdditiveCoupling nodes (f/g groups) inside a Repeat."""
    b = Builder("revnet-coupling")
    src = _stem(b)
    add_coupling_groups(b.graph, 8)
    b.node("Repeat", "blocks", group="block", times=2)
    src = b.chain(src, "blocks")
    classifier_head(b, src, 10)
    return b.done()


def _birnn_sequence() -> Graph:
    """Sequence classifier whose very first layer is a BiLSTM, then a 1-D RevNet block."""
    b = Builder("birnn-sequence")
    b.node("Input", "sequence", shape=[12, 32])
    b.node("BiRNN", "birnn", hidden_size=16, cell="lstm")
    src = b.chain("sequence.out", "birnn")
    src = wired_block(b, src, "block", 32)
    classifier_head(b, src, 5)
    return b.done()


def _token_sequence() -> Graph:
    """A sequence classifier for data held as (time, features), as token and sequence models keep
    it: a Permute of kind axes turns each 32 x 12 sample into 12 features x 32 steps, the
    channels-first layout a Conv and a BiRNN read, then a 1-D RevNet block and a BiLSTM."""
    b = Builder("token-sequence")
    b.node("Input", "tokens", shape=[32, 12])
    b.node("Permute", "to_channels", kind="axes", dims=[1, 0])
    b.node("Conv", "stem", out_channels=16, kernel_size=3, padding="same")
    src = b.chain("tokens.out", "to_channels", "stem")
    src = wired_block(b, src, "block", 16)
    b.node("BiRNN", "birnn", hidden_size=8, cell="lstm")
    src = b.chain(src, "birnn")
    classifier_head(b, src, 5)
    return b.done()


def _two_branch(concat: bool) -> Graph:
    """One input, two Conv -> BiRNN branches, stacked (or concatenated) into a zero-initialised head."""
    b = Builder("two-branch-concat" if concat else "two-branch")
    b.node("Input", "x", shape=[3, 8, 8])
    b.node("Conv", "a_conv", out_channels=4, kernel_size=3, padding="same")
    b.node("BiRNN", "a_rnn", hidden_size=8, cell="lstm")
    b.node("Conv", "b_conv", out_channels=4, kernel_size=5, padding="same")
    b.node("BiRNN", "b_rnn", hidden_size=8, cell="gru")
    a = b.chain("x.out", "a_conv", "a_rnn")
    c = b.chain("x.out", "b_conv", "b_rnn")
    if concat:
        b.node("Concat", "join", inputs=2)
    else:
        b.node("Merge", "join", mode="stack")
    b.wire(a, "join.in0")
    b.wire(c, "join.in1")
    b.node("Linear", "head", out_features=4, init="zeros")
    b.node("Output", "logits", name="logits")
    b.chain("join.out", "head", "logits")
    return b.done()


def _glow_flow() -> Graph:
    """Two Glow steps (ActNorm, InvConv1x1, AffineCoupling) after a Squeeze."""
    b = Builder("glow-flow")
    b.node("Input", "image", shape=[3, 16, 16])
    b.node("Squeeze", "squeeze", factor=2)
    src = b.chain("image.out", "squeeze")

    def net(bb: Builder, s: str) -> str:
        bb.node("Conv", "hidden", out_channels=16, kernel_size=3, padding="same")
        bb.node("Activation", "relu", fn="relu")
        # Glow starts each coupling as the identity: the last layer is zero-initialised.
        bb.node("Conv", "scale_shift", out_channels=12, kernel_size=3, padding="same", init="zeros")
        return bb.chain(s, "hidden", "relu", "scale_shift")

    b.graph.groups["net"] = _body("net", net)
    for i in range(2):
        b.node("ActNorm", f"actnorm{i}")
        b.node("InvConv1x1", f"invconv{i}", lu=True)
        b.node("AffineCoupling", f"coupling{i}", net="net", clamp=2.0)
        src = b.chain(src, f"actnorm{i}", f"invconv{i}", f"coupling{i}")
    b.node("Output", "z", name="z")
    b.chain(src, "z")
    return b.done()


def _digits_revnet() -> Graph:
    """A small wired RevNet for the 8x8 UCI digits in resources/data (trains to >= 0.97 in well under a minute)."""
    b = Builder("digits-revnet")
    b.node("Input", "image", shape=[1, 8, 8])
    b.node("Conv", "stem", out_channels=16, kernel_size=3, padding="same")
    src = b.chain("image.out", "stem")
    for i in range(2):
        src = wired_block(b, src, f"block{i}", 16)
    # a 2x2 average keeps where the strokes are (a global pool would lose it): 16x4x4 -> 10
    b.node("Pool", "pool", kind="avg", kernel_size=2)
    b.node("Linear", "head", out_features=10)
    b.node("Output", "logits", name="logits")
    b.chain(src, "pool", "head", "logits")
    graph = b.done()
    # relative to the project file; measured: val accuracy 0.98 after 400 steps (benchmarks/bench_train.py)
    graph.training = {"version": 1, "data": "../data/digits.npz", "lr": 0.01, "schedule": "onecycle",
                      "batch_size": 64, "steps": 400, "val_every": 100}
    return graph


def example_projects() -> dict[str, Graph]:
    """The projects shipped in resources/examples, by file stem (tests keep the files in sync)."""
    return {
        "revnet_wired": _revnet_wired(),
        "revnet_coupling": _revnet_coupling(),
        "birnn_sequence": _birnn_sequence(),
        "token_sequence": _token_sequence(),
        "two_branch": _two_branch(False),
        "two_branch_concat": _two_branch(True),
        "glow_flow": _glow_flow(),
        "digits_revnet": _digits_revnet(),
    }


def write_examples(directory: str) -> list[str]:
    """Regenerate the example files: ``python -m revstudio.core.examples resources/examples``."""
    import os

    from .project import save

    paths = []
    for stem, graph in example_projects().items():
        path = os.path.join(directory, f"{stem}.revs")
        save(graph, path)
        paths.append(path)
    return paths


if __name__ == "__main__":  # pragma: no cover - a maintenance command
    import sys

    for written in write_examples(sys.argv[1] if len(sys.argv) > 1 else "resources/examples"):
        print(written)
