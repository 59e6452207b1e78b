"""Quick add: a search popup listing node types, opened at the cursor.

Shift+A / Tab opens it with every type; dropping a wire on empty canvas opens
it filtered to the types that can take (or give) that wire. Typing filters by
name, category and help; Enter or a click picks the type and ``chosen`` fires.
Types come only from the spec registry.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from PySide6.QtCore import QPoint, Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QFrame, QLabel, QLineEdit, QListWidget, QListWidgetItem, QVBoxLayout, QWidget

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


def matches(spec: NodeSpec, text: str) -> int | None:
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

    def __init__(self, specs: Iterable[NodeSpec], title: str = "Add node", parent: QWidget | None = None) -> None:
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
        self.list = QListWidget()
        self.list.setMinimumWidth(300)
        self.list.setMinimumHeight(260)
        layout.addWidget(self.caption)
        layout.addWidget(self.search)
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
            item.setData(Qt.ItemDataRole.UserRole, spec.type_id)
            item.setToolTip(spec.help)
            self.list.addItem(item)
        if self.list.count():
            self.list.setCurrentRow(0)

    def visible_types(self) -> list[str]:
        return [self.list.item(i).data(Qt.ItemDataRole.UserRole) for i in range(self.list.count())]

    def accept_current(self) -> None:
        item = self.list.currentItem()
        if item is not None:
            self.choose(item.data(Qt.ItemDataRole.UserRole))

    def choose(self, type_id: str) -> None:
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
