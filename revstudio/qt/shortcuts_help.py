"""Help > Keyboard Shortcuts: the table of every action with a key, read from the actions
themselves, plus the keys that are no actions (the canvas's nudging, a focused plot's zoom) and a line on
the mouse."""
from __future__ import annotations

from PySide6.QtGui import QAction, QKeySequence

from revstudio.qt.canvas import nudge


def shortcuts_html(actions_by_name: dict[str, QAction]) -> str:
    """The dialog's text: two columns of action name and keys, then the canvas's gestures."""
    from html import escape

    from revstudio.qt.plots import plot_keys  # (pyqtgraph: loaded when the help is asked for, not before)

    # undo/redo actions' texts follow the stack ("Undo Delete f"): name the action itself
    fixed = {"undo": "Undo", "redo": "Redo"}
    cells = []
    for name, a in actions_by_name.items():
        label = fixed.get(name, a.text().replace("&", ""))
        # Qt's dedicated Undo/Redo keys read as the action's own name ("Redo: ..., Redo"): left out
        keys = [k.toString(QKeySequence.SequenceFormat.NativeText) for k in a.shortcuts()]
        keys = [k for k in keys if k and k != label]
        if keys:
            cells.append(f"<td style='padding:0 10px 1px 0; white-space:nowrap'>{escape(label)}</td>"
                         f"<td style='padding:0 28px 1px 0'><b>{escape(', '.join(keys))}</b></td>")
    # the canvas's arrow keys are no actions (a text field keeps its arrows): listed by hand
    # so are a focused plot's zoom keys (Plots tab): theirs only while the plot has the focus
    for label, keys_text in (("Nudge the selection", nudge.KEYS), ("Nudge by a grid step", nudge.GRID_KEYS),
                             ("Zoom a focused plot in / out / whole run", plot_keys.ZOOM_KEYS)):
        cells.append(f"<td style='padding:0 10px 1px 0; white-space:nowrap'>{escape(label)}</td>"
                     f"<td style='padding:0 28px 1px 0'><b>{escape(keys_text)}</b></td>")
    # two columns, rows without padding above: one column ran ~950 px tall, and two ~720 px once the list
    # grew, past a laptop's screen (three do not fit a message box's width)
    half = (len(cells) + 1) // 2
    rows = "".join(f"<tr>{cells[i]}{cells[i + half] if i + half < len(cells) else ''}</tr>"
                   for i in range(half))
    extra = ("<p>On the canvas: drag from a port to wire it (Ctrl+K from the keyboard), Space+drag or the "
             "middle button pans, "
             "the wheel zooms, Tab opens the selected group (with no group node selected it adds a node by "
             "name, as Shift+A), Escape cancels.</p>")
    return f"<table>{rows}</table>{extra}"
