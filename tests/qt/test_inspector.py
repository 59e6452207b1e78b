"""The inspector: editors generated from param kinds, validation as typed, one undo step per visit."""
from __future__ import annotations

import pytest

from revstudio.core.params import (
    Bool,
    Choice,
    Float,
    GroupRef,
    Int,
    IntList,
    IntOrChoice,
    IntOrList,
    Shape,
    Str,
)
from revstudio.core.spec import registry
from revstudio.qt.param_editors import (
    BoolEditor,
    ChoiceEditor,
    GroupEditor,
    ParseError,
    TextEditor,
    make_editor,
    parse_text,
)


@pytest.mark.parametrize("param, editor_type", [
    (Int(default=1), TextEditor), (Float(default=0.5), TextEditor), (Str(), TextEditor),
    (IntList(), TextEditor), (Shape(default=(3,)), TextEditor), (IntOrChoice(options=("same",)), TextEditor),
    (IntOrList(), TextEditor), (Choice(default="a", options=("a", "b")), ChoiceEditor),
    (Bool(), BoolEditor), (GroupRef(), GroupEditor),
])
def test_editor_follows_the_param_kind(qtbot, param, editor_type):
    editor = make_editor("p", param)
    qtbot.addWidget(editor)
    assert type(editor) is editor_type


def test_every_catalog_param_gets_an_editor(qtbot):
    kinds = set()
    for spec in registry:
        for name, param in spec.params.items():
            editor = make_editor(name, param)
            qtbot.addWidget(editor)
            editor.set_value(None)  # shows the default without error
            assert editor.error() is None, (spec.type_id, name)
            kinds.add(param.kind)
    assert {"int", "choice", "bool", "shape"} <= kinds


@pytest.mark.parametrize("param, text, value", [
    (Int(min=1), "12", 12), (Float(), "1e-3", 0.001), (Shape(), "[3, 32, 32]", [3, 32, 32]),
    (Shape(), "3x32x32", [3, 32, 32]), (Shape(), "3 32", [3, 32]), (IntList(), "", None),
    (IntOrChoice(options=("same",), min=0), "same", "same"), (IntOrChoice(options=("same",)), "2", 2),
    (IntOrList(), "4", 4), (IntOrList(), "4, 4", [4, 4]), (Str(), "", ""), (Int(), "", None),
])
def test_typed_text_parses_to_the_stored_value(param, text, value):
    assert parse_text(param, text) == value


@pytest.mark.parametrize("param, text, reason", [
    (Int(min=1), "abc", "not an integer"), (Int(min=1), "0", "too small"),
    (Shape(), "3, x", "not an integer"), (Shape(), "1,2,3,4,5", "between 1 and 4"),
    (IntOrChoice(options=("same",)), "valid", "use an integer >= 0 or 'same'"), (Float(min=0.0), "-1", "too small"),
])
def test_invalid_text_names_the_reason(param, text, reason):
    with pytest.raises((ParseError, ValueError)) as info:
        parse_text(param, text)
    assert reason in str(info.value)


@pytest.fixture
def inspected(inspect, revnet):
    return inspect(revnet, ["f"])


def test_editing_a_param_updates_shapes_and_facts(inspected, settle):
    doc, inspector = inspected
    assert doc.report.shape("f.out") == (4, 16, 16)
    inspector.editors["out_channels"].set_text("6")
    settle()
    assert doc.graph.node("f").params["out_channels"] == 6
    assert doc.report.shape("f.out") == (6, 16, 16)
    assert "(6, 16, 16)" in inspector.facts.text()
    doc.undo_stack.undo()
    settle()
    assert doc.report.shape("f.out") == (4, 16, 16)
    assert inspector.editors["out_channels"].edit.text() == "4"


def test_invalid_text_shows_the_reason_and_pushes_nothing(inspected):
    doc, inspector = inspected
    editor = inspector.editors["kernel_size"]
    editor.set_text("three")
    assert "kernel_size" in editor.error() and "not an integer" in editor.error()
    assert editor.edit.property("invalid") is True
    assert doc.undo_stack.count() == 0
    editor.set_text("5")
    assert editor.error() is None
    assert doc.undo_stack.count() == 1


