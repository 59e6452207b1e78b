"""Grouping and the analysis agree: a group inside a coupling's F is part of the region
(no "not reversible ... stored" warning, totals unchanged); Problems rows wrap."""
from __future__ import annotations

from pathlib import Path

from revstudio.core.grouping import group_nodes
from revstudio.core.project import load
from revstudio.diagnostics.check import full_check
from revstudio.qt import report_facts as rf

EXAMPLE = Path(__file__).resolve().parents[2] / "resources" / "examples" / "revnet_wired.revs"
F = ["block0_f_conv1", "block0_f_relu", "block0_f_conv2"]


def test_grouping_a_couplings_f_keeps_it_in_the_region_without_a_warning():
    g = load(str(EXAMPLE))
    before = full_check(g)
    cmd = group_nodes(g, F, project=g)
    cmd.do()
    after = full_check(g)
    messages = [d.message for d in [*after.diagnostics, *(after.near_misses or [])]]
    assert not any("not reversible" in m for m in messages), messages
    assert any(cmd.node_id in r.nodes for r in after.regions)
    assert rf.mode_totals(after) == rf.mode_totals(before)  # grouping changes no memory figure
    assert rf.counts(after) == rf.counts(before)


def test_a_group_outside_any_coupling_still_says_why_it_is_stored(grouped_stack):
    g, _ = grouped_stack
    report = full_check(g)
    assert not report.regions
    # nothing claims a saving; the group is simply an ordinary (stored) step
    assert all("saves" not in d.message for d in report.diagnostics)


def test_problems_rows_wrap_long_messages(make_window, revnet, settle):
    window = make_window(revnet)
    panel = window.diagnostics
    assert panel.tree.wordWrap()
    assert not panel.tree.uniformRowHeights()
    long = "x" * 10 + " because " + " ".join(["a reason that goes on"] * 30)
    from PySide6.QtWidgets import QTreeWidgetItem

    panel.tree.clear()
    panel.tree.addTopLevelItem(QTreeWidgetItem(["", "node", long]))
    panel.tree.addTopLevelItem(QTreeWidgetItem(["", "node", "short"]))
    panel.tree.setVisible(True)
    panel.resize(600, 300)
    window.bottom_dock.show()
    settle()
    tall = panel.tree.visualItemRect(panel.tree.topLevelItem(0)).height()
    short = panel.tree.visualItemRect(panel.tree.topLevelItem(1)).height()
    assert tall >= 2 * short, (tall, short)


COUPLING = Path(__file__).resolve().parents[2] / "resources" / "examples" / "revnet_coupling.revs"


def test_a_coupling_is_not_offered_the_group_it_is_inside_and_is_told_what_to_pick(make_window, settle):
    # the f combo of the coupling inside group 'block' offered 'block', and picking it said
    # "remove that Group node from the body", advice for a Group node, not for a coupling
    from revstudio.core.commands import SetParam

    g = load(str(COUPLING))
    g.groups["f"].add_node("Repeat", "again", {"group": "g", "times": 1})  # 'f' uses 'g'
    window = make_window(g)
    assert window.tabs.open_group("block")
    settle()
    window.current_view().select_nodes(["coupling"])
    settle()
    combo = window.inspector.editors["f"].combo
    offered = [combo.itemData(i) for i in range(combo.count())]
    assert offered == ["f", "g"]  # not 'block', the group this coupling is inside
    # inside 'f', which block's coupling uses: the Repeat is offered neither 'f' nor 'block'
    assert window.tabs.open_group("f")
    settle()
    window.current_view().select_nodes(["again"])
    settle()
    combo = window.inspector.editors["group"].combo
    assert [combo.itemData(i) for i in range(combo.count())] == ["g"]

    # a file that names it anyway: the combo shows it, marked, and the message names the coupling,
    # its parameter and what to do
    body = window.document.graph.groups["block"]
    window.document.push(SetParam(body, "coupling", "f", "block"))
    settle()
    assert window.tabs.open_group("block")
    settle()
    window.current_view().select_nodes(["coupling"])
    settle()
    combo = window.inspector.editors["f"].combo
    assert combo.currentText() == "block (contains this node)"
    report = window.document.current_report()
    (inner,) = [d for d in report.groups["block"].diagnostics if d.node == "coupling"]
    assert inner.message == ("parameter 'f': AdditiveCoupling 'coupling' is inside group 'block', so its 'f' "
                             "cannot be 'block' (a group cannot contain itself); pick another group for 'f'")
    (outer,) = [d for d in report.diagnostics if d.node == "blocks"]
    assert "Group node" not in outer.message
    assert outer.message.endswith("AdditiveCoupling 'coupling' in group 'block' uses group 'block' as its 'f'; "
                                  "open group 'block' and pick another group for its 'f'")
