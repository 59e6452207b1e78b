"""How large a card's words are drawn: Preferences > Text size and the canvas's level of detail.

A card's geometry is fixed in scene units (core.card: layouts, merges and saved positions rely
on it), its words are not: the text size preference scales them as far as a port row and a
header hold them. On screen, words smaller than ``readable_pt`` (5 pt, 6.7 px, at 100 %; twice
that at 200 %) are not drawn: below ``words_zoom`` a card shows a bigger, simplified title (its
type across a taller header, its id below) and leaves out port names and parameter lines, as
Blender's and Unreal's node editors do when zoomed out; below ``node_item.FAR`` it is a block.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from PySide6.QtGui import QFont, QFontMetricsF

from revstudio.qt import theme

TITLE_PT, BODY_PT = 9.0, 7.5           # at 100 %, in scene units (points at zoom 1)
MAX_TITLE_PT, MAX_BODY_PT = 12.0, 9.0  # what the 24 px header and a 15 px line hold
READABLE_PT = 5.0                      # the least size on screen a card's words are drawn at, at 100 %
# (5 pt is what 100 % text always drew at a project's opening zoom, 70 %: a user who reads it keeps
# the ports and parameters there; a larger text size is a user asking for larger words.)
BIG = 1.35                             # the simplified title: this much above the least readable size
LINE_GAP = 1.45                        # a line of text's height over its point size's pixels


@dataclass(frozen=True)
class CardText:
    """The fonts and thresholds of one text size."""

    title: QFont
    body: QFont
    title_metrics: QFontMetricsF
    body_metrics: QFontMetricsF
    readable_pt: float  # on screen
    words_zoom: float   # from this zoom a card draws its port names and parameter lines

    @property
    def big_pt(self) -> float:
        """The simplified title's size on screen."""
        return self.readable_pt * BIG


@functools.lru_cache(maxsize=8)
def card_text(percent: int) -> CardText:
    """The card fonts at a text size of ``percent`` % (100 to 200)."""
    scale = percent / 100
    title = QFont()
    title.setPointSizeF(min(TITLE_PT * scale, MAX_TITLE_PT))
    title.setBold(True)
    body = QFont()
    body.setPointSizeF(min(BODY_PT * scale, MAX_BODY_PT))
    readable = READABLE_PT * scale
    return CardText(title, body, QFontMetricsF(title), QFontMetricsF(body), readable,
                    readable / body.pointSizeF())


def current() -> CardText:
    """The card fonts at the application's text size."""
    return card_text(theme.text_scale())


__all__ = ["CardText", "card_text", "current"]
