"""Quick add: a search popup listing node types, opened at the cursor.

Shift+A / Tab opens it with every type; dropping a wire on empty canvas opens
it filtered to the types that can take (or give) that wire. Typing filters by
name, category and help; Enter or a click picks the type and ``chosen`` fires.
Types come only from the spec registry; the list also offers a Group and a Repeat
of each of the project's groups (a wire's list, those whose ports fit it), beside
the Group and Repeat types (:class:`GroupOffer`, chosen by its ``key``, which names
the group too).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QPoint, Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QFrame, QLabel, QLineEdit, QListWidget, QListWidgetItem, QVBoxLayout, QWidget

from revstudio.core import node_reference
from revstudio.core.spec import NodeSpec, registry
from revstudio.qt.palette import category_key

BODY_ONLY = ("GroupInput", "GroupOutput")


def candidate_specs(needs: str | None = None, in_body: bool = False) -> list[NodeSpec]:
    """Specs offered in quick add: all, or those with an input (``"input"``) / output (``"output"``) port.

    GroupInput/GroupOutput only make sense inside a group body, so only bodies offer them.
    """
    out = []
    for spec in registry:
        if spec.type_id in BODY_ONLY and not in_body:
            continue
        if needs is not None:
            try:
                ports = (spec.input_ports(spec.defaults()) if needs == "input"
                         else spec.output_ports(spec.defaults()))
            except Exception:  # ports that depend on a group not chosen yet
                ports = ()
            if not ports:
                continue
        out.append(spec)
    # in the Nodes panel's order (I/O, Layers, ..., Groups), not the categories' alphabet
    return sorted(out, key=lambda s: (category_key(s.category), s.display_name.lower()))


@dataclass(frozen=True)
class GroupOffer:
    """A Group or Repeat node of one group, as the quick-add list shows it (a spec's face)."""

    spec: NodeSpec
    group: str

    @property
    def type_id(self) -> str:
        return self.spec.type_id

    @property
    def key(self) -> str:
        """What the list's ``chosen`` gives for it (a spec's is its type id)."""
        return f"{self.spec.type_id}:{self.group}"

    @property
    def params(self) -> dict[str, Any]:
        return {"group": self.group}

    @property
    def display_name(self) -> str:
        return f"{self.spec.display_name}: {self.group}"

    @property
    def category(self) -> str:
        return self.spec.category

    @property
    def help(self) -> str:
        return f"a {self.spec.display_name} node running group {self.group!r}. {self.spec.help}"


Offer = NodeSpec | GroupOffer


def group_offers(needs: str | None, groups: Mapping[str, Any], names: Iterable[str],
                 shape: Sequence[int] | None = None) -> list[GroupOffer]:
    """A Group and a Repeat of each group in ``names`` with an input (``needs="input"``) or output
    port for the wire, taking its tensor (``shape``) where it is known; a Repeat only of a group
    it can run (as many outputs as inputs). With no wire (``needs=None``, Shift+A) every group's."""
    from revstudio.core.group_repeat import repeatable

    out = []
    for name in names:
        for type_id in ("Group", "Repeat"):
            spec = registry.find(type_id)
            if spec is None or name not in groups or (type_id == "Repeat" and not repeatable(groups[name])):
                continue
            offer = GroupOffer(spec, name)
            if needs is None:  # nothing to fit: a body the check will explain is still offered
                out.append(offer)
                continue
            try:
                ports = (spec.input_ports(offer.params, groups) if needs == "input"
                         else spec.output_ports(offer.params, groups))
            except Exception:  # a body the check will explain: not offered from a wire
                continue
            if ports and (not shape or accepts_shape(spec, shape, groups, offer.params)):
                out.append(offer)
    return out


def offer_key(offer: Offer) -> str:
    return offer.key if isinstance(offer, GroupOffer) else offer.type_id


def ordered(offers: Iterable[Offer]) -> list[Offer]:
    """In the Nodes panel's order, as :func:`candidate_specs` lists specs."""
    return sorted(offers, key=lambda s: (category_key(s.category), s.display_name.lower()))


def wire_refusal(name: str, spec: NodeSpec, shape: Sequence[int] | None, src: object,
                 groups: Mapping[str, Any], params: Mapping[str, Any] | None = None) -> str | None:
    """Why a ``spec`` node (called ``name``) cannot go into a wire carrying ``shape`` from ``src``,
    or None (also where the shape is not known)."""
    if shape and not accepts_shape(spec, shape, groups, params):
        return f"{name} cannot take the {'x'.join(map(str, shape))} tensor of {src}"
    return None


def accepts_shape(spec: NodeSpec, shape: Sequence[int], groups: Mapping[str, Any],
                  params: Mapping[str, Any] | None = None) -> bool:
    """Whether a new ``spec`` node with default params (or ``params``) can take a tensor of ``shape``.

    Checked on a throwaway two-node graph (an Input of that shape feeding every
    input port), so the cost does not grow with the document.
    """
    from revstudio.core.graph import Graph

    check = _check_fn()
    if check is None:
        return True
    trial = Graph("quick-add", groups=dict(groups))
    try:
        trial.add_node("Input", "src", {"shape": list(shape)})
        trial.add_node(spec.type_id, "new", dict(params or {}))
        inputs = trial.ports("new")[0]
        for port in inputs:
            trial.connect("src.out", f"new.{port}")
        report = check(trial)
    except Exception:  # an odd default or a checker hiccup: offer the type, the checker will explain
        return True
    # Only errors on an input port are about the tensor; others (a coupling whose
    # function group is not chosen yet) are fixed after adding, so the type stays offered.
    return not any(d.severity == "error" and d.node == "new" and d.port in inputs for d in report.diagnostics)


def _check_fn() -> Any:
    try:
        from revstudio.core.check import check
    except ImportError:
        return None
    return check


def matches(spec: Offer, text: str) -> int | None:
    """A rank (lower is better) when ``spec`` matches the typed ``text``, else None."""
    text = text.strip().lower()
    if not text:
        return 2
    name, tid = spec.display_name.lower(), spec.type_id.lower()
    if name.startswith(text) or tid.startswith(text):
        return 0
    if text in name or text in tid:
        return 1
    if text in spec.category.lower() or text in spec.help.lower():
        return 3
    # letters in order ("acp" -> AffineCouPling), like most command palettes
    it = iter(tid)
    if all(ch in it for ch in text.replace(" ", "")):
        return 4
    return None


class QuickAddPopup(QFrame):
    """A search field over a list of node types."""

    chosen = Signal(str)

    def __init__(self, specs: Iterable[Offer], title: str = "Add node", parent: QWidget | None = None) -> None:
        super().__init__(parent, Qt.WindowType.Popup)
        self.setObjectName("QuickAddPopup")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.specs = list(specs)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.setSpacing(4)
        self.caption = QLabel(title)
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search node types…")
        self.search.setClearButtonEnabled(True)
        self.nothing = QLabel()  # what an empty list means, instead of a blank box
        self.nothing.setObjectName("placeholder")
        self.nothing.setWordWrap(True)
        self.nothing.hide()
        self.list = QListWidget()
        self.list.setMinimumWidth(300)
        self.list.setMinimumHeight(260)
        self.search.setAccessibleName(f"{title}: search")  # (a screen reader said only "edit" and "list")
        self.list.setAccessibleName(f"{title}: matches")
        layout.addWidget(self.caption)
        layout.addWidget(self.search)
        layout.addWidget(self.nothing)
        layout.addWidget(self.list)
        self.search.textChanged.connect(self.filter)
        self.search.returnPressed.connect(self.accept_current)
        self.list.itemActivated.connect(lambda item: self.choose(item.data(Qt.ItemDataRole.UserRole)))
        self.list.itemClicked.connect(lambda item: self.choose(item.data(Qt.ItemDataRole.UserRole)))
        self.search.installEventFilter(self)
        self.filter("")

    def filter(self, text: str) -> None:
        self.list.clear()
        ranked = [(r, i, s) for i, s in enumerate(self.specs) if (r := matches(s, text)) is not None]
        for _, _, spec in sorted(ranked, key=lambda t: (t[0], t[1])):
            item = QListWidgetItem(f"{spec.display_name}    ·  {spec.category}")
            item.setData(Qt.ItemDataRole.UserRole, offer_key(spec))
            item.setToolTip(spec.help if isinstance(spec, GroupOffer)  # (names its group, then the type's help)
                            else node_reference.text(spec, registry))  # what 'revstudio nodes TYPE' prints
            self.list.addItem(item)
        if self.list.count():
            self.list.setCurrentRow(0)
        self.say_if_empty(text, "node type", "clear the field to list them all")

    def say_if_empty(self, text: str, what: str, hint: str) -> None:
        """Above an empty list, why it is empty: nothing matches what was typed."""
        self.nothing.setText(f"No {what} matches \u201c{text.strip()}\u201d; {hint}")
        self.nothing.setVisible(self.list.count() == 0 and bool(text.strip()))

    def visible_types(self) -> list[str]:
        return [self.list.item(i).data(Qt.ItemDataRole.UserRole) for i in range(self.list.count())]

    def accept_current(self) -> None:
        item = self.list.currentItem()
        if item is not None:
            self.choose(item.data(Qt.ItemDataRole.UserRole))

    def choose(self, type_id: str) -> None:
        """Pick ``type_id`` (or a :class:`GroupOffer`'s ``key``)."""
        self.close()
        self.chosen.emit(type_id)

    def eventFilter(self, obj: object, event: object) -> bool:  # noqa: N802 - Qt API
        # Up/Down in the search field move through the list, as in every launcher.
        if isinstance(event, QKeyEvent) and event.type() == QKeyEvent.Type.KeyPress:
            if event.key() in (Qt.Key.Key_Down, Qt.Key.Key_Up):
                row = self.list.currentRow() + (1 if event.key() == Qt.Key.Key_Down else -1)
                self.list.setCurrentRow(max(0, min(self.list.count() - 1, row)))
                return True
            if event.key() == Qt.Key.Key_Escape:
                self.close()
                return True
        return super().eventFilter(obj, event)  # type: ignore[arg-type]

    def popup_at(self, global_pos: QPoint) -> None:
        self.move(global_pos)
        self.show()
        self.search.setFocus()
