"""What a low-vision keyboard user needs of the themes: text on a fill that reads, edges that show, and a
focus that can be seen.

Measured before: the dark theme's white text on its accent fill (a selected row, a menu item under the
keys, the OK button) read at 3.2:1, below WCAG AA's 4.5:1; a field's, button's or check box's edge was the
border colour, 1.2:1 on the window (WCAG 1.4.11 asks 3:1 of a control's edge), so a spin box or an
unchecked box was hard to find; and a push button, a tool button, a check box, a spin box or a list with
the keys looked as it did without them.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from PySide6.QtGui import QColor, QImage, QPalette
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QToolButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)
from test_visual_fit import _contrast

from revstudio.qt import theme

AA = 4.5
EDGE = 3.0  # WCAG 1.4.11: a control's edge and a focus indicator against what they stand beside
RULE = re.compile(r"([^{}]+)\{([^}]*)\}")
CONTROLS = ("QLineEdit", "QComboBox", "QAbstractSpinBox", "QPushButton", "QCheckBox::indicator")


@pytest.fixture(params=theme.THEMES)
def themed(request: Any, qapp: Any) -> Iterator[str]:
    theme.apply_theme(qapp, request.param)
    yield request.param
    theme.apply_theme(qapp, "dark")


def _rules(name: str) -> list[tuple[list[str], dict[str, str]]]:
    """The theme's stylesheet as (selectors, {property: value}) with its colour tokens substituted."""
    rules = []
    for selectors, body in RULE.findall(re.sub(r"/\*.*?\*/", "", theme.stylesheet(name), flags=re.S)):
        props = {}
        for declaration in body.split(";"):
            if ":" in declaration:
                key, value = declaration.split(":", 1)
                props[key.strip()] = value.strip()
        rules.append(([s.strip() for s in selectors.split(",")], props))
    return rules


def _colour(value: str) -> QColor | None:
    match = re.search(r"#[0-9a-fA-F]{6}\b", value)
    return QColor(match.group(0)) if match else None


@pytest.mark.parametrize("name", theme.THEMES)
def test_text_on_every_stylesheet_fill_reads_at_aa(name: str) -> None:
    checked = 0
    for selectors, props in _rules(name):
        fill = _colour(props.get("background", ""))
        ink = _colour(props.get("color", ""))
        if fill is None or ink is None:
            continue
        checked += 1
        ratio = _contrast(ink, fill)
        assert ratio >= AA, f"{name}: {', '.join(selectors)}: {ink.name()} on {fill.name()}: {ratio:.2f}"
    assert checked >= 5  # the menu's, the list's and the default button's selections among them


@pytest.mark.parametrize("name", theme.THEMES)
def test_the_palettes_selection_reads_at_aa(name: str, qapp: Any) -> None:
    theme.apply_theme(qapp, name)
    try:
        palette = qapp.palette()
        fill = palette.color(QPalette.ColorRole.Highlight)
        ink = palette.color(QPalette.ColorRole.HighlightedText)
        assert _contrast(ink, fill) >= AA, f"{name}: {ink.name()} on {fill.name()}"
    finally:
        theme.apply_theme(qapp, "dark")


@pytest.mark.parametrize("name", theme.THEMES)
def test_fields_buttons_and_check_boxes_show_their_edges(name: str) -> None:
    c = theme.colors(name)
    grounds = {g: QColor(getattr(c, g)) for g in ("window", "base", "alt_base")}
    found = set()
    for selectors, props in _rules(name):
        edge = _colour(props.get("border", ""))
        for control in CONTROLS:
            if control not in selectors or edge is None:
                continue
            found.add(control)
            for ground, colour in grounds.items():
                ratio = _contrast(edge, colour)
                assert ratio >= EDGE, f"{name}: {control}'s edge {edge.name()} on {ground} {colour.name()}: {ratio:.2f}"
    assert found == set(CONTROLS), f"{name}: no edge for {set(CONTROLS) - found}"


def _changed(before: QImage, after: QImage) -> int:
    """Pixels whose colour the focus changed by 3:1 or more."""
    count = 0
    for y in range(before.height()):
        for x in range(before.width()):
            old, new = before.pixelColor(x, y), after.pixelColor(x, y)
            if old != new and _contrast(old, new) >= EDGE:
                count += 1
    return count


def _widgets(parent: QWidget) -> dict[str, QWidget]:
    tool = QToolButton(parent)
    tool.setText("Save")
    tree = QTreeWidget(parent)
    tree.setHeaderHidden(True)
    QTreeWidgetItem(tree, ["Conv"])
    combo = QComboBox(parent)
    combo.addItems(["dark", "light"])
    spin = QSpinBox(parent)
    spin.setValue(32)
    field = QLineEdit("0.001", parent)
    return {"push button": QPushButton("Restore Defaults", parent), "tool button": tool,
            "check box": QCheckBox("log y", parent), "combo box": combo, "spin box": spin,
            "field": field, "list": tree}


def test_every_control_shows_when_it_has_the_keys(qtbot: Any, themed: str) -> None:
    dialog = QDialog()
    qtbot.addWidget(dialog)
    layout = QVBoxLayout(dialog)
    widgets = _widgets(dialog)
    for widget in widgets.values():
        layout.addWidget(widget)
    anchor = QLineEdit(dialog)  # holds the keys while the others are drawn without them
    layout.addWidget(anchor)
    dialog.show()
    dialog.activateWindow()
    qtbot.waitActive(dialog)
    unseen = []
    for what, widget in widgets.items():
        anchor.setFocus()
        qtbot.waitUntil(anchor.hasFocus)
        before = widget.grab().toImage()
        widget.setFocus()
        qtbot.waitUntil(widget.hasFocus)
        after = widget.grab().toImage()
        # a 1 px ring round the whole widget, each pixel changed by 3:1 (WCAG 2.4.13's focus appearance),
        # less a tenth for rounded corners
        ring = int(0.9 * 2 * (widget.width() + widget.height()))
        changed = _changed(before, after)
        if changed < ring:
            unseen.append(f"{what}: {changed} of {ring} px")
    assert not unseen, f"{themed}: focus not seen on " + "; ".join(unseen)


@pytest.mark.parametrize("dark", [True, False])
def test_canvas_outlines_wires_and_ports_stand_out_on_the_canvas_and_on_a_card(dark: bool) -> None:
    """The light canvas's selection amber (#d48806) was 2.6:1 on the canvas: a selected card's outline
    was hard to find at a low-vision user's zoom."""
    from revstudio.qt.canvas.theme import theme_for

    t = theme_for(dark)
    for ground_name in ("background", "node_body"):
        ground = QColor(getattr(t, ground_name))
        ground.setAlpha(255)
        for role in ("selection", "error", "warning", "hover", "wire", "wire_selected", "wire_invalid",
                     "port_in", "port_out"):
            colour = getattr(t, role)
            ratio = _contrast(colour, ground)
            assert ratio >= EDGE, f"{'dark' if dark else 'light'}: {role} {colour.name()} on {ground_name}: {ratio:.2f}"
