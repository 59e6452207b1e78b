"""The app's help for a node type is the node reference's (``core.node_reference``), the text
``revstudio nodes TYPE`` prints and docs/nodes.md holds: the palette's tooltip and help line, the
quick-add list's tooltip, the inspector's help and each parameter field's tooltip."""
from __future__ import annotations

import pytest

from revstudio.core import node_reference
from revstudio.core.graph import Graph
from revstudio.core.spec import registry
from revstudio.qt.canvas.quick_add import QuickAddPopup, candidate_specs
from revstudio.qt.inspector import Inspector
from revstudio.qt.palette import PaletteWidget
from revstudio.qt.param_editors import ParamEditor


def _inspector(inspect) -> Inspector:
    g = Graph("seq")
    g.add_node("Input", "x", {"shape": [8, 64]}, (0, 0))
    g.add_node("BiRNN", "rnn", {"hidden_size": 4}, (240, 0))
    g.connect("x.out", "rnn.in")
    return inspect(g, ["rnn"])[1]


def test_the_palette_tooltip_is_the_whole_reference_entry(qtbot) -> None:
    palette = PaletteWidget()
    qtbot.addWidget(palette)
    for spec in registry:
        assert palette.item_for(spec.type_id).toolTip(0) == node_reference.text(spec, registry)
    palette.tree.setCurrentItem(palette.item_for("BiRNN"))
    assert palette.help.text().startswith("<b>BiRNN</b> · Recurrent<br>A bidirectional RNN")


def test_the_app_s_help_comes_from_the_reference_functions(qtbot, inspect, monkeypatch: pytest.MonkeyPatch) -> None:
    """One function each: replaced, every place that shows a node's help shows the replacement."""
    monkeypatch.setattr(node_reference, "text", lambda spec, reg: f"TEXT OF {spec.type_id}")
    monkeypatch.setattr(node_reference, "brief", lambda spec: f"BRIEF OF {spec.type_id}")
    real_facts = node_reference.param_facts
    monkeypatch.setattr(node_reference, "param_facts",
                        lambda param: {**real_facts(param), "meaning": f"MEANING {param.default}"})
    palette = PaletteWidget()
    qtbot.addWidget(palette)
    assert palette.item_for("Conv").toolTip(0) == "TEXT OF Conv"
    palette.tree.setCurrentItem(palette.item_for("Conv"))
    assert "BRIEF OF Conv" in palette.help.text()
    inspector = _inspector(inspect)
    assert inspector.help.text() == "BRIEF OF BiRNN"
    hidden = next(e for e in inspector.findChildren(ParamEditor) if e.name == "hidden_size")
    assert hidden.toolTip().startswith("MEANING 32\n")
    popup = QuickAddPopup(candidate_specs())
    qtbot.addWidget(popup)
    tips = {popup.list.item(i).toolTip() for i in range(popup.list.count())}
    assert "TEXT OF BiRNN" in tips and "TEXT OF Conv" in tips


def test_the_inspector_shows_the_brief_entry(inspect) -> None:
    inspector = _inspector(inspect)
    assert inspector.help.text() == node_reference.brief(registry.get("BiRNN"))
    assert "Shapes: reads (features, time): time is the last axis" in inspector.help.text()
