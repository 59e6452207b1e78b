"""Three-way merge of projects by meaning (``revstudio merge``, git's merge driver for .revs files).

Two teammates who each added a node on their own branch got a git conflict every time: both new
lines land at the end of ``nodes`` and of ``edges``."""
from __future__ import annotations

import pytest

from revstudio.core.graph import Graph
from revstudio.core.project import ProjectError, dumps, loads
from revstudio.core.project_merge import merge_projects


def _base() -> Graph:
    g = Graph("shared")
    g.add_node("Input", "x", {"shape": [4, 8, 8]}, (0, 0))
    g.add_node("Conv", "conv", {"out_channels": 8, "kernel_size": 3, "padding": "same"}, (240, 0))
    g.add_node("Activation", "act", {"fn": "relu"}, (480, 0))
    g.add_node("Output", "y", {}, (720, 0))
    for src, dst in (("x.out", "conv.in"), ("conv.out", "act.in"), ("act.out", "y.in")):
        g.connect(src, dst)
    g.training = {"lr": 0.01, "steps": 100}
    return g


def _insert(g: Graph, node_id: str, type_id: str, before: str) -> Graph:
    """Put a new node on the wire into ``before`` (what a drop onto the wire does)."""
    edge = g.edges_into(before)[0]
    g.remove_edge(edge)
    g.add_node(type_id, node_id, {}, (0, 100))
    g.connect(edge.src, f"{node_id}.in")
    g.connect(f"{node_id}.out", edge.dst)
    return g


def _merge(ours: Graph, theirs: Graph, base: Graph | None = None) -> tuple[Graph | None, list[str]]:
    result = merge_projects(dumps(base or _base()), dumps(ours), dumps(theirs))
    return (loads(result.text) if not result.conflicts else None), result.conflicts


def test_nodes_added_on_two_branches_merge_with_their_wires() -> None:
    merged, conflicts = _merge(_insert(_base(), "drop", "Dropout", "act"), _insert(_base(), "norm", "Norm", "y"))
    assert not conflicts and merged is not None
    assert list(merged.nodes) == ["x", "conv", "act", "y", "drop", "norm"]
    wires = {(str(e.src), str(e.dst)) for e in merged.edges}
    assert wires == {("x.out", "conv.in"), ("conv.out", "drop.in"), ("drop.out", "act.in"), ("act.out", "norm.in"),
                     ("norm.out", "y.in")}


def test_changes_to_different_params_positions_and_settings_all_come_through() -> None:
    ours, theirs = _base(), _base()
    ours.set_param("conv", "out_channels", 16)
    ours.training = {**ours.training, "lr": 0.003}
    theirs.set_param("conv", "kernel_size", 5)
    theirs.move("act", (500, 40))
    theirs.training = {**theirs.training, "steps": 400}
    theirs.view = {"zoom": 0.5, "x": 1.0, "y": 2.0}
    merged, conflicts = _merge(ours, theirs)
    assert not conflicts and merged is not None
    assert merged.node("conv").params == {"out_channels": 16, "kernel_size": 5, "padding": "same"}
    assert merged.node("act").pos == (500, 40)
    assert merged.training == {"lr": 0.003, "steps": 400}
    assert merged.view == {"zoom": 0.5, "x": 1.0, "y": 2.0}


def test_a_node_deleted_on_one_branch_goes_with_its_wires() -> None:
    theirs = _base()
    theirs.remove_node("act")
    theirs.connect("conv.out", "y.in")
    merged, conflicts = _merge(_base(), theirs)
    assert not conflicts and merged is not None and "act" not in merged.nodes
    assert {(str(e.src), str(e.dst)) for e in merged.edges} == {("x.out", "conv.in"), ("conv.out", "y.in")}


def _conflicts(ours: Graph, theirs: Graph) -> str:
    merged, conflicts = _merge(ours, theirs)
    assert merged is None
    return "\n".join(conflicts)


def test_one_param_changed_differently_on_both_is_a_conflict_naming_it() -> None:
    ours, theirs = _base(), _base()
    ours.set_param("conv", "out_channels", 16)
    theirs.set_param("conv", "out_channels", 32)
    assert _conflicts(ours, theirs) == ("node 'conv' param 'out_channels': 16 here, 32 in the other branch "
                                        "(was 8)")


def test_conflicts_of_structure_are_named() -> None:
    ours, theirs = _base(), _base()
    ours.remove_node("act")
    theirs.set_param("act", "fn", "tanh")
    assert "node 'act': deleted here, changed in the other branch" in _conflicts(ours, theirs)
    both = _conflicts(_insert(_base(), "drop", "Dropout", "act"), _insert(_base(), "norm", "Norm", "act"))
    assert "input 'act.in': fed by 'drop.out' here and by 'norm.out' in the other branch" in both
    ours, theirs = _base(), _base()
    ours.remove_node("act")
    ours.connect("conv.out", "y.in")
    theirs.add_node("Dropout", "drop", {}, (0, 0))
    theirs.connect("act.out", "drop.in")
    assert "wire act.out -> drop.in: its node 'act' was deleted in one branch" in _conflicts(ours, theirs)
    ours, theirs = _base(), _base()
    ours.training, theirs.training = {"lr": 0.1, "steps": 100}, {"lr": 0.2, "steps": 100}
    assert _conflicts(ours, theirs) == "run setting 'lr': 0.1 here, 0.2 in the other branch (was 0.01)"


