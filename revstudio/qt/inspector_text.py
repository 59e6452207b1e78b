"""The Inspector's facts as rich text: a two-column table and a coloured note."""
from __future__ import annotations

import re
from html import escape

from revstudio.qt.theme import colors


def table(rows: list[tuple[str, str]]) -> str:
    muted = colors().muted
    body = "".join(
        f"<tr><td style='color:{muted}; padding:2px 12px 2px 0'>{escape(k)}</td>"
        f"<td style='padding:2px 0'>{glue_units(escape(v))}</td></tr>" for k, v in rows
    )
    return f"<table cellspacing='0'>{body}</table>"


def glue_units(text: str) -> str:
    """A number and its unit on one line ("1.4&nbsp;MiB"): a narrow panel wrapped "MiB" alone."""
    return re.sub(r"(\d) (?=(?:[KMGT]i)?B\b|[kM]\b)", r"\1&nbsp;", text)


def note(kind: str, message: str, token: str) -> str:
    color = getattr(colors(), token.lstrip("@"))
    return (f"<p style='margin-top:8px'><span style='color:{color}; font-weight:600'>{escape(kind)}</span>"
            f"<br>{escape(message)}</p>")
