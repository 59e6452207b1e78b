"""Connect by keyboard (Ctrl+K): a search over the wires the selected nodes can take or drop.

Dragging from a port is the mouse's way to wire; this list is the keyboard's. It
offers every wire between the selection and the other nodes that the graph
allows (no cycle, no duplicate), those between selected nodes first, and then the
existing wires touching the selection, to disconnect them. Wires into an input that is fed
already ("replaces ...") would flood the list: unless the text asks for them they stay out
while there are free inputs to wire, and come capped otherwise (a last line says how many
more a search finds). Typing filters; Enter connects (or disconnects) as one undoable step,
through the same rules as a drop.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QListWidgetItem, QWidget

from revstudio.core.graph import Graph, PortRef

from .quick_add import QuickAddPopup

REPLACING_SHOWN = 5  # wires that replace a fed input, listed unasked when no input is free


@dataclass(frozen=True)
class WireChoice:
    """One line of the list: connect ``src -> dst`` (replacing ``replaces``), or drop that wire."""

    src: PortRef
    dst: PortRef
    disconnect: bool = False
    replaces: PortRef | None = None

    @property
    def label(self) -> str:
        if self.disconnect:
            return f"Disconnect {self.src} → {self.dst}"
        return f"{self.src} → {self.dst}" + (f"   (replaces {self.replaces})" if self.replaces else "")


def wire_choices(graph: Graph, selected: Sequence[str]) -> list[WireChoice]:
    """Wires the graph allows between ``selected`` and the other nodes, then the selection's wires."""
    chosen = [n for n in selected if n in graph.nodes]
    inside = set(chosen)
    others = [n for n in graph.nodes if n not in inside]
    # nearest first, as a drag reaches for the next card: wires out of the selection to the nodes
    # right of it, wires into it from the nodes left of it (in a big graph the node order listed
    # its far-off first nodes, and Enter wired the Input instead of the card beside it)
    xs = [graph.node(n).pos[0] for n in chosen]
    ys = [graph.node(n).pos[1] for n in chosen]
    cx, cy = (sum(xs) / len(xs), sum(ys) / len(ys)) if chosen else (0.0, 0.0)

    def near(n: str, downstream: bool) -> tuple[bool, float]:
        x, y = graph.node(n).pos
        return ((x < cx) if downstream else (x > cx)), (x - cx) ** 2 + (y - cy) ** 2

    pairs = [(a, b) for a in chosen for b in chosen if a != b]                               # between selected nodes first
    pairs += [(a, b) for a in chosen for b in sorted(others, key=lambda n: near(n, True))]   # then out of the selection
    pairs += [(a, b) for b in chosen for a in sorted(others, key=lambda n: near(n, False))]  # then into it
    free: list[WireChoice] = []
    fed: list[WireChoice] = []
    for a, b in pairs:
        outs, ins = graph.ports(a)[1], graph.ports(b)[0]
        for out in outs:
            for inp in ins:
                src, dst = PortRef(a, out), PortRef(b, inp)
                if graph.check_connect(src, dst) is not None:
                    continue
                feeding = graph.edges_into(b, inp)
                if feeding:
                    fed.append(WireChoice(src, dst, replaces=feeding[0].src))
                else:
                    free.append(WireChoice(src, dst))
    wires = [e for e in graph.edges if e.src.node in inside or e.dst.node in inside]
    return [*free, *fed, *(WireChoice(e.src, e.dst, disconnect=True) for e in wires)]


class ConnectPopup(QuickAddPopup):
    """The quick-add popup's search field and list, over wires instead of node types."""

    def __init__(self, choices: Sequence[WireChoice], title: str, parent: QWidget | None = None) -> None:
        self.choices = list(choices)
        super().__init__((), title, parent)
        self.search.setPlaceholderText("Port, e.g. out1 or m.in0…")
        # wide enough for its longest line ("(replaces ...)" was cut off), within the canvas
        widest = max((self.list.fontMetrics().horizontalAdvance(c.label) for c in self.choices), default=0) + 40
        room = parent.width() - 48 if parent is not None else widest
        self.list.setMinimumWidth(max(360, min(widest, room)))
        self.filter("")

    def filter(self, text: str) -> None:
        self.list.clear()
        words = text.lower().split()
        found = [(i, c) for i, c in enumerate(getattr(self, "choices", ()))
                 if all(w in c.label.lower() for w in words)]
        free = [(i, c) for i, c in found if not c.disconnect and c.replaces is None]
        replacing = [(i, c) for i, c in found if c.replaces is not None]
        shown = replacing if words else [] if free else replacing[:REPLACING_SHOWN]
        for i, choice in [*free, *shown, *((i, c) for i, c in found if c.disconnect)]:
            item = QListWidgetItem(choice.label)
            item.setData(Qt.ItemDataRole.UserRole, str(i))
            self.list.addItem(item)
        hidden = len(replacing) - len(shown)
        if hidden:
            more = "1 more wire replaces" if hidden == 1 else f"{hidden} more wires replace"
            hint = QListWidgetItem(f"…{more} a wired input: type a port (e.g. in0) to list them")
            hint.setFlags(Qt.ItemFlag.NoItemFlags)  # a note, not a choice
            self.list.addItem(hint)
        if self.list.count() and self.list.item(0).flags() != Qt.ItemFlag.NoItemFlags:
            self.list.setCurrentRow(0)

    def accept_current(self) -> None:
        item = self.list.currentItem()
        if item is not None and item.data(Qt.ItemDataRole.UserRole) is not None:
            self.choose(item.data(Qt.ItemDataRole.UserRole))

    def visible_labels(self) -> list[str]:
        return [self.list.item(i).text() for i in range(self.list.count())]

    def choice(self, key: str) -> WireChoice:
        return self.choices[int(key)]