def test_a_view_both_moved_keeps_this_branch_s_and_is_no_conflict() -> None:
    ours, theirs = _base(), _base()
    ours.view, theirs.view = {"zoom": 0.5}, {"zoom": 0.9}
    merged, conflicts = _merge(ours, theirs)
    assert not conflicts and merged is not None and merged.view == {"zoom": 0.5}


def test_group_bodies_merge_node_by_node() -> None:
    def with_group() -> Graph:
        g = _base()
        body = Graph("block", groups=g.groups)
        body.add_node("GroupInput", "gi", {"shape": [8, 8, 8]}, (0, 0))
        body.add_node("GroupOutput", "go", {}, (480, 0))
        body.connect("gi.out", "go.in")
        g.groups["block"] = body
        return g

    ours, theirs = with_group(), with_group()
    _insert(ours.groups["block"], "inner_a", "Activation", "go")
    theirs.set_param("conv", "out_channels", 4)
    merged, conflicts = _merge(ours, theirs, with_group())
    assert not conflicts and merged is not None
    assert "inner_a" in merged.groups["block"].nodes and merged.node("conv").params["out_channels"] == 4


def test_a_file_both_branches_added_alike_merges_and_a_broken_side_is_refused() -> None:
    text = dumps(_base())
    assert merge_projects("", text, text).text == text
    with pytest.raises(ProjectError, match="^theirs: line .*truncated"):
        merge_projects(text, text, text[:-3])


def test_a_node_id_both_branches_gave_a_new_node_keeps_both() -> None:
    """The editor names a new Dropout "dropout" on each teammate's machine."""
    ours = _insert(_base(), "dropout", "Dropout", "act")
    theirs = _insert(_base(), "dropout", "Dropout", "y")  # the same card, in another place of the graph
    result = merge_projects(dumps(_base()), dumps(ours), dumps(theirs))
    assert not result.conflicts
    assert result.notes == ["node 'dropout' was added on both branches: the other branch's is now 'dropout1'",
                            "node 'dropout1' was added where this branch put another node: placed below, at 0, 270"]
    merged = loads(result.text)
    assert merged.node("dropout").params == {} and merged.node("dropout1").params == {}
    theirs.set_param("dropout", "p", 0.3)  # a card of its own
    again = loads(merge_projects(dumps(_base()), dumps(ours), dumps(theirs)).text)
    assert again.node("dropout").params == {} and again.node("dropout1").params == {"p": 0.3}
    assert {(str(e.src), str(e.dst)) for e in merged.edges} == {
        ("x.out", "conv.in"), ("conv.out", "dropout.in"), ("dropout.out", "act.in"), ("act.out", "dropout1.in"),
        ("dropout1.out", "y.in")}
    same = _insert(_base(), "dropout", "Dropout", "act")  # the same node, wired alike: one node
    once = merge_projects(dumps(_base()), dumps(ours), dumps(same))
    assert not once.conflicts and not once.notes and list(loads(once.text).nodes).count("dropout") == 1


def test_a_group_name_both_branches_gave_a_new_group_keeps_both_with_their_nodes() -> None:
    """Ctrl+G names the first group "group1" on each teammate's machine."""
    def grouped(node_id: str, fn: str) -> Graph:
        g = _base()
        body = Graph("group1", groups=g.groups)
        body.add_node("GroupInput", "gi", {"shape": [8, 8, 8]}, (0, 0))
        body.add_node("Activation", "inner", {"fn": fn}, (240, 0))
        body.add_node("GroupOutput", "go", {}, (480, 0))
        body.connect("gi.out", "inner.in")
        body.connect("inner.out", "go.in")
        g.groups["group1"] = body
        _insert(g, node_id, "Group", "act" if node_id == "mine" else "y")
        g.set_param(node_id, "group", "group1")
        return g

    result = merge_projects(dumps(_base()), dumps(grouped("mine", "relu")), dumps(grouped("yours", "tanh")))
    assert not result.conflicts
    assert result.notes == ["group 'group1' was made on both branches: the other branch's is now 'group2'",
                            "node 'yours' was added where this branch put another node: placed below, at 0, 270"]
    merged = loads(result.text)
    assert merged.node("mine").params["group"] == "group1" and merged.node("yours").params["group"] == "group2"
    assert merged.groups["group1"].node("inner").params["fn"] == "relu"
    assert merged.groups["group2"].node("inner").params["fn"] == "tanh"


