"""The palette lists the registry by category, searches it, and drags only a type id."""
from __future__ import annotations

from PySide6.QtCore import Qt

from revstudio.core.spec import registry
from revstudio.qt.palette import NODE_MIME, TYPE_ROLE, PaletteWidget


def test_every_registered_type_is_listed_under_its_category(qtbot):
    palette = PaletteWidget()
    qtbot.addWidget(palette)
    listed = {}
    for i in range(palette.tree.topLevelItemCount()):
        head = palette.tree.topLevelItem(i)
        for j in range(head.childCount()):
            listed[head.child(j).data(0, TYPE_ROLE)] = head.text(0)
    assert listed == {spec.type_id: spec.category for spec in registry}
    conv = palette.item_for("Conv")
    assert registry.get("Conv").help in conv.toolTip(0)


def test_search_filters_by_name_category_and_help(qtbot):
    palette = PaletteWidget()
    qtbot.addWidget(palette)
    palette.search.setText("conv")
    visible = palette.visible_type_ids()
    assert "Conv" in visible and "Input" not in visible
    palette.search.setText("coupling")
    assert set(palette.visible_type_ids()) >= {"AdditiveCoupling", "AffineCoupling"}
    palette.search.setText("no such thing at all")
    assert palette.visible_type_ids() == []
    assert "No node type matches" in palette.help.text()
    palette.search.clear()
    assert len(palette.visible_type_ids()) == len(list(registry))


def test_drag_payload_is_only_the_type_id(qtbot):
    palette = PaletteWidget()
    qtbot.addWidget(palette)
    data = palette.tree.mimeData([palette.item_for("Split")])
    assert data.formats()[0] == NODE_MIME
    assert bytes(data.data(NODE_MIME).data()) == b"Split"


def test_double_click_and_enter_ask_to_add(qtbot):
    palette = PaletteWidget()
    qtbot.addWidget(palette)
    with qtbot.waitSignal(palette.addRequested) as sig:
        palette.tree.itemDoubleClicked.emit(palette.item_for("Dropout"), 0)
    assert sig.args == ["Dropout"]
    palette.search.setText("Squeeze")
    with qtbot.waitSignal(palette.addRequested) as sig:
        palette.search.returnPressed.emit()
    assert sig.args == ["Squeeze"]


def test_selecting_a_type_shows_its_help_and_ports(qtbot):
    palette = PaletteWidget()
    qtbot.addWidget(palette)
    palette.tree.setCurrentItem(palette.item_for("Split"))
    assert "out0" in palette.help.text() and registry.get("Split").category in palette.help.text()


def test_enter_adds_the_type_whose_name_matches_not_the_first_help_mention(qtbot):
    """"coupl" + Enter added a Merge (its help mentions couplings; Structure comes first)."""
    palette = PaletteWidget()
    qtbot.addWidget(palette)
    for text, expected in (("coupl", "AdditiveCoupling"), ("lin", "Linear"), ("inv", "InvConv1x1"),
                           ("flat", "Flatten"), ("group", "Group"), ("relu", "Activation"), ("conv", "Conv")):
        palette.search.setText(text)
        with qtbot.waitSignal(palette.addRequested) as sig:
            palette.search.returnPressed.emit()
        assert sig.args == [expected], text
        assert palette.tree.currentItem().data(0, TYPE_ROLE) == expected  # the one Enter adds is marked


def test_a_real_double_click_adds_one_node_and_enter_one(qtbot):
    """A double-click in the tree added the type twice (Qt emits itemActivated after
    itemDoubleClicked, and both were connected): two Inputs for one double-click."""
    palette = PaletteWidget()
    qtbot.addWidget(palette)
    palette.show()
    qtbot.waitExposed(palette)
    asked = []
    palette.addRequested.connect(asked.append)
    tree = palette.tree
    rect = tree.visualItemRect(palette.item_for("Conv"))
    qtbot.mouseClick(tree.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    qtbot.mouseDClick(tree.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert asked == ["Conv"]
    tree.setFocus()
    tree.setCurrentItem(palette.item_for("Split"))
    qtbot.keyClick(tree, Qt.Key.Key_Return)
    assert asked == ["Conv", "Split"]
    qtbot.keyClick(tree, Qt.Key.Key_Enter, Qt.KeyboardModifier.KeypadModifier)
    assert asked == ["Conv", "Split", "Split"]
