"""Canvas colours: a small theme object the main window can switch (dark/light).

Items read colours from the scene's current :class:`Theme` at paint time, so a
switch repaints everything without rebuilding items. Category colours are fixed
for the v1 categories and derived from the name's hash for any other.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass, field

from PySide6.QtGui import QColor

FOCUS_FRAME = 2  # px: the frame in the hover colour that says a view (canvas, plot) has the keys

# Known catalog categories get distinct, readable hues; others are hashed.
_CATEGORY_HUES = {
    "i/o": 210, "io": 210, "input": 210, "output": 210,
    "layers": 25, "layer": 25, "conv": 25, "linear": 25, "recurrent": 330,
    "activation": 95, "activations": 95,
    "normalization": 175, "norm": 175,
    "pooling": 265, "regularization": 50,
    "structure": 285, "routing": 285, "shape": 285, "tensor": 285,
    "reversible": 140, "invertible": 140, "couplings": 160, "flow": 140, "flows": 140, "coupling": 140,
    "groups": 55, "group": 55, "graph": 55,
}


@dataclass(frozen=True)
class Theme:
    """The colours of one canvas look."""

    dark: bool
    background: QColor
    grid_minor: QColor
    grid_major: QColor
    node_body: QColor
    node_border: QColor
    node_text: QColor
    node_subtext: QColor
    selection: QColor
    hover: QColor
    error: QColor
    warning: QColor
    wire: QColor
    wire_selected: QColor
    wire_invalid: QColor
    label_bg: QColor
    label_text: QColor
    port_in: QColor
    port_out: QColor
    region_fill: QColor
    region_border: QColor
    region_text: QColor
    ok_text: QColor
    refuse_text: QColor
    _cache: dict[str, QColor] = field(default_factory=dict, compare=False, repr=False)

    def category_color(self, category: str) -> QColor:
        """The header colour of a node category."""
        color = self._cache.get(category)
        if color is None:
            key = category.lower()
            hue = _CATEGORY_HUES.get(key)
            if hue is None:
                hue = zlib.crc32(key.encode()) % 360
            if self.dark:
                color = QColor.fromHsl(hue, 110, 78)
            else:
                color = QColor.fromHsl(hue, 150, 175)
            self._cache[category] = color
        return color


def _c(text: str, alpha: int = 255) -> QColor:
    color = QColor(text)
    color.setAlpha(alpha)
    return color


DARK = Theme(
    dark=True,
    background=_c("#1e2127"), grid_minor=_c("#262a31"), grid_major=_c("#2f343d"),
    node_body=_c("#2d3139", 240), node_border=_c("#14161a"), node_text=_c("#e6e9ef"),
    node_subtext=_c("#9aa3b2"), selection=_c("#f0b429"), hover=_c("#7fb3ff"),
    error=_c("#ff5c5c"), warning=_c("#e8a33d"), wire=_c("#aab4c3"), wire_selected=_c("#f0b429"),
    wire_invalid=_c("#ff5c5c"), label_bg=_c("#15171b", 220), label_text=_c("#d6dbe4"),
    port_in=_c("#7fb3ff"), port_out=_c("#8fd694"), region_fill=_c("#3ccf91", 34),
    region_border=_c("#3ccf91", 150), region_text=_c("#7fe0b4"),
    ok_text=_c("#8fd694"), refuse_text=_c("#ff7b7b"),
)

LIGHT = Theme(
    dark=False,
    background=_c("#f4f5f7"), grid_minor=_c("#eceef1"), grid_major=_c("#e2e5ea"),
    node_body=_c("#ffffff", 245), node_border=_c("#9aa1ad"), node_text=_c("#1d2330"),
    node_subtext=_c("#5b6475"), selection=_c("#b87503"), hover=_c("#2f6fdb"),
    error=_c("#d92b2b"), warning=_c("#c27803"), wire=_c("#5f6b7c"), wire_selected=_c("#b87503"),
    wire_invalid=_c("#d92b2b"), label_bg=_c("#ffffff", 230), label_text=_c("#2a3140"),
    port_in=_c("#2f6fdb"), port_out=_c("#2e9d48"), region_fill=_c("#1f9e62", 30),
    region_border=_c("#1f9e62", 150), region_text=_c("#167a4b"),
    ok_text=_c("#1f7a38"), refuse_text=_c("#c62828"),  # hint text: 4.5:1 on label_bg (#2e9d48 was 3.5:1)
    # selection: 3:1 on the canvas and on a card (WCAG 1.4.11; #d48806 was 2.6:1 on the canvas)
)


def theme_for(dark: bool) -> Theme:
    return DARK if dark else LIGHT