def _overlapping(g: Graph) -> list[tuple[str, str]]:
    """Pairs of cards drawn on one another (a card is 164 px wide; these are at most ~100 tall)."""
    ids = list(g.nodes)
    return [(a, b) for i, a in enumerate(ids) for b in ids[i + 1:]
            if abs(g.node(a).pos[0] - g.node(b).pos[0]) < 164 and abs(g.node(a).pos[1] - g.node(b).pos[1]) < 100]


def test_nodes_added_on_both_branches_at_one_place_are_set_apart() -> None:
    # each teammate dropped a node onto a wire at the same free spot of the canvas: the merged file
    # drew the two cards on top of each other, one hiding the other
    result = merge_projects(dumps(_base()), dumps(_insert(_base(), "drop", "Dropout", "act")),
                            dumps(_insert(_base(), "norm", "Norm", "y")))
    merged = loads(result.text)
    assert not result.conflicts and _overlapping(merged) == []
    assert merged.node("drop").pos == (0, 100)  # this branch's stays where it was put
    assert merged.node("norm").pos[0] == 0 and merged.node("norm").pos[1] > 100  # the other's just below
    assert any("'norm'" in note and "placed below" in note for note in result.notes)


def test_the_other_branchs_layout_is_left_alone_where_nothing_of_this_branch_is_in_its_way() -> None:
    ours, theirs = _base(), _insert(_base(), "norm", "Norm", "y")
    theirs.move("norm", (720, 0))  # on its own branch it stands where y was; y moved right
    theirs.move("y", (960, 0))
    ours.set_param("conv", "out_channels", 16)
    result = merge_projects(dumps(_base()), dumps(ours), dumps(theirs))
    merged = loads(result.text)
    assert not result.conflicts and merged.node("norm").pos == (720, 0) and not result.notes


def test_a_node_added_on_both_branches_in_a_group_body_is_set_apart_too() -> None:
    def with_body(extra: str | None) -> Graph:
        g = _base()
        body = Graph("block")
        body.add_node("GroupInput", "gin", {}, (0, 0))
        body.add_node("GroupOutput", "gout", {}, (480, 0))
        if extra == "a":  # on a wire
            body.add_node("Activation", "a", {}, (240, 0))
            body.connect("gin.out", "a.in")
            body.connect("a.out", "gout.in")
        else:
            body.connect("gin.out", "gout.in")
        if extra == "d":  # not wired yet
            body.add_node("Dropout", "d", {}, (240, 0))
        g.groups["block"] = body
        return g

    result = merge_projects(dumps(with_body(None)), dumps(with_body("a")), dumps(with_body("d")))
    assert not result.conflicts, result.conflicts
    body = loads(result.text).groups["block"]
    assert body.node("a").pos == (240, 0) and body.node("d").pos[1] > 0


def _cards_apart(g: Graph) -> list[tuple[str, str]]:
    """Pairs of cards drawn on one another, each as large as the canvas draws it."""
    from revstudio.core.card import card_sizes
    from revstudio.core.check import check

    sizes = card_sizes(g, check(g))
    boxes = {i: (*g.node(i).pos, *sizes[i]) for i in g.nodes}
    ids = list(g.nodes)
    return [(a, b) for k, a in enumerate(ids) for b in ids[k + 1:]
            if boxes[a][0] < boxes[b][0] + boxes[b][2] and boxes[b][0] < boxes[a][0] + boxes[a][2]
            and boxes[a][1] < boxes[b][1] + boxes[b][3] and boxes[b][1] < boxes[a][1] + boxes[a][3]]


def _tall(g: Graph, at: tuple[float, float]) -> Graph:
    """A Concat of 30 inputs: a card 30 port rows (about 600 px) tall."""
    g.add_node("Concat", "tall", {"inputs": 30}, at)
    return g


def test_a_new_node_is_set_clear_of_a_tall_card_by_that_cards_real_height() -> None:
    """The merge took every card as 120 px tall: a node the other branch added 300 px below the
    top of this branch's 30-input Concat was left on top of that card's ports."""
    from revstudio.core.card import card_sizes

    ours, theirs = _tall(_base(), (0, 100)), _insert(_base(), "drop", "Dropout", "y")
    theirs.move("drop", (0, 400))
    assert card_sizes(ours)["tall"][1] > 550
    result = merge_projects(dumps(_base()), dumps(ours), dumps(theirs))
    merged = loads(result.text)
    assert not result.conflicts and _cards_apart(merged) == [], _cards_apart(merged)
    assert merged.node("tall").pos == (0, 100) and merged.node("drop").pos[1] > 100 + card_sizes(ours)["tall"][1]
    assert any("'drop'" in note and "placed below" in note for note in result.notes)
    # the other way round: the other branch's tall card reaches down over this branch's new node
    ours, theirs = _insert(_base(), "drop", "Dropout", "y"), _tall(_base(), (0, -300))
    result = merge_projects(dumps(_base()), dumps(ours), dumps(theirs))
    merged = loads(result.text)
    assert not result.conflicts and _cards_apart(merged) == [], _cards_apart(merged)
    assert merged.node("drop").pos == (0, 100) and merged.node("tall").pos[1] > 100
