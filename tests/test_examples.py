"""The example projects in resources/examples: each loads, checks clean, has the expected shapes.

They are what a new user opens first (and what other tests use as realistic
graphs), so their shapes and parameter counts are pinned here.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from revstudio.core.check import Report
from revstudio.core.graph import Graph
from revstudio.core.project import dumps, load

EXAMPLES = Path(__file__).resolve().parents[1] / "resources" / "examples"

# file -> (total parameters, {port: shape}) ; counts worked out by hand in the comments
EXPECTED: dict[str, tuple[int, dict[str, tuple[int, ...]]]] = {
    # stem 3*8*9+8 = 224; 8 convs 4->4 3x3: 8*148; head 8*10+10 = 90
    "revnet_wired.revs": (224 + 8 * 148 + 90, {
        "stem.out": (8, 16, 16), "block0_split.out1": (4, 16, 16), "block0_add1.out": (4, 16, 16),
        "block1_cat.out": (8, 16, 16), "pool.out": (8,), "head.out": (10,)}),
    "revnet_coupling.revs": (224 + 8 * 148 + 90, {
        "stem.out": (8, 16, 16), "blocks.out": (8, 16, 16), "head.out": (10,)}),
    # BiLSTM 12 -> 2x16: 2*(4*16*(12+16) + 8*16); 4 conv1d 16->16 k3: 4*784; head 32*5+5
    "birnn_sequence.revs": (2 * (4 * 16 * 28 + 8 * 16) + 4 * 784 + 165, {
        "birnn.out": (32, 32), "block_split.out0": (16, 32), "block_cat.out": (32, 32), "head.out": (5,)}),
    # (time 32, features 12) reordered to 12x32; stem 12*16*3+16 = 592; 4 conv1d 8->8 k3: 4*200;
    # BiLSTM 16 -> 2x8: 2*(4*8*(16+8) + 8*8); head 16*5+5
    "token_sequence.revs": (592 + 4 * 200 + 2 * (4 * 8 * 24 + 8 * 8) + 85, {
        "tokens.out": (32, 12), "to_channels.out": (12, 32), "stem.out": (16, 32), "birnn.out": (16, 32),
        "head.out": (5,)}),
    # convs 112 + 304; BiLSTM over W with 4*8 features: 2688; BiGRU: 2016; head 256*4+4
    "two_branch.revs": (112 + 304 + 2688 + 2016 + 1028, {
        "a_rnn.out": (16, 8), "b_rnn.out": (16, 8), "join.out": (2, 16, 8), "head.out": (4,)}),
    "two_branch_concat.revs": (112 + 304 + 2688 + 2016 + 1028, {
        "join.out": (32, 8), "head.out": (4,)}),
    # 2 x (ActNorm 2*12 + InvConv1x1 12*12 + net (6*16*9+16) + (16*12*9+12))
    "glow_flow.revs": (2 * (24 + 144 + 880 + 1740), {
        "squeeze.out": (12, 8, 8), "coupling0.out": (12, 8, 8), "coupling1.out": (12, 8, 8)}),
    # stem 1*16*9+16 = 160; 8 convs 8->8 3x3: 8*584; head 16*4*4*10+10 = 2570
    "digits_revnet.revs": (160 + 8 * 584 + 2570, {
        "stem.out": (16, 8, 8), "block1_cat.out": (16, 8, 8), "pool.out": (16, 4, 4), "head.out": (10,)}),
}


def full_check(graph: Graph) -> Report:
    try:
        from revstudio.diagnostics.check import full_check as check
    except ImportError:  # core-only install
        from revstudio.core.check import check
    return check(graph)


def test_every_example_file_is_pinned() -> None:
    assert sorted(p.name for p in EXAMPLES.glob("*.revs")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_checks_clean_with_expected_shapes(name: str) -> None:
    graph = load(EXAMPLES / name)
    report = full_check(graph)
    assert report.valid, [str(d) for d in report.errors]
    assert report.warnings == [], [str(d) for d in report.warnings]
    params, shapes = EXPECTED[name]
    assert report.parameters == params
    for ref, shape in shapes.items():
        assert report.shape(ref) == shape, ref
    assert all(info.ok for info in report.nodes.values())


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_is_canonical_and_laid_out_left_to_right(name: str) -> None:
    path = EXAMPLES / name
    graph = load(path)
    assert dumps(graph) == path.read_text(encoding="utf-8")  # saved by revstudio, byte for byte
    for g in [graph, *graph.groups.values()]:
        positions = [n.pos for n in g.nodes.values()]
        assert len(set(positions)) == len(positions), "nodes on top of each other"
        for e in g.edges:
            assert g.nodes[e.src.node].pos[0] < g.nodes[e.dst.node].pos[0], str(e)


def test_wired_and_coupling_revnets_are_the_same_network() -> None:
    wired = full_check(load(EXAMPLES / "revnet_wired.revs"))
    coupling = full_check(load(EXAMPLES / "revnet_coupling.revs"))
    assert wired.parameters == coupling.parameters
    assert wired.shape("head.out") == coupling.shape("head.out")


def test_birnn_is_the_very_first_layer() -> None:
    graph = load(EXAMPLES / "birnn_sequence.revs")
    (edge,) = [e for e in graph.edges if e.src.node == "sequence"]
    assert graph.nodes[edge.dst.node].type == "BiRNN"


def test_two_branch_heads_start_at_zero() -> None:
    for name in ("two_branch.revs", "two_branch_concat.revs"):
        graph = load(EXAMPLES / name)
        assert graph.nodes["head"].params["init"] == "zeros"
        assert graph.nodes["join"].type in ("Merge", "Concat")


def test_example_files_match_their_generator() -> None:
    """Regenerate with `python -m revstudio.core.examples resources/examples` after changing one."""
    from revstudio.core.examples import example_projects

    for stem, graph in example_projects().items():
        assert dumps(graph) == (EXAMPLES / f"{stem}.revs").read_text(encoding="utf-8"), stem


def test_digits_example_trains_on_the_shipped_digits() -> None:
    """Its training section names resources/data/digits.npz relative to the project file."""
    from revstudio.training.config import TrainConfig

    graph = load(EXAMPLES / "digits_revnet.revs")
    config = TrainConfig.from_section(graph.training)
    data = (EXAMPLES / config.data).resolve()
    assert data == EXAMPLES.parent / "data" / "digits.npz" and data.is_file()
    from revstudio.training.data import peek_data

    peek = peek_data(config.data, base_dir=str(EXAMPLES))
    assert peek["arrays"] == {"x": [1797, 1, 8, 8], "y": [1797]} and peek["classes"] == 10