def test_typing_in_one_field_is_one_undo_step_per_visit(inspected):
    doc, inspector = inspected
    editor = inspector.editors["out_channels"]
    for text in ("1", "12", "128"):
        editor.set_text(text)
    assert doc.undo_stack.count() == 1
    assert doc.graph.node("f").params["out_channels"] == 128
    editor.finished.emit()  # focus left the field
    editor.set_text("64")
    assert doc.undo_stack.count() == 2
    doc.undo_stack.undo()
    assert doc.graph.node("f").params["out_channels"] == 128
    doc.undo_stack.undo()
    assert doc.graph.node("f").params["out_channels"] == 4


def test_choice_bool_and_reset_to_default(inspected):
    doc, inspector = inspected
    inspector.editors["init"].choose(inspector.editors["init"].combo.itemText(1))
    inspector.editors["bias"].box.click()
    assert doc.graph.node("f").params["bias"] is False
    assert inspector._labels["kernel_size"].property("modified") is True  # set in the file: highlighted
    inspector.editors["kernel_size"].set_text("")  # empty = the spec's default
    assert "kernel_size" not in doc.graph.node("f").params
    assert inspector._labels["kernel_size"].property("modified") is False
    assert doc.undo_stack.count() == 3


def test_inspector_shows_region_or_near_miss_and_summary(inspect, revnet):
    _, inspector = inspect(revnet, ["m"])
    text = inspector.facts.text()
    assert "out · out" in text and "(4, 16, 16)" in text
    assert "Reversible" in text and "in region" in text  # the wired RevNet block is one region
    inspector.set_selection(revnet, ["f", "m"])
    assert "2 nodes selected" in inspector.title.text()
    inspector.set_selection(revnet, [])
    assert "Nodes" in inspector.facts.text() and "Parameters" in inspector.facts.text()


def test_a_bf16_project_is_told_its_memory_figures_are_an_fp32_steps(inspect, revnet, settle):
    _, inspector = inspect(revnet, [])
    assert "Memory figures" in inspector.facts.text() and "autocast" not in inspector.facts.text()
    revnet.training = {**(revnet.training or {}), "precision": "bf16"}
    inspector.set_selection(revnet, [])
    settle()
    assert "bf16 runs: the estimate models fp32 steps only; bf16 autocast is not modelled" in inspector.facts.text()


def test_removed_node_clears_the_inspector(inspected, settle):
    doc, inspector = inspected
    from revstudio.core.commands import RemoveNode

    doc.push(RemoveNode(doc.graph, "f"))
    settle()
    assert inspector.node_id is None and not inspector.editors


def test_inspector_explains_a_near_miss(inspect):
    from revstudio.core.graph import Graph

    g = Graph("near-miss")
    g.add_node("Input", "x", {"shape": [8, 16, 16]})
    g.add_node("Split", "s", {"sections": 2})
    g.add_node("Conv", "f", {"out_channels": 4, "kernel_size": 3, "padding": "same"})
    g.add_node("Merge", "m", {"mode": "add"})
    g.add_node("Concat", "c", {})
    g.add_node("Output", "y", {})
    # F reads s.out0, which the merge also consumes: not a coupling.
    for src, dst in (("x.out", "s.in"), ("s.out0", "f.in"), ("s.out0", "m.in0"), ("f.out", "m.in1"),
                     ("m.out", "c.in0"), ("s.out1", "c.in1"), ("c.out", "y.in")):
        g.connect(src, dst)
    _, inspector = inspect(g, ["m"])
    text = inspector.facts.text()
    assert "why not reversible" in text and "is not a coupling" in text
    assert "no: runs with plain autograd" in text


def test_typing_into_several_selected_nodes_is_one_undo_step_per_visit(inspect, revnet):
    """A shared edit of several nodes merges its keystrokes like a single node's edit does."""
    revnet.add_node("Conv", "f2", {"out_channels": 8, "padding": "same"}, (440, 300))
    revnet.connect("s.out1", "f2.in")
    doc, inspector = inspect(revnet, ["f", "f2"])
    editor = inspector.editors["out_channels"]
    assert editor.edit.text() == ""  # the values differ
    for text in ("4", "48"):  # "4" already is f's value: only f2 changes on the first key
        editor.set_text(text)
    assert doc.undo_stack.count() == 1
    assert [revnet.node(n).params["out_channels"] for n in ("f", "f2")] == [48, 48]
    editor.finished.emit()  # focus left the field: the next edit is a step of its own
    editor.set_text("6")
    assert doc.undo_stack.count() == 2
    doc.undo_stack.undo()
    assert [revnet.node(n).params["out_channels"] for n in ("f", "f2")] == [48, 48]
    doc.undo_stack.undo()
    assert [revnet.node(n).params["out_channels"] for n in ("f", "f2")] == [4, 8]
    doc.undo_stack.redo()
    assert [revnet.node(n).params["out_channels"] for n in ("f", "f2")] == [48, 48]


