"""Inspector editors generated from each parameter's kind (never named by the model).

:func:`make_editor` maps a :class:`~revstudio.core.params.Param` kind to a
small widget. Text kinds are parsed and validated as the user types: a valid
value is emitted at once with ``committed`` (the document merges the keystrokes
of one visit into one undo step), an invalid one shows the reason inline and
emits ``invalid`` (the inspector puts back the value from before the visit);
leaving the field with an invalid text shows the node's value again. An empty
field resets the parameter to its default.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Collection
from typing import Any

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QKeyEvent, QKeySequence
from PySide6.QtWidgets import QCheckBox, QComboBox, QCompleter, QLabel, QLineEdit, QVBoxLayout, QWidget

from revstudio.core import node_reference
from revstudio.core.params import Param, ParamError, to_json

_SEP = re.compile(r"[\s,;]+")
_TIMES = re.compile(r"(?<=\d)\s*[x×*]\s*(?=[+-]?\d)")  # "3x32x32" reads as a shape


class ParseError(ValueError):
    """The typed text is not a value of the parameter's kind."""


def _parse_int(text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise ParseError(f"'{text.strip()}' is not an integer") from None


def _parse_float(text: str) -> float:
    try:
        return float(text.strip())
    except ValueError:
        raise ParseError(f"'{text.strip()}' is not a number") from None


def _parse_int_list(text: str) -> list[int]:
    inner = text.strip().strip("[]()").strip()
    if not inner:
        return []
    return [_parse_int(part) for part in _SEP.split(_TIMES.sub(",", inner)) if part]


def _parse_int_or_word(text: str) -> int | str:
    t = text.strip()
    return _parse_int(t) if re.fullmatch(r"[+-]?\d+", t) else t


def _parse_int_or_list(text: str) -> int | list[int]:
    t = text.strip()
    if re.search(r"[\[\](),\sx×*]", t):
        return _parse_int_list(t)
    return _parse_int(t)


PARSERS: dict[str, Callable[[str], Any]] = {
    "int": _parse_int,
    "float": _parse_float,
    "str": lambda text: text,
    "int_list": _parse_int_list,
    "shape": _parse_int_list,
    "int_or_choice": _parse_int_or_word,
    "int_or_list": _parse_int_or_list,
}


def format_value(value: Any) -> str:
    """How a stored value reads in a text field (the inverse of the parsers)."""
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    if isinstance(value, float):
        return f"{value:g}"
    if value is None:
        return ""
    return str(value)


def parse_text(param: Param, text: str) -> Any:
    """Typed text -> validated JSON value; None means "use the default".

    Raises :class:`ParseError` or :class:`ParamError` with a message for the user.
    """
    if param.kind != "str" and not text.strip():
        return None
    parser = PARSERS.get(param.kind, lambda t: t)
    return to_json(param.validate(parser(text)))


class ParamEditor(QWidget):
    """Base: one parameter's editor. ``committed(value)``: a valid new value (None = default)."""

    committed = Signal(object)
    field: QWidget | None = None  # the widget that takes the keyboard focus (see make_editor)
    invalid = Signal()  # the text stopped parsing: the nodes go back to what they held before this visit
    finished = Signal()  # the user left the field: the next edit is a new undo step

    def __init__(self, name: str, param: Param, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.name, self.param = name, param
        self._value: Any = None
        self.error_label = QLabel(self)
        self.error_label.setObjectName("paramError")
        self.error_label.setWordWrap(True)
        self.error_label.hide()
        self._vbox = QVBoxLayout(self)
        self._vbox.setContentsMargins(0, 0, 0, 0)
        self._vbox.setSpacing(2)
        self.setToolTip(self._tooltip())

    def _tooltip(self) -> str:
        facts = node_reference.param_facts(self.param)  # as 'revstudio nodes TYPE' and docs/nodes.md say it
        parts = [facts["meaning"], facts["allowed"], f"default: {format_value(self.param.default) or '(empty)'}"]
        return "\n".join(p for p in parts if p)

    def value(self) -> Any:
        """The stored value shown (None = default)."""
        return self._value

    def set_value(self, value: Any) -> None:
        """Show the model's value without emitting anything."""
        self._value = value
        self.show_error(None)

    def error(self) -> str | None:
        return self.error_label.text() if self.error_label.isVisibleTo(self) else None

    def show_error(self, message: str | None) -> None:
        self.error_label.setText(message or "")
        self.error_label.setVisible(bool(message))

    def effective(self) -> Any:
        return to_json(self.param.default) if self._value is None else self._value

    def _emit(self, value: Any) -> None:
        if value == self._value:
            return
        self._value = value
        self.committed.emit(value)


def undo_key(event: QEvent) -> bool:
    """Whether ``event`` is an Undo or Redo key (a key press or its ShortcutOverride).

    A field whose text is committed as it is typed (an inspector field, a batch box) leaves these
    to the document's stack: its own text undo would only push the old text back as a new edit.
    Its ``event`` ignores their ShortcutOverride (the window's Undo/Redo shortcut takes the key)
    and its ``keyPressEvent`` drops them (where that action is disabled: nothing to undo)."""
    return isinstance(event, QKeyEvent) and event.type() in (QEvent.Type.ShortcutOverride, QEvent.Type.KeyPress) \
        and (event.matches(QKeySequence.StandardKey.Undo) or event.matches(QKeySequence.StandardKey.Redo))


class UndoKeysToDocument:
    """Mixed in before a Qt input widget: its Undo and Redo keys go to the document's stack
    (:func:`undo_key`), not to the widget's own text undo."""

    def event(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.ShortcutOverride and undo_key(event):
            event.ignore()
            return True
        return super().event(event)  # type: ignore[misc]

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 - Qt API
        if undo_key(event):
            event.ignore()
            return
        super().keyPressEvent(event)  # type: ignore[misc]


class FieldEdit(UndoKeysToDocument, QLineEdit):
    """A parameter's line edit: Undo and Redo keys go to the document's stack (:func:`undo_key`)."""


class TextEditor(ParamEditor):
    """int, float, str, int lists, shapes, int-or-word, count-or-list: a validated line edit."""

    def __init__(self, name: str, param: Param, parent: QWidget | None = None) -> None:
        super().__init__(name, param, parent)
        self.edit = FieldEdit(self)
        self.edit.setPlaceholderText(f"default: {format_value(param.default) or '(empty)'}")
        self.edit.setToolTip(self.toolTip())
        self._vbox.addWidget(self.edit)
        self._vbox.addWidget(self.error_label)
        self.edit.textEdited.connect(self._on_text)
        self.edit.editingFinished.connect(self._on_finished)
        options = getattr(param, "options", ())
        if options:  # int-or-word kinds: offer the words as you type
            completer = QCompleter(list(options), self.edit)
            completer.setCompletionMode(QCompleter.CompletionMode.UnfilteredPopupCompletion)
            completer.activated.connect(self.set_text)
            self.edit.setCompleter(completer)

    def set_value(self, value: Any) -> None:
        if self.edit.hasFocus() or self.error() is not None:
            try:  # don't rewrite what the user is typing if it already means this value
                same = parse_text(self.param, self.edit.text()) == value
            except (ParseError, ParamError):
                self._value = value  # the value put back under an invalid text: keep the text and its reason
                return
            if same:
                super().set_value(value)
                return
        self._show(value)

    def _show(self, value: Any) -> None:
        super().set_value(value)
        self.edit.setText(format_value(value))
        self._mark(False)

    def _on_finished(self) -> None:
        if self.error() is not None and not self.edit.hasFocus():
            self._show(self._value)  # left with an invalid text: show what the node holds
        self.finished.emit()

    def set_text(self, text: str) -> None:
        """Type ``text`` as a user would (used by tests and the quick editor)."""
        self.edit.setText(text)
        self._on_text(text)

    def _mark(self, invalid: bool) -> None:
        if bool(self.edit.property("invalid")) != invalid:
            self.edit.setProperty("invalid", invalid)
            self.edit.style().unpolish(self.edit)
            self.edit.style().polish(self.edit)

    def _on_text(self, text: str) -> None:
        try:
            value = parse_text(self.param, text)
        except (ParseError, ParamError) as exc:
            self.show_error(f"{self.name}: {exc}")
            self._mark(True)
            self.invalid.emit()
            return
        self.show_error(None)
        self._mark(False)
        self._emit(value)


class ChoiceEditor(ParamEditor):
    def __init__(self, name: str, param: Param, parent: QWidget | None = None) -> None:
        super().__init__(name, param, parent)
        self.combo = QComboBox(self)
        self.combo.setToolTip(self.toolTip())
        self.combo.addItems(list(getattr(param, "options", ())))
        # As narrow as a few letters (the form widens it): sized to its longest option ("kaiming_uniform")
        # it set the inspector's least width past its share of a 900 px window, cutting every editor
        self.combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.combo.setMinimumContentsLength(6)
        self._vbox.addWidget(self.combo)
        self._vbox.addWidget(self.error_label)
        self.combo.activated.connect(self._on_activated)

    def set_value(self, value: Any) -> None:
        super().set_value(value)
        self.combo.setCurrentText(str(self.effective()))

    def choose(self, option: str) -> None:
        index = self.combo.findText(option)
        if index < 0:
            raise ValueError(f"{self.name}: {option!r} is not one of the options")
        self.combo.setCurrentIndex(index)
        self._on_activated(index)

    def _on_activated(self, index: int) -> None:
        self._emit(self.combo.itemText(index))
        self.finished.emit()


class BoolEditor(ParamEditor):
    def __init__(self, name: str, param: Param, parent: QWidget | None = None) -> None:
        super().__init__(name, param, parent)
        self.box = QCheckBox(self)
        self.box.setToolTip(self.toolTip())
        self._vbox.addWidget(self.box)
        self.box.clicked.connect(self._on_clicked)

    def set_value(self, value: Any) -> None:
        super().set_value(value)
        self.box.setChecked(bool(self.effective()))

    def _on_clicked(self, checked: bool) -> None:
        self._emit(bool(checked))
        self.finished.emit()


class GroupEditor(ParamEditor):
    """The name of a group body: pick one of the project's groups."""

    def __init__(self, name: str, param: Param, parent: QWidget | None = None) -> None:
        super().__init__(name, param, parent)
        self.combo = QComboBox(self)
        self.combo.setToolTip(self.toolTip())
        self.combo.setPlaceholderText("(choose a group)")  # shown while none is chosen
        self._vbox.addWidget(self.combo)
        self._vbox.addWidget(self.error_label)
        self.combo.activated.connect(self._on_activated)
        self._names: list[str] = []
        self._containing: set[str] = set()

    def set_groups(self, names: list[str], containing: Collection[str] = ()) -> None:
        """Offer ``names``; a current value among ``containing`` (groups that contain the node, which
        are not offered) stays visible, marked, as a dangling one does."""
        self._names, self._containing = list(names), set(containing)
        current = self.effective()
        self.combo.blockSignals(True)
        self.combo.clear()
        if getattr(self.param, "optional", False):
            self.combo.addItem("(none)", "")
        for n in names:
            self.combo.addItem(n, n)
        if current and current not in names:  # a dangling reference stays visible, marked
            why = "contains this node" if current in containing else "missing"
            self.combo.addItem(f"{current} ({why})", current)
        # no group chosen yet: the placeholder, not the first group as if it were set
        self.combo.setCurrentIndex(self.combo.findData(current))
        self.combo.blockSignals(False)

    def set_value(self, value: Any) -> None:
        super().set_value(value)
        index = self.combo.findData(self.effective())
        if index < 0 and self.effective():  # one not offered: listed again, marked
            self.set_groups(self._names, self._containing)
        elif index >= 0 or not self.effective():
            self.combo.setCurrentIndex(index)

    def _on_activated(self, index: int) -> None:
        value = self.combo.itemData(index)
        try:
            self.param.validate(value)
        except ParamError as exc:
            self.show_error(f"{self.name}: {exc}")
            return
        self.show_error(None)
        self._emit(value)
        self.finished.emit()


EDITORS: dict[str, type[ParamEditor]] = {
    "choice": ChoiceEditor,
    "bool": BoolEditor,
    "group": GroupEditor,
}


def make_editor(name: str, param: Param, parent: QWidget | None = None) -> ParamEditor:
    """The editor for ``param``'s kind; unknown kinds get a validated text field."""
    editor = EDITORS.get(param.kind, TextEditor)(name, param, parent)
    inner = next((w for w in (getattr(editor, a, None) for a in ("edit", "combo", "box")) if w is not None), None)
    if inner is not None:
        # One Tab stop per field, on the field itself: a focusable container took a stop of
        # its own that showed no focus at all, so every field needed two Tabs.
        editor.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        editor.field = inner
    else:
        editor.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
    # A screen reader names the field by its parameter (the label beside it is no buddy of it): it said
    # "edit" or "combo box" for every field of the inspector.
    target = inner if inner is not None else editor
    target.setAccessibleName(name)
    target.setAccessibleDescription(editor.toolTip())
    return editor
