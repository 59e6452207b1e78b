"""The Code tab: a live, read-only, syntax-highlighted preview of ``revstudio.export``.

The view follows the document: each ``analysisChanged`` restarts a short
debounce timer, and the export is regenerated only while the tab is visible.
A snapshot of the graph (its project text) goes to the application's export
worker, a child process (:mod:`revstudio.qt.export_worker`): torch is never
imported by the editor and the GUI thread only paints. The text is swapped in
keeping the scroll position; replies to superseded edits are dropped.
"""
from __future__ import annotations

import logging
import os
import re
import time
from typing import Any

from PySide6.QtCore import QEvent, QEventLoop, QRegularExpression, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QFont, QFontDatabase, QSyntaxHighlighter, QTextCharFormat, QTextDocument
from PySide6.QtWidgets import (
    QApplication,
    QCheckBox,
    QFileDialog,
    QLabel,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from revstudio.qt.flow_layout import FlowLayout

log = logging.getLogger("revstudio")

DEBOUNCE_MS = 150  # an edit shows in the code well within half a second (benchmarks/README.md)
_SECTION = re.compile(r"^# ---- (.*)$")
_FOLDED = ("layers (verbatim", "reversible runtime (verbatim")  # inlined library code: folded
_NODE_LINE = re.compile(r"^\s*self\.(\w+) = .*# node '(.+?)' \(")
_CLASS_LINE = re.compile(r"^class \w+\(")
_GROUP_DOC = re.compile(r'^    """Group (.+?): ``forward')  # a group body's class (codegen.emit)


def fold(source: str) -> str:
    """The code with the inlined runtime sections reduced to one line each."""
    out: list[str] = []
    hidden = 0
    for line in source.splitlines(keepends=True):
        m = _SECTION.match(line.rstrip("\n"))
        if m is not None:
            if hidden > 0:
                out.append(f"#      … {hidden} lines folded: tick 'Show inlined runtime' to read them\n\n")
            hidden = 0
            folding = m.group(1).startswith(_FOLDED)
            out.append(line)
            if folding:
                hidden = -1  # the header stays; what follows it is counted
            continue
        if hidden:
            hidden = 1 if hidden < 0 else hidden + 1
            continue
        out.append(line)
    if hidden > 0:
        out.append(f"#      … {hidden} lines folded: tick 'Show inlined runtime' to read them\n")
    return "".join(out)

_KEYWORDS = (
    "and as assert async await break class continue def del elif else except finally for from global "
    "if import in is lambda nonlocal not or pass raise return try while with yield None True False"
).split()
_BUILTINS = (
    "abs all any bool dict enumerate float getattr hasattr int isinstance len list max min object print "
    "range repr setattr sorted str sum super tuple type zip"
).split()


def _fmt(color: str, bold: bool = False, italic: bool = False) -> QTextCharFormat:
    fmt = QTextCharFormat()
    fmt.setForeground(QColor(color))
    if bold:
        fmt.setFontWeight(QFont.Weight.Bold)
    fmt.setFontItalic(italic)
    return fmt


class PythonHighlighter(QSyntaxHighlighter):
    """Keywords, builtins, names after def/class, numbers, decorators, strings and comments.

    Triple-quoted strings span lines, so the block state remembers which
    quote (1 = ''', 2 = \"\"\") is still open at the end of a line.
    """

    def __init__(self, document: QTextDocument, dark: bool = True) -> None:
        super().__init__(document)
        self.set_dark(dark)

    def set_dark(self, dark: bool) -> None:
        c = (
            {"kw": "#c678dd", "bi": "#56b6c2", "def": "#61afef", "num": "#d19a66", "str": "#98c379",
             "com": "#7f848e", "deco": "#e5c07b", "self": "#e06c75"}
            if dark
            # One Light's hues, darkened to 4.5:1 on white: its comments were 2.6:1, strings 3.2:1
            else {"kw": "#a626a4", "bi": "#00709e", "def": "#2f5fd0", "num": "#986801", "str": "#3a7d39",
                  "com": "#6b6f78", "deco": "#7a5a00", "self": "#c0392b"}
        )
        self.formats = {
            "keyword": _fmt(c["kw"], bold=True),
            "builtin": _fmt(c["bi"]),
            "defname": _fmt(c["def"], bold=True),
            "number": _fmt(c["num"]),
            "string": _fmt(c["str"]),
            "comment": _fmt(c["com"], italic=True),
            "decorator": _fmt(c["deco"]),
            "self": _fmt(c["self"], italic=True),
        }
        words = "|".join(_KEYWORDS)
        self.rules: list[tuple[QRegularExpression, str, int]] = [
            (QRegularExpression(rf"\b(?:{words})\b"), "keyword", 0),
            (QRegularExpression(rf"\b(?:{'|'.join(_BUILTINS)})\b(?=\()"), "builtin", 0),
            (QRegularExpression(r"\bself\b"), "self", 0),
            (QRegularExpression(r"\b(?:def|class)\s+(\w+)"), "defname", 1),
            (QRegularExpression(r"\b(?:0[xX][0-9a-fA-F_]+|\d[\d_]*(?:\.\d*)?(?:[eE][+-]?\d+)?)\b"), "number", 0),
            (QRegularExpression(r"^\s*@[\w.]+"), "decorator", 0),
        ]
        self.rehighlight()

    def highlightBlock(self, text: str) -> None:  # noqa: N802 - Qt API
        for regex, name, group in self.rules:
            it = regex.globalMatch(text)
            while it.hasNext():
                m = it.next()
                self.setFormat(m.capturedStart(group), m.capturedLength(group), self.formats[name])
        self._strings_and_comments(text)

    def _strings_and_comments(self, text: str) -> None:
        """Scan left to right so a '#' inside a string is not a comment and vice versa."""
        self.setCurrentBlockState(0)
        i, n = 0, len(text)
        open_state = self.previousBlockState()
        if open_state in (1, 2):
            quote = "'''" if open_state == 1 else '"""'
            end = text.find(quote)
            if end < 0:
                self.setFormat(0, n, self.formats["string"])
                self.setCurrentBlockState(open_state)
                return
            self.setFormat(0, end + 3, self.formats["string"])
            i = end + 3
        while i < n:
            ch = text[i]
            if ch == "#":
                self.setFormat(i, n - i, self.formats["comment"])
                return
            if ch in "'\"":
                triple = text[i:i + 3]
                if triple in ("'''", '"""'):
                    end = text.find(triple, i + 3)
                    if end < 0:
                        self.setFormat(i, n - i, self.formats["string"])
                        self.setCurrentBlockState(1 if triple == "'''" else 2)
                        return
                    self.setFormat(i, end + 3 - i, self.formats["string"])
                    i = end + 3
                    continue
                j = i + 1
                while j < n and text[j] != ch:
                    j += 2 if text[j] == "\\" else 1
                self.setFormat(i, min(j + 1, n) - i, self.formats["string"])
                i = j + 1
                continue
            i += 1


def _snapshot(graph: Any, project: str | None = None, output: str | None = None) -> str:
    """The project text to export; written to ``output``, its relative data paths start from
    there (as ``revstudio export`` does), for the script and for reopening the file."""
    from revstudio.core.project import dumps, loads

    text = dumps(graph)
    if project and output and graph.training:
        from revstudio.codegen.files import relocated_training

        moved = loads(text)
        moved.training = relocated_training(graph.training, project, output)
        text = dumps(moved)
    return text


class CodeView(QWidget):
    """Read-only live preview of the exported Python code, with Copy and Export… buttons."""

    regenerated = Signal()  # the text was regenerated (tests and status bar)
    nodeClicked = Signal(str)  # a click on a node's line: the canvas selects that node
    groupNodeClicked = Signal(str, str)  # (group, node id): a line in a group body's class

    def __init__(self, document: Any, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.document = document
        self.with_training = QCheckBox("Include training script")
        self.show_runtime = QCheckBox("Show inlined runtime")
        self.show_runtime.setToolTip("The export is one standalone file: revstudio's reversible runtime and "
                                     "layers are copied into it. They are folded here to show your network.")
        self._source = ""
        self._following = False
        self.node_lines: dict[str, int] = {}  # node id -> line of its layer, in the text shown
        self.group_lines: dict[tuple[str, str], int] = {}  # (group, node id) -> line, in a body's class
        self._line_group: list[str] = []  # per line shown: the group whose class holds it ("" = none)
        self.status = QLabel()
        copy_button = QPushButton("Copy")
        self.export_button = export_button = QPushButton("Export…")
        self.editor = QPlainTextEdit()
        self.editor.setReadOnly(True)
        self.editor.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.editor.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.editor.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse | Qt.TextInteractionFlag.TextSelectableByKeyboard
        )
        dark = self.palette().color(self.backgroundRole()).lightness() < 128
        self.highlighter = PythonHighlighter(self.editor.document(), dark=dark)

        # wraps in a narrow Output dock: a row of 478 px pushed the dock (and its Log tab) past
        # the edge of a 900 px window at 200 % scale
        bar = FlowLayout()
        for widget in (self.with_training, self.show_runtime, copy_button, export_button, self.status):
            bar.addWidget(widget)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(bar)
        layout.addWidget(self.editor)

        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(DEBOUNCE_MS)
        self._timer.timeout.connect(self.refresh)
        self._stale = True
        self.ok = False
        self._request = 0         # the id of the latest request; replies to older ones are dropped
        self._busy = False        # one request at a time; edits meanwhile ask for one more run
        self._again = False
        self._worker: Any = None  # the shared export worker, on first use
        document.analysisChanged.connect(self.schedule)
        self.with_training.toggled.connect(lambda _on: self.refresh())
        copy_button.clicked.connect(lambda: QApplication.clipboard().setText(self.text()))
        self.show_runtime.toggled.connect(lambda _on: self._display(self._source, self.ok, force=True))
        self.editor.cursorPositionChanged.connect(self._on_cursor)
        export_button.clicked.connect(lambda: export_with_dialog(self, self.document, self.with_training.isChecked()))

    def schedule(self) -> None:
        """An edit happened: regenerate after the user pauses (debounce)."""
        self._stale = True
        if self.isVisible():
            self._timer.start()

    def changeEvent(self, event: Any) -> None:  # noqa: N802 - Qt API
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:  # the theme switched: recolour the code
            self.highlighter.set_dark(self.palette().color(self.backgroundRole()).lightness() < 128)

    def showEvent(self, event: Any) -> None:  # noqa: N802 - Qt API
        super().showEvent(event)
        if self._stale:
            self._timer.start()

    def refresh(self) -> None:
        """Regenerate from the graph as it is now; the text arrives via ``regenerated``."""
        self._timer.stop()
        self._stale = False
        if self._busy:
            self._again = True
            return
        try:
            text = _snapshot(self.document.graph)
        except Exception as exc:  # e.g. a value JSON cannot hold: explain instead of exporting
            self._request = -1
            self._display(f"# The graph cannot be exported yet: {exc}\n", False)
            return
        if self._worker is None:
            from revstudio.qt.export_worker import shared_worker

            self._worker = shared_worker()
            self._worker.finished.connect(self._show)
        self._busy = True
        self.status.setText("updating...")
        self._request = self._worker.request(text, self.with_training.isChecked())

    def _show(self, request: int, source: str, ok: bool) -> None:
        if request != self._request:
            return  # another view's request, or one an edit has superseded
        self._busy = False
        if self._again:
            self._again = False
            if not ok:  # a failure (a crashed worker) is said even when an edit is pending
                self._display(source, ok)
            self.refresh()
            return
        self._display(source, ok)

    def _display(self, source: str, ok: bool, force: bool = False) -> None:
        self.ok = ok
        if source != self._source or force:
            self._source = source
            shown = source if self.show_runtime.isChecked() else fold(source)
            vbar, hbar = self.editor.verticalScrollBar(), self.editor.horizontalScrollBar()
            v, h = vbar.value(), hbar.value()
            self._following = True
            self.editor.setPlainText(shown)
            self._following = False
            vbar.setValue(min(v, vbar.maximum()))
            hbar.setValue(min(h, hbar.maximum()))
            self._index_lines(shown)
        lines = source.count("\n")
        self.status.setText(f"{lines} lines" if ok else "graph has errors")
        self.regenerated.emit()

    def _index_lines(self, shown: str) -> None:
        """Where each node's layer is built: in Model, or in the class of a group body."""
        from revstudio.codegen.namespace import docstring_text

        groups = {docstring_text(name): name for name in getattr(self.document.graph, "groups", {})}
        self.node_lines, self.group_lines, self._line_group = {}, {}, []
        group = ""
        for i, line in enumerate(shown.splitlines()):
            if _CLASS_LINE.match(line):
                group = ""
            doc = _GROUP_DOC.match(line)
            if doc is not None:
                group = groups.get(doc.group(1), "")
            self._line_group.append(group)
            m = _NODE_LINE.match(line)
            if m is None:
                continue
            if group:
                self.group_lines.setdefault((group, m.group(2)), i)
            else:
                self.node_lines.setdefault(m.group(2), i)

    def text(self) -> str:
        """The whole export (what Copy and Export write), runtime included."""
        return self._source

    def show_node(self, node_id: str, group: str = "") -> bool:
        """Scroll to and highlight the line that builds ``node_id``'s layer (canvas -> code);
        ``group``: the node is in that group's body (its class's line)."""
        from PySide6.QtGui import QTextCursor
        from PySide6.QtWidgets import QTextEdit

        line = self.group_lines.get((group, node_id)) if group else self.node_lines.get(node_id)
        if line is None:
            self.editor.setExtraSelections([])
            return False
        block = self.editor.document().findBlockByNumber(line)
        cursor = QTextCursor(block)
        self._following = True
        self.editor.setTextCursor(cursor)
        self._following = False
        self.editor.centerCursor()
        mark = QTextEdit.ExtraSelection()
        mark.cursor = cursor
        mark.cursor.select(QTextCursor.SelectionType.LineUnderCursor)
        mark.format.setBackground(QColor(240, 180, 41, 70))
        self.editor.setExtraSelections([mark])
        return True

    def _on_cursor(self) -> None:
        """The user put the cursor on a layer's line (or a call of it): code -> canvas."""
        if self._following or not self.editor.hasFocus():
            return
        block = self.editor.textCursor().block()
        line, number = block.text(), block.blockNumber()
        group = self._line_group[number] if number < len(self._line_group) else ""
        m = _NODE_LINE.match(line)
        node = m.group(2) if m is not None else None
        if node is None:
            by_module = {mod: n for n, mod in self._modules(group).items()}
            node = next((by_module[name] for name in re.findall(r"self\.(\w+)\(", line) if name in by_module), None)
        if node is None:
            return
        if group:
            self.groupNodeClicked.emit(group, node)
        else:
            self.nodeClicked.emit(node)

    def _modules(self, group: str = "") -> dict[str, str]:
        """{node id: layer attribute} of Model's layers, or of one group body's class."""
        out = {}
        for i, line in enumerate(self.editor.toPlainText().splitlines()):
            m = _NODE_LINE.match(line)
            if m is not None and i < len(self._line_group) and self._line_group[i] == group:
                out[m.group(2)] = m.group(1)
        return out


def default_export_name(document: Any) -> str:
    """``model.revs`` -> ``model.py``; an untitled graph -> its name as a file name."""
    path = getattr(document, "path", None)
    if path:
        return re.sub(r"\.[^./\\]*$", "", path) + ".py"
    name = re.sub(r"[^\w-]+", "_", getattr(document.graph, "name", "") or "").strip("_")
    return (name or "model") + ".py"


def export_refusal(document: Any) -> str | None:
    """Why the graph cannot be exported as it is (its errors, each naming its node), or None."""
    current = getattr(document, "current_report", None)
    report = current() if callable(current) else getattr(document, "report", None)
    errors = [d for d in getattr(report, "diagnostics", None) or [] if getattr(d, "severity", "") == "error"]
    if not errors:
        return None
    lines = [f"• {d.node}{'.' + d.port if d.port else ''}: {d.message}" if d.node else f"• {d.message}"
             for d in errors[:5]]
    if len(errors) > 5:
        lines.append(f"… and {len(errors) - 5} more")
    many = len(errors) != 1
    return (f"The graph has {len(errors)} error{'s' * many}, so it cannot be exported yet; fix "
            f"{'them' if many else 'it'} first (see the Problems tab):\n" + "\n".join(lines))


def export_with_dialog(parent: QWidget | None, document: Any, with_training: bool | None = None) -> str | None:
    """File > Export Python…: ask where, write atomically, report problems in a message box.

    ``with_training`` None follows the Code tab's "Include training script" box.
    """
    problem = export_refusal(document)
    if problem is not None:  # before asking for a file name: the answer would be thrown away
        dialogs = getattr(parent.window(), "dialogs", None) if parent is not None else None
        if dialogs is not None:
            dialogs.error(parent, "Cannot export", problem)
        else:
            QMessageBox.warning(parent, "Cannot export", problem)
        return None
    if with_training is None:
        view = getattr(parent, "code_view", None)
        box = getattr(view, "with_training", None)
        with_training = bool(box.isChecked()) if box is not None else False
    path, _filter = QFileDialog.getSaveFileName(
        parent, "Export PyTorch code", default_export_name(document), "Python files (*.py)"
    )
    if not path:
        return None
    if not path.endswith(".py"):
        path += ".py"
    from revstudio.qt.export_worker import shared_worker

    def say(text: str, error: bool = False, logged: str | None = None) -> None:
        # the status bar and the Log panel both, so a slow export is never silent; the
        # Log gets the whole path (``logged``), the narrow status bar the file's name
        (log.error if error else log.info)("%s", logged or text)
        show = getattr(parent, "show_message", None)
        if show is not None:
            show(text)

    name = os.path.basename(path)
    started = time.perf_counter()
    say(f"Exporting {name}…")
    QApplication.processEvents(QEventLoop.ProcessEventsFlag.ExcludeUserInputEvents)  # paint it now
    QApplication.setOverrideCursor(Qt.CursorShape.WaitCursor)
    try:
        source, ok = shared_worker().export(_snapshot(document.graph, getattr(document, "path", None), path),
                                            with_training)
    except Exception as exc:  # a value JSON cannot hold
        source, ok = f"# The graph cannot be exported yet: {exc}\n", False
    finally:
        QApplication.restoreOverrideCursor()
    if not ok:
        say(f"Export of {name} failed", error=True)
        QMessageBox.warning(parent, "Cannot export", source.replace("# ", "").replace("#", ""))
        return None
    try:
        from revstudio.codegen import write_source

        write_source(source, path)
    except OSError as exc:
        say(f"Export of {name} failed: {exc.strerror or exc}", error=True)
        QMessageBox.warning(parent, "Cannot export", f"{path}: cannot write ({exc.strerror or exc}).")
        return None
    facts = f"({source.count(chr(10))} lines, {time.perf_counter() - started:.1f} s)"
    say(f"Exported {name} {facts}", logged=f"Exported {path} {facts}")
    return path