def test_a_group_field_with_no_group_chosen_shows_none_chosen_not_the_first_group(inspect):
    """A new coupling's f is empty; the combo showed the project's first group as if it were set."""
    from pathlib import Path

    from revstudio.core.project import load

    graph = load(Path(__file__).resolve().parents[2] / "resources" / "examples" / "revnet_coupling.revs")
    graph.add_node("AdditiveCoupling", "c2", {}, (0, 300))
    doc, inspector = inspect(graph, ["c2"])
    combo = inspector.editors["f"].combo
    assert combo.currentIndex() == -1 and combo.currentText() == ""
    assert "choose" in combo.placeholderText()
    assert inspector.editors["g"].combo.currentText() == "(none)"  # optional: none is a value
    combo.activated.emit(combo.findData("f"))
    assert graph.node("c2").params["f"] == "f"
    doc.undo_stack.undo()
    assert not graph.node("c2").params.get("f")
    assert combo.currentIndex() == -1


def test_an_unknown_parameter_from_the_file_can_be_removed_here(inspect, revnet, settle):
    """An unknown param is an error; the inspector said 'delete it in the file', so fixing it
    meant leaving the app for a text editor. Remove is one undoable edit."""
    from PySide6.QtWidgets import QPushButton

    revnet.node("f").params["zzz"] = 1  # as a file from another version could have it
    doc, inspector = inspect(revnet, ["f"])
    assert any("zzz" in d.message for d in doc.report.diagnostics if d.severity == "error")
    button = inspector.findChild(QPushButton, "removeParam_zzz")
    assert button is not None and button.isVisibleTo(inspector)
    button.click()
    settle()
    assert "zzz" not in revnet.node("f").params
    assert not any("zzz" in d.message for d in doc.report.diagnostics)
    assert inspector.findChild(QPushButton, "removeParam_zzz") is None
    assert doc.undo_stack.count() == 1
    doc.undo_stack.undo()
    settle()
    assert revnet.node("f").params["zzz"] == 1
    assert inspector.findChild(QPushButton, "removeParam_zzz") is not None


def _type(qtbot, editor, text):
    """Select the field's text and type ``text`` over it with real key events."""
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    editor.edit.setFocus()
    qtbot.waitUntil(editor.edit.hasFocus)
    editor.edit.selectAll()
    QTest.keyClick(editor.edit, Qt.Key.Key_Delete)
    QTest.keyClicks(editor.edit, text)


def test_an_invalid_text_changes_nothing_though_its_first_keys_parsed(qtbot, inspected, settle):
    """Typing "99999999" commits 9, 99, ... 999999 on the way; the too-large text must not leave
    999999 on the node (the card showed it while the field said "too large"), nor a step."""
    doc, inspector = inspected
    doc.undo_stack.setClean()
    inspector.activateWindow()
    editor = inspector.editors["out_channels"]
    _type(qtbot, editor, "99999999")
    settle()
    assert "too large" in editor.error()
    assert editor.edit.text() == "99999999"  # what was typed stays, with the reason under it
    assert doc.graph.node("f").params["out_channels"] == 4
    assert doc.undo_stack.count() == 0 and doc.undo_stack.isClean()
    inspector.title.setFocus()  # leave the field
    qtbot.waitUntil(lambda: not editor.edit.hasFocus())
    assert editor.edit.text() == "4" and editor.error() is None


def test_an_invalid_shared_edit_puts_back_each_nodes_own_value(qtbot, inspect, revnet, settle):
    revnet.add_node("Conv", "f2", {"out_channels": 8, "padding": "same"}, (440, 300))
    revnet.connect("s.out1", "f2.in")
    doc, inspector = inspect(revnet, ["f", "f2"])
    inspector.activateWindow()
    editor = inspector.editors["out_channels"]
    _type(qtbot, editor, "16")
    assert [revnet.node(n).params["out_channels"] for n in ("f", "f2")] == [16, 16]
    from PySide6.QtTest import QTest

    QTest.keyClicks(editor.edit, "k")  # "16k": no longer an integer
    assert "not an integer" in editor.error()
    assert [revnet.node(n).params["out_channels"] for n in ("f", "f2")] == [4, 8]
    assert doc.undo_stack.count() == 0
