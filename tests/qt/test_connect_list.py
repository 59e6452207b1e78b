"""Edit > Connect (Ctrl+K) offers the useful wires first: with a free input to wire, the list does not
flood with wires that replace a fed input ("(replaces ...)"); typing a port lists them."""
from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt

from revstudio.qt.canvas.connect_popup import ConnectPopup, wire_choices


def _popup(qtbot: Any, graph: Any, node: str) -> ConnectPopup:
    popup = ConnectPopup(wire_choices(graph, [node]), f"Connect {node}")
    qtbot.addWidget(popup)
    return popup


def test_free_wires_come_without_a_flood_of_replacements(qtbot: Any, revnet: Any) -> None:
    revnet.remove_edge(next(e for e in revnet.edges if str(e.dst) == "f.in"))  # f's input is free now
    popup = _popup(qtbot, revnet, "f")
    labels = popup.visible_labels()
    assert not any("(replaces" in line for line in labels), labels
    assert labels[0] == "s.out0 → f.in"  # a free wire first, chosen by Enter: from the nearest card left of f
    assert any(line.startswith("Disconnect f.out → m.in1") for line in labels)
    note = popup.list.item(popup.list.count() - 1)
    assert "more wires replace a wired input" in note.text() and note.flags() == Qt.ItemFlag.NoItemFlags
    # asked for by a port's name, they are listed
    popup.search.setText("c.in0")
    assert popup.visible_labels() == ["f.out → c.in0   (replaces m.out)"]


def test_with_no_free_input_the_replacements_come_capped(qtbot: Any, revnet: Any) -> None:
    popup = _popup(qtbot, revnet, "f")  # every input it could feed is wired
    replacing = [c for c in popup.choices if c.replaces is not None]
    assert len(replacing) > 5
    labels = popup.visible_labels()
    assert sum("(replaces" in line for line in labels) == 5
    assert labels[-1].startswith(f"…{len(replacing) - 5} more wire")
    popup.list.setCurrentRow(popup.list.count() - 1)
    popup.accept_current()  # the note is no choice: nothing happens
    assert popup.list.count() == len(labels)
